"""``seedcam-tools bench visionseed`` reports the VisionSeed send path's cost before and after (shape only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seedcam_tools.cli import main as tools_main


def test_bench_visionseed_prints_and_writes_before_after_and_their_ratio(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench.json"
    assert tools_main(["bench", "visionseed", "--frames", "20", "--passes", "2", "--json", str(out), "-q"]) == 0
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["frames"] == 20 and report["passes"] == 2
    assert set(report["results"]) == {"lane_only", "lane_2det_1text"}
    for name, row in report["results"].items():
        assert set(row) == {"before_us", "after_us", "after_to_before", "frame_bytes"}
        assert row["before_us"] > 0 and row["after_us"] > 0 and row["frame_bytes"] > 0
        assert row["after_to_before"] == pytest.approx(row["after_us"] / row["before_us"], rel=0.01)
        line = next(line for line in printed.splitlines() if line.startswith(name))
        assert f"{row['after_to_before']:.2f}" in line


def test_bench_visionseed_refuses_an_empty_run() -> None:
    assert tools_main(["bench", "visionseed", "--frames", "0"]) == 1

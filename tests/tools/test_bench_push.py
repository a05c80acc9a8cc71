"""``seedcam-tools bench push`` prints the line-rate ratio at 115200 baud and the pty throughput."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import MODELS

from seedcam_tools.cli import main as tools_main


def test_bench_push_reports_line_rate_ratio_and_pty_throughput(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "bench.json"
    argv = ["bench", "push", "--models", str(MODELS), "--uart-bytes", "40000", "--pty-pushes", "1",
            "--json", str(out), "-q"]
    assert tools_main(argv) == 0
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    ratio, mbps = report["uart"]["line_rate_ratio"], report["pty"]["data_MBps_median"]
    assert f"{ratio * 100:.1f} % of the 8N1 line rate" in printed and f"{mbps:.2f} MB/s" in printed
    # a short run on a busy machine: the first round trip weighs more than in the full benchmark (>= 90 %)
    assert 0.75 <= ratio <= 1.0
    assert mbps >= 1.0
    assert report["uart"]["results_during_push"] > 0  # results kept streaming during the push

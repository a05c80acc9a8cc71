"""``seedcam-tools bench push`` prints the line-rate ratio at 115200 baud and the pty throughput."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import MODELS

from seedcam_tools.cli import main as tools_main


def test_bench_push_reports_line_rate_ratio_and_pty_throughput(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "bench.json"
    # 120 kB at 115200 baud (~11 s): long enough that the first round trip and the slow start weigh
    # under the 10 % (the throttle is simulated, so the figure depends on scheduling only)
    argv = [
        "bench",
        "push",
        "--models",
        str(MODELS),
        "--uart-bytes",
        "120000",
        "--pty-pushes",
        "3",
        "--json",
        str(out),
        "-q",
    ]
    assert tools_main(argv) == 0
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    ratio, mbps = report["uart"]["line_rate_ratio"], report["pty"]["data_MBps_median"]
    assert f"{ratio * 100:.1f} % of the 8N1 line rate" in printed and f"{mbps:.2f} MB/s" in printed
    assert 0.90 <= ratio <= 1.0  # the figure at 115200 baud
    assert mbps > 0  # a figure, not a bar: speed on a shared machine is judged from the benchmark, not a timed test
    assert report["uart"]["results_during_push"] > 0  # results kept streaming during the push

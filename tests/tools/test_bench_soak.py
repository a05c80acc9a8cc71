"""``seedcam-tools bench soak`` on a short run: the report's shape and the accounting, not the speed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from seedcam_tools.bench_errors import BenchmarkError
from seedcam_tools.bench_soak import read_process_sample, run_soak
from seedcam_tools.cli import main as tools_main


def test_a_short_soak_reports_memory_threads_and_explains_every_loss(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    out = tmp_path / "soak.json"
    code = tools_main(["bench", "soak", "--seconds", "12", "--fps", "15", "--json", str(out), "-q"])
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["results"] > 50 and report["calls"] >= 8
    assert report["call_failures"] == 0
    assert report["rss_after_warmup_mb"] > 50  # the firmware with its models loaded
    assert report["threads_after_warmup"] >= 2 and report["threads_end"] >= 2
    assert report["unexplained_losses"] == 0
    assert report["frames_missing"] <= report["explained_by_device_drops"] + report["explained_by_host_queue"] + (
        report["explained_by_link"] + 16
    )
    assert len(report["samples"]) >= 3 and report["samples"][-1]["t_s"] >= 12
    assert ("verdict: PASS" in printed) == report["passed"] and code == (0 if report["passed"] else 1)


def test_process_samples_come_from_proc_and_a_gone_process_is_a_benchmark_error() -> None:
    here = read_process_sample(os.getpid(), 0.0)
    assert here.rss_mb > 1 and here.threads >= 1
    with pytest.raises(BenchmarkError, match="status"):
        read_process_sample(2**22 + 7, 0.0)


def test_a_soak_not_longer_than_its_warm_up_is_refused_before_anything_starts() -> None:
    with pytest.raises(BenchmarkError, match="warm-up"):
        run_soak(4.0, warmup_s=5.0)

"""``seedcam-tools bench record`` on a few seconds: the report's accounting and the read-back, not the speed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seedcam_tools.bench_record import run_record_benchmark
from seedcam_tools.cli import main as tools_main


def test_a_short_recording_bench_accounts_for_every_result_and_reads_the_file_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "record.json"
    code = tools_main(["bench", "record", "--minutes", "0.05", "--fps", "20", "--preview-fps", "5",
                       "--json", str(out), "-q"])  # fmt: skip
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    board, recording, back = report["board"], report["recording"], report["read_back"]
    assert recording["seconds"] >= 3 and recording["results"] >= 20
    assert recording["dropped"] == 0 and recording["error"] == ""
    assert 0 < recording["queue_high_water"] < recording["queue_capacity"]
    assert recording["previews"] >= 5 and back["previews"] == recording["previews"]
    assert recording["file_bytes"] > 10_000 and recording["mb_per_min"] > 0 and recording["write_kib_per_s"] > 0
    # the board made at least the results recorded (its window is a little wider), and every gap is its own drop
    assert board["frames_processed"] >= recording["results"]
    assert (
        board["last_frame_id"] - board["first_frame_id"] + 1
        == recording["results"] + report["accounting"]["ids_missing"]
    )
    assert report["accounting"]["unexplained"] == 0
    assert back == back | {"results": recording["results"], "identical": True, "truncated": False}
    assert report["passed"] and code == 0
    assert "verdict: PASS" in printed and "dropped by the recorder  0" in printed and "queue high-water" in printed


def test_bad_figures_are_refused_before_a_board_starts() -> None:
    with pytest.raises(ValueError, match="preview-fps"):
        run_record_benchmark(minutes=1, preview_fps=0)
    assert tools_main(["bench", "record", "--minutes", "0"]) == 1

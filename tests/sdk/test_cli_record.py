"""``seedcam record`` and ``seedcam monitor`` with a recording as the sensor (``replay://``)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from recording_fixtures import wire_results, write_recording

from seedcam import cli
from seedcam.recording import RecordingReader


def test_record_from_a_replay_shows_progress_and_a_summary_and_writes_the_same_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_recording(tmp_path / "source.mcap", wire_results(40))
    out = io.StringIO()
    target = tmp_path / "copy.mcap"
    code = cli.main(["record", "-p", f"replay://{source}?speed=2", "-o", str(target), "--duration", "1.6"], out)
    assert code == 0, capsys.readouterr().err
    summary = out.getvalue()
    assert summary.startswith(f"recorded {target}:") and "40 results" in summary and "0 dropped" in summary
    assert "KiB" in summary or " B " in summary
    assert f"{target}:" in capsys.readouterr().err  # the progress line
    assert [r.frame_id for r in RecordingReader(target).results()] == [r.frame_id for r in wire_results(40)]


def test_record_json_prints_progress_objects_and_a_last_done_object(tmp_path: Path) -> None:
    source = write_recording(tmp_path / "source.mcap", wire_results(30))
    out = io.StringIO()
    code = cli.main(["record", "-p", f"replay://{source}?speed=0.5", "-o", str(tmp_path / "c.mcap"), "--json",
                     "--duration", "1.5"], out)  # fmt: skip
    assert code == 0
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["event"] for line in lines][-1] == "done" and lines[0]["event"] == "progress"
    done = lines[-1]
    assert done["dropped"] == 0 and done["bytes_written"] > 1000 and 0 < done["results"] <= 30


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--duration", "0"], "--duration must be above 0"),
        (["--preview-fps", "100"], "--preview-fps must be in"),
        (["-o", "/no/such/dir/x.mcap"], "cannot create /no/such/dir/x.mcap"),
    ],
)
def test_record_refuses_bad_options_in_one_line_with_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    source = write_recording(tmp_path / "source.mcap", wire_results(5))
    base = ["record", "-p", f"replay://{source}", "-o", str(tmp_path / "x.mcap")]
    assert cli.main(base + argv, io.StringIO()) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_monitor_shows_a_replay_like_a_sensor(tmp_path: Path) -> None:
    source = write_recording(tmp_path / "source.mcap", wire_results(12))
    out = io.StringIO()
    assert cli.main(["monitor", "-p", f"replay://{source}?speed=max", "-n", "12", "--json"], out) == 0
    frames = [json.loads(line)["frame_id"] for line in out.getvalue().splitlines()]
    assert frames == list(range(100, 112))

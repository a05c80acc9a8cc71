"""The black box (issue 18): a scripted scene whose lane disappears freezes the seconds before it.

The real firmware on a pty (a scene with a lane whose lines are gone from frame 45 on, the lane
task at 15 fps, a 2 s black box written to a folder), pulled over the link with the SDK and the
``seedcam blackbox`` commands, read back with RecordingReader.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from helpers import wait_until

import seedcam
from seedcam import cli
from seedcam.errors import RpcError
from seedcam.recording import RecordingReader, topics
from seedcam.types import LaneStatus

pytestmark = pytest.mark.e2e

FPS = 15
LINES_GONE_AT = 45  # frame: 3 s in
SECONDS = 2.0

LANE_THEN_NOTHING = f"""
offset_m = 0.02
heading_rad = 0.04
curvature_per_m = 0.1
noise_sigma = 0.01

[[changes]]
at_frame = {LINES_GONE_AT}
left_style = "none"
right_style = "none"
"""


def _board(firmware_factory, tmp_path: Path):  # noqa: ANN001, ANN202
    scene = tmp_path / "scene.toml"
    scene.write_text(LANE_THEN_NOTHING)
    config = tmp_path / "fw.toml"
    config.write_text(
        f'[camera]\nsource = "synthetic"\nscene = "{scene}"\nfps = {FPS}\n\n[tasks]\nenabled = ["lane"]\n\n'
        f'[blackbox]\ndir = "{tmp_path / "bb"}"\nseconds = {SECONDS}\nthumbnail_fps = 2.0\n'
    )
    return firmware_factory("--config", str(config))


def test_the_lane_disappearing_freezes_the_seconds_before_it_and_a_host_pulls_them_as_mcap(
    firmware_factory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = _board(firmware_factory, tmp_path)
    with seedcam.open(board.link, timeout=10) as sensor:
        wait_until(lambda: any(f.trigger == "lane_lost" for f in sensor.blackbox_list()), 30, "a lane_lost file")
        (lost,) = [f for f in sensor.blackbox_list() if f.trigger == "lane_lost"]
        assert 1.5 <= lost.seconds <= SECONDS + 0.1 and lost.results >= 1.5 * FPS * 0.8
        host = sensor.blackbox_trigger("after the drive")
        assert (host.trigger, host.reason) == ("host", "after the drive") and host.name != lost.name
        assert [f.name for f in sensor.blackbox_list()] == [lost.name, host.name]  # oldest first
        with pytest.raises(RpcError) as missing:
            sensor.blackbox_pull("bb-99999-host", tmp_path / "nope.mcap")
        assert missing.value.status == "NOT_FOUND" and lost.name in str(missing.value)
        assert sensor.recv(timeout=5) is not None  # the stream went on all along
    stored = sorted(p.name for p in (tmp_path / "bb").iterdir())
    assert stored == [f"{lost.name}.seedbb", f"{host.name}.seedbb"]  # atomic: no temp file left

    out = io.StringIO()
    assert cli.main(["blackbox", "list", "-p", board.link], out) == 0
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith(lost.name) and "lane_lost" in lines[0]
    path = tmp_path / "lost.mcap"
    out = io.StringIO()
    assert cli.main(["blackbox", "pull", lost.name, "-o", str(path), "-p", board.link], out) == 0
    assert out.getvalue().startswith(f"pulled {lost.name} (lane_lost: the lane was lost at frame ")
    assert f"of {lost.size / 1024:.1f} KiB" in capsys.readouterr().err  # the progress

    reader = RecordingReader(path)
    results = reader.results()
    assert not reader.truncated and len(results) == lost.results
    assert results[-1].lane is not None and results[-1].lane.status is LaneStatus.LOST  # the trigger, last
    assert results[-1].frame_id >= LINES_GONE_AT
    before = results[:-1]
    assert before and all(r.lane is not None and r.lane.status is not LaneStatus.LOST for r in before)
    assert all(r.frame_id < LINES_GONE_AT for r in before)
    assert [r.frame_id for r in results] == sorted({r.frame_id for r in results})
    span_s = (results[-1].capture_timestamp_us - results[0].capture_timestamp_us) / 1e6
    assert 1.5 <= span_s <= SECONDS + 0.1
    counts: dict[str, int] = {}
    for message in reader.messages():
        counts[message.topic] = counts.get(message.topic, 0) + 1
    assert counts[topics.DEVICE_INFO] == 1 and counts["/seedcam/blackbox"] == 1
    assert counts[topics.HEALTH] >= 1 and 3 <= counts[topics.PREVIEW] <= 5  # thumbnails at 2 a second
    assert counts[topics.PREVIEW_IMAGE] == counts[topics.PREVIEW]
    info = reader.device_info()
    assert info is not None and info.tasks_enabled == ("lane",)

    out = io.StringIO()
    assert cli.main(["blackbox", "pull", "no-such", "-o", str(tmp_path / "x.mcap"), "-p", board.link], out) == 1
    err = capsys.readouterr().err
    assert "no black-box file 'no-such'" in err and err.count("\n") == 1 and "Traceback" not in err
    out = io.StringIO()
    assert cli.main(["blackbox", "list", "--json", "-p", board.link], out) == 0
    assert [f["trigger"] for f in json.loads(out.getvalue())] == ["lane_lost", "host"]

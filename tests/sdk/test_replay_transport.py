"""``replay://``: a recording as the device on the other end of the link, through the public SDK."""

from __future__ import annotations

import logging
import statistics
import time
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import pytest
from helpers import wait_until
from recording_fixtures import GAP_S, wire_results, write_recording

import seedcam
from seedcam.errors import LinkBroken, RpcError
from seedcam.transport import open_transport
from seedcam.transport.replay import parse_replay_url
from seedcam.types import Result


def bare(result: Result) -> Result:
    return replace(result, received_monotonic=0.0)


def collect(sensor: seedcam.Sensor, count: int, timeout: float) -> list[Result]:
    got: list[Result] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        result = sensor.recv(timeout=0.2)
        if result is not None:
            got.append(result)
    return got


def test_a_replay_is_the_recorded_sensor_same_results_same_pace(tmp_path: Path) -> None:
    sent = wire_results(60)
    path = write_recording(tmp_path / "run.mcap", sent)
    with seedcam.open(f"replay://{path}", timeout=5) as sensor:
        info = sensor.info()
        assert (info.boot_id, info.serial_number, info.board) == ("rec0b007", "SC-REC-1", "emulated-linux")
        got = collect(sensor, len(sent), 10)
        assert [bare(r) for r in got] == [bare(r) for r in sent]  # re-encoded on the wire: exactly the values
        assert got[0].lane is not None and got[0].lane.reference_forward_m == 0.3  # not its float32 copy
        gaps = [b.received_monotonic - a.received_monotonic for a, b in pairwise(got)]
        assert statistics.median(gaps) == pytest.approx(GAP_S, rel=0.1)
        assert got[-1].received_monotonic - got[0].received_monotonic == pytest.approx(59 * GAP_S, rel=0.1)
        wait_until(lambda: sensor.health is not None and sensor.health.frames_processed == 51, 5, "the last health")


def test_calls_a_recording_cannot_answer_are_unavailable_and_the_rest_are_answered(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "run.mcap", wire_results(5))
    with seedcam.open(f"replay://{path}?speed=max", timeout=5) as sensor:
        assert [m.id for m in sensor.models()] == ["lane-int8@1.0.0"]
        assert sensor.ping(b"abc") >= 0
        for call in (lambda: sensor.config_get("camera.fps"), lambda: sensor.select_tasks(["lane"]),
                     lambda: sensor.snapshot(), lambda: sensor.config_set("camera.fps", 5)):  # fmt: skip
            with pytest.raises(RpcError, match="is a recording") as refused:
                call()
            assert refused.value.status == "UNAVAILABLE"


def test_speed_max_plays_at_once(tmp_path: Path) -> None:
    sent = wire_results(30)
    path = write_recording(tmp_path / "run.mcap", sent)
    with seedcam.open(f"replay://{path}?speed=max", timeout=5, queue_size=1000) as sensor:
        t0 = time.monotonic()
        got = collect(sensor, 30, 5)
        took = time.monotonic() - t0
    assert [r.frame_id for r in got] == [r.frame_id for r in sent]
    assert took < 29 * GAP_S / 2, f"{took:.2f} s for what was recorded in {29 * GAP_S:.2f} s"


def test_loop_goes_on_with_frame_ids_and_times_moving_forward(tmp_path: Path) -> None:
    sent = wire_results(30)
    path = write_recording(tmp_path / "run.mcap", sent)
    # a finite speed: at max a looping replay outruns any consumer and the latest-wins queue drops
    with seedcam.open(f"replay://{path}?speed=8&loop=1", timeout=5, queue_size=1000) as sensor:
        got = collect(sensor, 75, 10)
    assert len(got) == 75
    ids = [r.frame_id for r in got]
    assert ids[:30] == [r.frame_id for r in sent]
    assert ids == sorted(ids) and len(set(ids)) == 75  # the second pass continues the first
    assert all(b.capture_timestamp_us > a.capture_timestamp_us for a, b in pairwise(got))
    assert [bare(r).lane for r in got[30:60]] == [r.lane for r in sent]  # the same values again


def test_the_end_of_a_replay_is_said_once_and_the_link_stays_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write_recording(tmp_path / "run.mcap", wire_results(10))
    with caplog.at_level(logging.WARNING, logger="seedcam.sensor"), seedcam.open(f"replay://{path}?speed=4") as sensor:
        assert len(collect(sensor, 10, 5)) == 10
        wait_until(lambda: "end of the recording" in caplog.text, 5, "the device's note at the end")
        assert sensor.recv(timeout=0.3) is None and sensor.connected


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("replay://", "names no recording"),
        ("replay://run.mcap?speed=0", "bad speed"),
        ("replay://run.mcap?speed=fast", "bad speed"),
        ("replay://run.mcap?loop=2", "bad loop"),
        ("replay://run.mcap?rate=2", "unknown query parameter"),
    ],
)
def test_a_bad_replay_url_is_a_value_error_naming_the_option(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        open_transport(url)


def test_a_replay_of_a_missing_or_foreign_file_cannot_be_opened(tmp_path: Path) -> None:
    with pytest.raises(LinkBroken, match="no recording at"):
        seedcam.open(f"replay://{tmp_path / 'missing.mcap'}", reconnect=False)
    text = tmp_path / "notes.mcap"
    text.write_text("not mcap")
    with pytest.raises(LinkBroken, match="not an MCAP recording"):
        seedcam.open(f"replay://{text}", reconnect=False)
    assert parse_replay_url("replay:///data/run.mcap?speed=2&loop=1") == ("/data/run.mcap", 2.0, True)

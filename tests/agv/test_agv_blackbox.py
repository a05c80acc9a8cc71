"""The AGV watchdog as a black-box trigger: once per trip, off the control loop's thread, old firmware tolerated."""

from __future__ import annotations

import logging
import queue
import threading
import time
from pathlib import Path

import pytest
from helpers import RecordingMotor, wait_until

import seedcam
from seedcam._proto import seedcam_pb2 as pb
from seedcam.agv import AgvController, ControlLoop
from seedcam.agv.blackbox_trigger import WatchdogBlackBox
from seedcam.errors import RpcError
from seedcam.protocol import codec
from seedcam.recording import RecordingWriter, topics
from seedcam.types import BlackBoxFileInfo, LaneState, LaneStatus, Result

FPS = 30


def _result(fid: int) -> Result:
    now = time.monotonic()
    lane = LaneState(LaneStatus.OK, 0.0, 0.0, 0.0, 1.0, 1.0, 0.8, 0.45)
    return Result(frame_id=fid, capture_timestamp_us=round(now * 1e6), lane=lane, frame_width=320,
                  frame_height=240, send_timestamp_us=round(now * 1e6), received_monotonic=now)  # fmt: skip


class BlackBoxQueueSensor:
    """Results pushed by the test; ``blackbox_trigger`` answers only when the test lets it (or raises ``refuse``)."""

    def __init__(self, refuse: RpcError | None = None) -> None:
        self.queue: queue.Queue[Result] = queue.Queue()
        self.reasons: list[str] = []
        self.answer = threading.Event()
        self.refuse = refuse

    def recv(self, timeout: float | None = None) -> Result | None:
        try:
            return self.queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def blackbox_trigger(self, reason: str = "", timeout: float | None = None) -> BlackBoxFileInfo:
        self.reasons.append(reason)
        if self.refuse is not None:
            raise self.refuse
        self.answer.wait(10.0)
        return BlackBoxFileInfo(f"bb-{len(self.reasons):05d}-host", "host", reason, 0, 0, 100, 3, 5, "b00t")


def _drive_then_fall_silent(sensor: BlackBoxQueueSensor, loop: ControlLoop, first_fid: int) -> None:
    """Half a second of good results (the watchdog releases), then silence until it trips."""
    trips = loop.controller.watchdog.trips
    for i in range(FPS // 2):
        sensor.queue.put(_result(first_fid + i))
        time.sleep(1 / FPS)  # the producer's frame rate, not a wait for a condition
    wait_until(lambda: loop.controller.watchdog.trips == trips + 1, 2.0, "a watchdog trip")


def test_each_watchdog_trip_freezes_the_black_box_once_and_a_slow_answer_never_holds_up_the_loop() -> None:
    sensor, motor = BlackBoxQueueSensor(), RecordingMotor()
    loop = ControlLoop(sensor, motor, AgvController(), rate_hz=50)
    runner = threading.Thread(target=loop.run, kwargs={"duration_s": 20.0})
    runner.start()
    try:
        _drive_then_fall_silent(sensor, loop, 0)
        tripped_at = time.monotonic()
        wait_until(lambda: len(sensor.reasons) == 1, 2.0, "the trigger call")
        # the sensor has not answered; the loop keeps its 50 Hz all the same
        wait_until(lambda: sum(t > tripped_at for t, _ in motor.commands) >= 15, 2.0, "commands while it waits")
        during = [t for t, _ in motor.commands if t > tripped_at]
        assert max(b - a for a, b in zip(during, during[1:], strict=False)) < 0.1
        assert all(c.speed_mps == 0.0 for t, c in motor.commands if t > tripped_at)  # and the car stays stopped
        sensor.answer.set()
        assert loop.blackbox is not None and loop.blackbox.wait_idle(5.0)
        _drive_then_fall_silent(sensor, loop, 100)
        assert loop.blackbox.wait_idle(5.0)
    finally:
        loop.request_stop()
        runner.join(5.0)
    assert loop.controller.watchdog.trips == 2
    assert len(sensor.reasons) == 2 and all("AGV watchdog" in r for r in sensor.reasons)
    assert "trip 1" in sensor.reasons[0] and "trip 2" in sensor.reasons[1]
    assert [f.name for f in loop.blackbox.frozen] == ["bb-00001-host", "bb-00002-host"]
    assert loop.blackbox.failures == 0 and loop.blackbox.unsupported == ""


def test_a_sensor_without_a_black_box_is_logged_once_and_not_asked_again(caplog: pytest.LogCaptureFixture) -> None:
    refusal = RpcError("UNSUPPORTED", pb.STATUS_UNSUPPORTED, "unknown request")
    sensor, motor = BlackBoxQueueSensor(refuse=refusal), RecordingMotor()
    loop = ControlLoop(sensor, motor, AgvController(), rate_hz=50)
    runner = threading.Thread(target=loop.run, kwargs={"duration_s": 20.0})
    caplog.set_level(logging.INFO, logger="seedcam.agv.blackbox_trigger")
    runner.start()
    try:
        _drive_then_fall_silent(sensor, loop, 0)
        assert loop.blackbox is not None and loop.blackbox.wait_idle(5.0)
        _drive_then_fall_silent(sensor, loop, 100)
        assert loop.blackbox.wait_idle(5.0)
    finally:
        loop.request_stop()
        runner.join(5.0)
    assert not runner.is_alive() and loop.controller.watchdog.trips == 2
    assert len(sensor.reasons) == 1 and "UNSUPPORTED" in loop.blackbox.unsupported and not loop.blackbox.asking
    records = [r for r in caplog.records if r.name == "seedcam.agv.blackbox_trigger"]
    assert len(records) == 1 and "not asking again" in records[0].getMessage()


def _recording(path: Path) -> Path:
    writer = RecordingWriter(path)
    info = pb.DeviceInfo(protocol_version=2, firmware_version="0.1.0", boot_id="rec0b007", max_frame_size=65536)
    writer.write(topics.DEVICE_INFO, info, 1_700_000_000 * 10**9, 0)
    for i in range(10):
        writer.write(topics.RESULT, codec.result_to_pb(_result(i)), (1_700_000_000 + i) * 10**9, i * 10**6)
    writer.close()
    return path


def test_a_replay_answers_unavailable_which_is_logged_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    recording = _recording(tmp_path / "run.mcap")
    caplog.set_level(logging.INFO, logger="seedcam.agv.blackbox_trigger")
    with seedcam.open(f"replay://{recording}?speed=max", timeout=5.0) as replay:
        trigger = WatchdogBlackBox(replay, timeout_s=2.0)
        for trip in (1, 1, 2, 3):  # the same count twice is one trip
            trigger.check(trip, 0.14)
            assert trigger.wait_idle(5.0)
        trigger.close()
    # UNAVAILABLE may pass (a live board's busy writer), so later trips still ask, without a log line at INFO
    assert "UNAVAILABLE" in trigger.unsupported and "is a recording" in trigger.unsupported
    assert trigger.refusals == 3 and trigger.asking and trigger.frozen == [] and trigger.failures == 0
    infos = [r for r in caplog.records if r.name == "seedcam.agv.blackbox_trigger" and r.levelno >= logging.INFO]
    assert len(infos) == 1


def test_a_loop_told_not_to_or_a_sensor_without_the_call_gets_no_trigger() -> None:
    assert (
        ControlLoop(BlackBoxQueueSensor(), RecordingMotor(), AgvController(), blackbox_on_watchdog=False).blackbox
        is None
    )

    class ResultsOnly:
        def recv(self, timeout: float | None = None) -> Result | None:
            return None

    assert ControlLoop(ResultsOnly(), RecordingMotor(), AgvController()).blackbox is None

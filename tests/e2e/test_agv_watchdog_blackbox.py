"""The AGV watchdog freezes the real firmware's black box: a board that stalls trips it, the file names the trip.

The real firmware on a pty (the lane task at 15 fps, a 2 s black box in a folder) drives the
AGV controller through :class:`seedcam.agv.ControlLoop`; the test stops the firmware process
(SIGSTOP) until the watchdog trips, lets it go on, and finds the file the trip froze.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest
from helpers import RecordingMotor, wait_until

import seedcam
from seedcam.agv import AgvController, ControlLoop, SensorClock

pytestmark = pytest.mark.e2e

SCENE = "offset_m = 0.02\nheading_rad = 0.02\ncurvature_per_m = 0.1\nnoise_sigma = 0.01\n"


def test_a_watchdog_trip_on_a_stalled_board_freezes_its_black_box_with_the_reason(
    firmware_factory,
    tmp_path: Path,  # noqa: ANN001
) -> None:
    scene = tmp_path / "scene.toml"
    scene.write_text(SCENE)
    config = tmp_path / "fw.toml"
    config.write_text(
        f'[camera]\nsource = "synthetic"\nscene = "{scene}"\nfps = 15\n\n[tasks]\nenabled = ["lane"]\n\n'
        f'[blackbox]\ndir = "{tmp_path / "bb"}"\nseconds = 2.0\n'
    )
    board = firmware_factory("--config", str(config))
    assert board.proc is not None
    motor = RecordingMotor()
    with seedcam.open(board.link, timeout=10) as sensor:
        loop = ControlLoop(sensor, motor, AgvController(clock=SensorClock(0.0)), rate_hz=50)
        runner = threading.Thread(target=loop.run, kwargs={"duration_s": 60.0})
        runner.start()
        try:
            wait_until(lambda: loop.controller.stats.results >= 40, 20, "the car driving for more than 2 s")
            assert any(c.reason == "lane" and c.speed_mps > 0 for _, c in motor.commands)
            assert loop.controller.watchdog.trips == 0
            os.kill(board.proc.pid, signal.SIGSTOP)
            try:
                wait_until(lambda: loop.controller.watchdog.trips >= 1, 5, "the watchdog tripping")
            finally:
                os.kill(board.proc.pid, signal.SIGCONT)
            assert loop.blackbox is not None
            wait_until(lambda: len(loop.blackbox.frozen) >= 1, 10, "the black box frozen")
        finally:
            loop.request_stop()
            runner.join(5.0)
        assert loop.blackbox.wait_idle(5.0)
        files = [f for f in sensor.blackbox_list() if f.trigger == "host"]
    bb = loop.blackbox
    assert len(bb.frozen) + bb.refusals + bb.failures == loop.controller.watchdog.trips  # one call per trip
    first = loop.blackbox.frozen[0]
    assert "AGV watchdog" in first.reason and "trip 1" in first.reason
    assert first.name in {f.name for f in files} and first.results >= 15  # the 2 s before the stall
    assert any(c.reason == "watchdog" and c.speed_mps == 0.0 for _, c in motor.commands)

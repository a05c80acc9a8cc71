"""Drive a small autonomous car (AGV) from a seedcam sensor's lane state and signs.

::

    import seedcam
    from seedcam.agv import AgvController, ControlLoop, SensorClock, SerialMotorController

    with seedcam.open("/dev/ttyACM0") as sensor, SerialMotorController("/dev/ttyUSB0") as motor:
        controller = AgvController(clock=SensorClock.calibrate(sensor))
        ControlLoop(sensor, motor, controller, rate_hz=50).run()

Parts: :class:`LaneKeeper` (PD on offset and heading, curvature feed-forward,
latency compensation), :class:`SpeedPolicy`, :class:`SignPolicy` (stop signs,
speed-limit zones, k-of-n confirmation), :class:`Watchdog`; the
:class:`Motor` interface with :class:`SerialMotorController` (a documented line
protocol). Pure Python: it runs on the same small boards as the SDK. The
closed-loop simulator that tests it drives the real firmware, so it ships with
the firmware package (``seedcam_firmware.agv_sim``, ``seedcam agv-sim``).
"""

from __future__ import annotations

from seedcam.agv.blackbox_trigger import WatchdogBlackBox
from seedcam.agv.clock import SensorClock
from seedcam.agv.config import AgvConfig, DriveCommand
from seedcam.agv.controller import AgvController, ControllerStats
from seedcam.agv.lane_keeper import LaneEstimate, LaneKeeper, MotionHistory, predict_lane
from seedcam.agv.loop import ControlLoop, ResultSource
from seedcam.agv.motor import Motor
from seedcam.agv.serial_motor import SerialMotorController, Telemetry
from seedcam.agv.signs import SignEvent, SignPolicy, sign_distance
from seedcam.agv.speed import SpeedPolicy
from seedcam.agv.watchdog import Watchdog

__all__ = [
    "AgvConfig",
    "AgvController",
    "ControlLoop",
    "ControllerStats",
    "DriveCommand",
    "LaneEstimate",
    "LaneKeeper",
    "Motor",
    "MotionHistory",
    "ResultSource",
    "SensorClock",
    "SerialMotorController",
    "SignEvent",
    "SignPolicy",
    "SpeedPolicy",
    "Telemetry",
    "Watchdog",
    "WatchdogBlackBox",
    "predict_lane",
    "sign_distance",
]

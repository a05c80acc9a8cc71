"""The control loop: results in, drive commands out, at a fixed rate and on the watchdog's deadline."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from seedcam.agv.blackbox_trigger import WatchdogBlackBox, for_sensor
from seedcam.agv.config import DriveCommand
from seedcam.agv.controller import AgvController
from seedcam.agv.motor import Motor
from seedcam.types import Result

__all__ = ["ControlLoop", "ResultSource"]

log = logging.getLogger(__name__)


class ResultSource(Protocol):
    """Anything with :meth:`seedcam.Sensor.recv`."""

    def recv(self, timeout: float | None = None) -> Result | None: ...


class ControlLoop:
    """Runs a controller against a sensor and a motor (Donkeycar-style parts, no shared memory dict).

    Every tick (``rate_hz``) and on every arriving result the controller decides
    and the motor gets the command; between ticks the loop waits for results,
    but never past the watchdog's deadline, so a silent link stops the car on
    time whatever the rate.

    When the sensor has a black box (:meth:`seedcam.Sensor.blackbox_trigger`), each
    watchdog trip asks it to freeze the seconds before the trip, once per trip, from a
    thread of its own (:class:`~seedcam.agv.blackbox_trigger.WatchdogBlackBox`); a
    sensor without one is logged once and left alone.

    Args:
        sensor: where results come from (a :class:`seedcam.Sensor`).
        motor: where commands go.
        controller: the decision maker.
        rate_hz: ticks per second.
        max_loops: stop after this many ticks (None: until :meth:`request_stop`).
        on_command: called with ``(now, command)`` after each command is sent (logging, tests).
        blackbox_on_watchdog: freeze the sensor's black box on each watchdog trip.

    Attributes:
        blackbox: the watchdog's black-box trigger (None: off, or the sensor has no black box).
    """

    def __init__(
        self,
        sensor: ResultSource,
        motor: Motor,
        controller: AgvController,
        *,
        rate_hz: float = 50.0,
        max_loops: int | None = None,
        on_command: Callable[[float, DriveCommand], None] | None = None,
        blackbox_on_watchdog: bool = True,
    ) -> None:
        if rate_hz <= 0:
            raise ValueError("rate_hz must be > 0")
        self.sensor = sensor
        self.motor = motor
        self.controller = controller
        self.rate_hz = rate_hz
        self.max_loops = max_loops
        self.on_command = on_command
        self.loops = 0
        self.blackbox: WatchdogBlackBox | None = for_sensor(sensor) if blackbox_on_watchdog else None
        self._stop = threading.Event()

    def request_stop(self) -> None:
        """Make :meth:`run` return after its current wait (thread-safe)."""
        self._stop.set()

    def run(self, duration_s: float | None = None) -> int:
        """Run until stopped, ``max_loops`` ticks or ``duration_s`` seconds; the motor is stopped on the way out.

        Returns:
            The number of ticks run.

        Raises:
            SensorError: the sensor's link is down for good, or the motor failed
                (the motor gets a best-effort stop first).
        """
        period = 1.0 / self.rate_hz
        start = time.monotonic()
        next_tick = start
        end = start + duration_s if duration_s is not None else float("inf")
        try:
            while not self._stop.is_set() and (self.max_loops is None or self.loops < self.max_loops):
                now = time.monotonic()
                if now >= end:
                    break
                wake = min(next_tick, self.controller.deadline(), end)
                result = self.sensor.recv(timeout=max(0.0, wake - now))
                now = time.monotonic()
                if result is not None:
                    self.controller.on_result(result, now)
                if now >= next_tick:
                    self.loops += 1
                    next_tick = max(next_tick + period, now)
                self._drive(now)
        finally:
            self._safe_stop()
            if self.blackbox is not None:
                self.blackbox.close()
        return self.loops

    def _drive(self, now: float) -> None:
        command = self.controller.step(now, self.motor.odometer_m(), self.motor.speed_mps())
        self.motor.drive(command)
        if self.on_command is not None:
            self.on_command(now, command)
        if self.blackbox is not None:  # a queue put at most: the call runs on the trigger's thread
            self.blackbox.check(self.controller.watchdog.trips, self.controller.config.watchdog_timeout_s)

    def _safe_stop(self) -> None:
        try:
            self.motor.stop()
        except Exception:  # the stop is best effort; the original error (if any) matters more
            log.exception("could not stop the motor")

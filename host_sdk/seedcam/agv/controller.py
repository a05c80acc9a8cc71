"""The AGV controller: lane keeper, speed policy, sign policy and watchdog, combined into drive commands."""

from __future__ import annotations

import math
from dataclasses import dataclass

from seedcam.agv.clock import SensorClock
from seedcam.agv.config import AgvConfig, DriveCommand
from seedcam.agv.lane_keeper import LaneKeeper, MotionHistory
from seedcam.agv.signs import SignEvent, SignPolicy
from seedcam.agv.speed import SpeedPolicy
from seedcam.agv.watchdog import Watchdog
from seedcam.types import LaneState, Result

__all__ = ["AgvController", "ControllerStats"]


@dataclass(frozen=True)
class ControllerStats:
    """Counters of a controller."""

    results: int
    stale_results: int  #: older than ``max_result_age_s`` on arrival
    lane_unusable: int  #: results whose lane was lost or unsure
    watchdog_trips: int
    coast_stops: int  #: lane lost long enough to stop the car
    mean_age_s: float  #: mean capture-to-arrival age of the results


@dataclass
class _Counts:
    """The running counters behind :class:`ControllerStats`."""

    results: int = 0
    stale: int = 0
    unusable: int = 0
    coast_stops: int = 0
    age_sum_s: float = 0.0


class AgvController:
    """Decides speed and steering from sensor results.

    Feed every result with :meth:`on_result` and call :meth:`step` at the loop's
    rate and at :meth:`deadline` (when the watchdog would trip); :meth:`step`
    returns the command to send to the motor.

    Args:
        config: tuning; defaults suit a 1:10 car with the sensor over the front axle.
        clock: maps sensor timestamps to host time (default: the host's own clock,
            right for the emulated board; use :meth:`SensorClock.calibrate` on a car).
    """

    def __init__(self, config: AgvConfig | None = None, clock: SensorClock | None = None) -> None:
        self.config = config or AgvConfig()
        self.clock = clock or SensorClock(0.0)
        self.lane_keeper = LaneKeeper(self.config)
        self.speed_policy = SpeedPolicy(self.config)
        self.signs = SignPolicy(self.config)
        self.watchdog = Watchdog(self.config.watchdog_timeout_s, self.config.watchdog_good_frames)
        self.history = MotionHistory()
        self.odometer_m = 0.0
        self.last_command = DriveCommand(0.0, 0.0, "start")
        self._last_step: float | None = None
        self._speed = 0.0  #: measured (or, without a measurement, commanded) speed
        self._lane: LaneState | None = None
        self._lane_usable = False
        self._lost_at_odo: float | None = None
        self._counts = _Counts()

    @property
    def events(self) -> list[SignEvent]:
        """What the sign policy decided so far."""
        return self.signs.events

    @property
    def stats(self) -> ControllerStats:
        """A snapshot of the counters."""
        c = self._counts
        return ControllerStats(
            results=c.results,
            stale_results=c.stale,
            lane_unusable=c.unusable,
            watchdog_trips=self.watchdog.trips,
            coast_stops=c.coast_stops,
            mean_age_s=c.age_sum_s / c.results if c.results else math.nan,
        )

    def deadline(self) -> float:
        """The latest instant :meth:`step` must run next (the watchdog's deadline)."""
        return self.watchdog.deadline()

    def on_result(self, result: Result, now: float) -> None:
        """Take a result that arrived at host instant ``now``."""
        cfg = self.config
        self.clock.observe(result)
        captured = self.clock.capture_time(result)
        age = max(0.0, now - captured)
        self._counts.results += 1
        self._counts.age_sum_s += age
        fresh = age <= cfg.max_result_age_s
        if not fresh:
            self._counts.stale += 1
        usable = self.lane_keeper.usable(result.lane)
        if fresh:
            self._lane = result.lane
            self._lane_usable = usable
            if usable:
                assert result.lane is not None
                self.lane_keeper.observe(result.lane, captured)
            else:
                self._counts.unusable += 1
        self.watchdog.feed(now, fresh, usable)
        odo_now = self._odometer_at(now)
        odo_capture = odo_now - self.history.distance(captured, now)
        self.signs.observe(result, odo_capture, now, odo_now)

    def _odometer_at(self, now: float) -> float:
        if self._last_step is None:
            return self.odometer_m
        return self.odometer_m + max(0.0, now - self._last_step) * self._speed

    def step(self, now: float, odometer_m: float | None = None, speed_mps: float | None = None) -> DriveCommand:
        """The command for instant ``now``.

        Args:
            now: host monotonic time.
            odometer_m: the motor's odometer, when it has one (else the controller integrates its commands).
            speed_mps: the motor's measured speed, when it has one.
        """
        cfg = self.config
        dt = 0.0 if self._last_step is None else max(0.0, now - self._last_step)
        self.odometer_m = odometer_m if odometer_m is not None else self._odometer_at(now)
        previous = self.last_command
        command = self._decide(now)
        # accelerate gently; braking is left to the motor controller
        if command.speed_mps > previous.speed_mps:
            speed = min(command.speed_mps, previous.speed_mps + cfg.accel_mps2 * max(dt, 0.0))
            command = DriveCommand(speed, command.steering_rad, command.reason)
        self._speed = speed_mps if speed_mps is not None else command.speed_mps
        self.history.record(now, self._speed, command.steering_rad)
        self._last_step = now
        self.last_command = command
        return command

    def _decide(self, now: float) -> DriveCommand:
        cfg = self.config
        steering = self.last_command.steering_rad
        if self.watchdog.tripped(now):
            return DriveCommand(0.0, steering, "watchdog")
        estimate = self.lane_keeper.current(now, self.history)
        if estimate is None:
            return DriveCommand(0.0, 0.0, "no_lane")
        steering = self.lane_keeper.steer(estimate, self._speed)
        if not self._lane_usable:  # the sensor is alive but sees no lane: coast on the prediction, then stop
            if self._lost_at_odo is None:
                self._lost_at_odo = self.odometer_m
            remaining = cfg.coast_distance_m - (self.odometer_m - self._lost_at_odo)
            speed = min(cfg.coast_speed_mps, math.sqrt(max(0.0, cfg.decel_mps2 * remaining)))
            if speed < 0.05:
                if self.last_command.reason != "lane_lost":
                    self._counts.coast_stops += 1
                return DriveCommand(0.0, steering, "lane_lost")
            return DriveCommand(speed, steering, "coast")
        self._lost_at_odo = None
        speed = self.speed_policy.target(estimate, self._lane)
        reason = "lane"
        cap, why = self.signs.limit(now, self.odometer_m, self._speed)
        if cap < speed:
            speed, reason = cap, why
        return DriveCommand(speed, steering, reason)

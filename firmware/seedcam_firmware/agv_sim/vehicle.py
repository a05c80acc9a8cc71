"""The simulated car: a kinematic bicycle with a lagging, rate-limited steering servo and drive motor."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

from seedcam.agv.config import DriveCommand
from seedcam.agv.motor import Motor

__all__ = ["BicycleModel", "SimulatedMotor", "VehicleParams", "VehicleState"]


@dataclass(frozen=True)
class VehicleParams:
    """A 1:10 car. The camera (the lane reference point) sits above the front axle.

    Attributes:
        wheelbase_m: rear axle to front axle.
        half_width_m: half the track width of the wheels (for lane departures).
        max_steering_rad: steering range.
        steering_rate_rad_s: servo slew rate.
        steering_tau_s: servo first-order lag.
        speed_tau_s: drive first-order lag.
        max_accel_mps2, max_decel_mps2: drive limits.
    """

    wheelbase_m: float = 0.15
    half_width_m: float = 0.09
    max_steering_rad: float = 0.5
    steering_rate_rad_s: float = 5.0
    steering_tau_s: float = 0.04
    speed_tau_s: float = 0.12
    max_accel_mps2: float = 1.5
    max_decel_mps2: float = 2.0


@dataclass(frozen=True)
class VehicleState:
    """Pose of the rear axle's centre, speed, steering and odometer."""

    x: float
    y: float
    yaw: float
    speed_mps: float
    steering_rad: float
    odometer_m: float

    def front(self, wheelbase_m: float) -> tuple[float, float]:
        """The front axle's centre (the camera's floor point)."""
        return self.x + wheelbase_m * math.cos(self.yaw), self.y + wheelbase_m * math.sin(self.yaw)


class BicycleModel:
    """Integrates the car's motion; thread-safe (the physics thread steps it, the controller commands it).

    Args:
        params: the car.
        x, y, yaw: the rear axle's start pose.
    """

    def __init__(self, params: VehicleParams, x: float = 0.0, y: float = 0.0, yaw: float = 0.0) -> None:
        self.params = params
        self._lock = threading.Lock()
        self._state = VehicleState(x, y, yaw, 0.0, 0.0, 0.0)
        self._command = DriveCommand(0.0, 0.0, "start")

    @property
    def state(self) -> VehicleState:
        """The current state."""
        with self._lock:
            return self._state

    def command(self, command: DriveCommand) -> None:
        """Set the target speed and steering angle."""
        with self._lock:
            self._command = command

    def step(self, dt: float) -> VehicleState:
        """Advance ``dt`` seconds (sub-stepped at 2 ms); returns the new state."""
        p = self.params
        with self._lock:
            st, cmd = self._state, self._command
        x, y, yaw, v, delta, odo = st.x, st.y, st.yaw, st.speed_mps, st.steering_rad, st.odometer_m
        target_delta = max(-p.max_steering_rad, min(p.max_steering_rad, cmd.steering_rad))
        n = max(1, math.ceil(dt / 0.002))
        h = dt / n
        for _ in range(n):
            rate = (target_delta - delta) / p.steering_tau_s
            rate = max(-p.steering_rate_rad_s, min(p.steering_rate_rad_s, rate))
            delta += rate * h
            accel = (cmd.speed_mps - v) / p.speed_tau_s
            accel = max(-p.max_decel_mps2, min(p.max_accel_mps2, accel))
            v_new = v + accel * h
            if cmd.speed_mps == 0.0 and (v * v_new <= 0.0 or abs(v_new) < 1e-3):
                v_new = 0.0  # braking holds the car
            v = v_new
            yaw += v * math.tan(delta) / p.wheelbase_m * h
            x += v * math.cos(yaw) * h
            y += v * math.sin(yaw) * h
            odo += abs(v) * h
        state = VehicleState(x, y, yaw, v, delta, odo)
        with self._lock:
            self._state = state
        return state


class SimulatedMotor(Motor):
    """The :class:`Motor` of a simulated car: commands go to the model; wheel odometry comes back.

    Args:
        model: the car.
    """

    def __init__(self, model: BicycleModel) -> None:
        self.model = model
        self.commands: list[tuple[float, DriveCommand]] = []  #: (host monotonic time, command), in order
        self._closed = False

    def drive(self, command: DriveCommand) -> None:
        """Command the simulated car."""
        self.commands.append((time.monotonic(), command))
        self.model.command(command)

    def odometer_m(self) -> float:
        """Wheel odometry of the simulated car."""
        return self.model.state.odometer_m

    def speed_mps(self) -> float:
        """Wheel speed of the simulated car."""
        return self.model.state.speed_mps

    def close(self) -> None:
        """Stop the car. Idempotent."""
        if not self._closed:
            self._closed = True
            self.model.command(DriveCommand(0.0, 0.0, "stop"))

"""Lane keeping: steer from the sensor's metric lane state, compensating the result's age.

The camera sits above the front axle, so the lane state is the front axle's:
offset ``e`` (left +), heading ``psi`` of the body against the lane tangent
(left +) and lane curvature ``kappa`` (bends left +). For a kinematic bicycle
with wheelbase ``L``, rear-axle speed ``v`` and front-wheel angle ``delta``::

    de/dt   = v / cos(delta) * sin(psi + delta)
    dpsi/dt = v * tan(delta) / L - kappa * v / cos(delta) * cos(psi + delta)

On a circle of curvature ``kappa`` the front axle stays on the centre line with
``delta_ff = asin(L * kappa)`` and ``psi = -delta_ff``. The steering law is a
PD on offset and heading around that feed-forward::

    delta = delta_ff + k_heading * (-delta_ff - psi) - atan(k_offset * e / (v + v_soft))

(with ``k_heading = 1`` this is Stanley's front-axle law). The feed-forward is
used only while the curvature confidence is high. Before steering, the lane
state is predicted from its capture instant to now with the motion the car
made meanwhile (:class:`MotionHistory`), which removes the effect of the
sensor's and the link's latency.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from seedcam.agv.config import AgvConfig
from seedcam.types import LaneState

__all__ = ["LaneEstimate", "LaneKeeper", "MotionHistory", "predict_lane"]

_PREDICT_STEP_S = 0.01


@dataclass(frozen=True)
class LaneEstimate:
    """A lane state at a host instant.

    Attributes:
        time: host monotonic instant the state holds for.
        offset_m, heading_rad, curvature_per_m: as in :class:`seedcam.LaneState`.
        use_curvature: the curvature is trusted (feed-forward on).
    """

    time: float
    offset_m: float
    heading_rad: float
    curvature_per_m: float
    use_curvature: bool


class MotionHistory:
    """What the car did recently: piecewise-constant (speed, steering) from each recorded instant.

    Args:
        horizon_s: how far back to keep records.
    """

    def __init__(self, horizon_s: float = 2.0) -> None:
        self.horizon_s = horizon_s
        self._times: list[float] = []
        self._values: list[tuple[float, float]] = []

    def record(self, time: float, speed_mps: float, steering_rad: float) -> None:
        """From ``time`` on, the car moves at ``speed_mps`` with ``steering_rad``."""
        if self._times and time < self._times[-1]:
            raise ValueError("motion records must come in time order")
        self._times.append(time)
        self._values.append((speed_mps, steering_rad))
        cut = bisect.bisect_left(self._times, time - self.horizon_s) - 1
        if cut > 0:
            del self._times[:cut]
            del self._values[:cut]

    def segments(self, start: float, end: float) -> list[tuple[float, float, float]]:
        """The motion between ``start`` and ``end`` as ``(duration, speed, steering)`` pieces.

        Time before the first record counts as standing still.
        """
        if end <= start:
            return []
        out: list[tuple[float, float, float]] = []
        i = bisect.bisect_right(self._times, start) - 1
        t = start
        while t < end:
            nxt = self._times[i + 1] if i + 1 < len(self._times) else end
            stop = min(nxt, end)
            speed, steering = self._values[i] if i >= 0 else (0.0, 0.0)
            if stop > t:
                out.append((stop - t, speed, steering))
            t = stop
            i += 1
        return out

    def distance(self, start: float, end: float) -> float:
        """Metres travelled between ``start`` and ``end`` (rear-axle speed)."""
        return sum(dt * v for dt, v, _ in self.segments(start, end))


def predict_lane(
    offset_m: float,
    heading_rad: float,
    curvature_per_m: float,
    segments: list[tuple[float, float, float]],
    wheelbase_m: float,
) -> tuple[float, float]:
    """Advance the front axle's (offset, heading) through ``segments`` of (duration, speed, steering)."""
    e, psi = offset_m, heading_rad
    for duration, v, delta in segments:
        n = max(1, math.ceil(duration / _PREDICT_STEP_S))
        dt = duration / n
        vf = v / max(math.cos(delta), 0.2)
        yaw_rate = v * math.tan(delta) / wheelbase_m
        for _ in range(n):
            e += vf * math.sin(psi + delta) * dt
            psi += (yaw_rate - curvature_per_m * vf * math.cos(psi + delta)) * dt
    return e, psi


class LaneKeeper:
    """Turns lane states into a steering angle (see the module docstring).

    Args:
        config: the controller settings.
    """

    def __init__(self, config: AgvConfig) -> None:
        self.config = config
        self.estimate: LaneEstimate | None = None  #: the latest trusted lane state

    def usable(self, lane: LaneState | None) -> bool:
        """The lane state is good enough to steer on."""
        return (
            lane is not None
            and lane.status.value in ("ok", "one_line")
            and lane.offset_confidence >= self.config.min_offset_confidence
            and all(math.isfinite(v) for v in (lane.offset_m, lane.heading_rad, lane.curvature_per_m))
        )

    def observe(self, lane: LaneState, capture_time: float) -> None:
        """Take a usable lane state captured at host instant ``capture_time``."""
        self.estimate = LaneEstimate(
            time=capture_time,
            offset_m=lane.offset_m,
            heading_rad=lane.heading_rad,
            curvature_per_m=lane.curvature_per_m,
            use_curvature=lane.curvature_confidence >= self.config.ff_min_confidence,
        )

    def current(self, now: float, history: MotionHistory) -> LaneEstimate | None:
        """The latest estimate predicted forward to ``now`` with the car's recorded motion."""
        est = self.estimate
        if est is None:
            return None
        kappa = est.curvature_per_m if est.use_curvature else 0.0
        motion = history.segments(est.time, now) if self.config.compensate_latency else []
        e, psi = predict_lane(est.offset_m, est.heading_rad, kappa, motion, self.config.wheelbase_m)
        return LaneEstimate(now, e, psi, est.curvature_per_m, est.use_curvature)

    def feed_forward(self, curvature_per_m: float) -> float:
        """Front-wheel angle that keeps the front axle on a circle of this curvature."""
        x = max(-0.95, min(0.95, self.config.wheelbase_m * curvature_per_m))
        return math.asin(x)

    def steer(self, estimate: LaneEstimate, speed_mps: float) -> float:
        """The front-wheel angle for ``estimate`` at ``speed_mps`` (clamped to the steering range)."""
        cfg = self.config
        ff = self.feed_forward(estimate.curvature_per_m) if estimate.use_curvature else 0.0
        delta = (
            ff
            + cfg.k_heading * (-ff - estimate.heading_rad)
            - math.atan(cfg.k_offset * estimate.offset_m / (max(speed_mps, 0.0) + cfg.soft_speed_mps))
        )
        return max(-cfg.max_steering_rad, min(cfg.max_steering_rad, delta))

"""A smooth, deterministic synthetic drive: a stream of :class:`SceneSpec`."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .geometry import centerline_point, lane_to_car
from .random_scene import RANGES, random_scene
from .types import OBJECT_KINDS, SceneObject, SceneSpec

__all__ = ["SyntheticDrive"]


class _Wander:
    """A smooth signal in [-amp, amp]: a sum of seeded sinusoids."""

    def __init__(self, rng: np.random.Generator, amp: float, period_s: tuple[float, float]) -> None:
        self.freq = 2 * math.pi / rng.uniform(*period_s, size=3)
        self.phase = rng.uniform(0, 2 * math.pi, size=3)
        self.weight = rng.uniform(0.5, 1.0, size=3)
        self.amp = amp / float(self.weight.sum())

    def __call__(self, t: float) -> float:
        return float(self.amp * np.sum(self.weight * np.sin(self.freq * t + self.phase)))


class SyntheticDrive:
    """Drive along a lane whose pose wanders smoothly through the random-scene ranges.

    Deterministic given ``seed``: the same seed and the same sequence of ``dt_s``
    produce the same specs. The look (floor, line style, lighting) is fixed per
    drive, with a slowly varying gain; signs and plates appear ahead every few
    metres and pass by as the car moves at ``speed_mps``.
    """

    def __init__(self, seed: int = 0, *, speed_mps: float = 0.4) -> None:
        self._rng = np.random.default_rng(seed)
        base = random_scene(self._rng)
        self._base = replace(
            base,
            left_style="solid" if base.left_style == "none" else base.left_style,
            right_style="solid" if base.right_style == "none" else base.right_style,
            left_contrast=max(base.left_contrast, 0.5),
            right_contrast=max(base.right_contrast, 0.5),
            objects=(),
            motion_blur_px=0.0,
        )
        self._offset = _Wander(self._rng, 0.9 * RANGES["offset_m"], (6.0, 20.0))
        self._heading = _Wander(self._rng, 0.8 * RANGES["heading_rad"], (4.0, 12.0))
        self._kappa = _Wander(self._rng, 0.8 * RANGES["curvature_per_m"], (8.0, 25.0))
        self._gain = _Wander(self._rng, 0.15, (10.0, 30.0))
        self._speed = speed_mps
        self._t = 0.0
        self._travelled = 0.0
        self._next_object_at = float(self._rng.uniform(0.5, 2.0))
        self._objects: list[tuple[float, float, str, str]] = []  # (arc position along the drive, lateral, kind, text)
        self._frame = 0

    @property
    def time_s(self) -> float:
        """Simulated time since the start of the drive."""
        return self._t

    def step(self, dt_s: float) -> SceneSpec:
        """Advance by ``dt_s`` seconds and return the scene at the new time."""
        if dt_s < 0:
            raise ValueError("dt_s must be >= 0")
        self._t += dt_s
        self._travelled += dt_s * self._speed
        self._frame += 1
        t = self._t
        offset, heading, kappa = self._offset(t), self._heading(t), self._kappa(t)
        width = self._base.lane_width_m
        while self._travelled + 3.0 > self._next_object_at:  # spawn objects 3 m ahead
            kind = OBJECT_KINDS[int(self._rng.integers(len(OBJECT_KINDS)))]
            text = (
                f"AGV-{int(self._rng.integers(1000)):03d}"
                if kind == "plate"
                else ("30" if kind == "speed_limit" else "")
            )
            side = 1.0 if self._rng.random() < 0.5 else -1.0
            self._objects.append((self._next_object_at, side * (width / 2 + 0.15), kind, text))
            self._next_object_at += float(self._rng.uniform(2.0, 5.0))
        self._objects = [o for o in self._objects if o[0] - self._travelled > 0.2]
        objects = []
        for pos, lat, kind, text in self._objects:
            arc = pos - self._travelled
            if abs(kappa) > 1e-6 and arc * abs(kappa) > 1.2:
                continue
            xl, yl = centerline_point(arc, lat, kappa)
            x, y = lane_to_car(np.float64(xl), np.float64(yl), offset, heading)
            if x > 0.2:
                objects.append(SceneObject(kind, float(x), float(y), text))
        return replace(
            self._base,
            offset_m=offset,
            heading_rad=heading,
            curvature_per_m=kappa,
            dash_phase_m=(self._base.dash_phase_m + self._travelled) % 1.0,
            gain=float(np.clip(self._base.gain + self._gain(t), 0.5, 1.6)),
            noise_seed=(self._base.noise_seed + self._frame) % (2**31),
            objects=tuple(objects),
        )

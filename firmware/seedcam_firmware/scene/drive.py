"""A smooth, deterministic synthetic drive: a stream of :class:`SceneSpec`."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from .geometry import centerline_point, lane_to_car
from .random_scene import RANGES, random_scene
from .types import OBJECT_KINDS, SceneObject, SceneSpec

__all__ = ["ROADSIDE_GAP_M", "SIGN_KINDS", "SyntheticDrive"]

#: the kinds of roadside sign the drive passes (every object kind but the plate)
SIGN_KINDS: tuple[str, ...] = tuple(k for k in OBJECT_KINDS if k != "plate")
#: distance along the drive between one roadside object and the next (metres, drawn uniformly):
#: 2.5..4.5 s apart at the default 0.4 m/s
ROADSIDE_GAP_M = (1.0, 1.8)
#: the first object stands this far ahead (metres), in view from the first frame
_FIRST_AT_M = (1.0, 1.4)
#: objects enter the scene this far ahead of the car along the lane (metres) ...
_SPAWN_AHEAD_M = 3.0
#: ... and leave it this close to the car (nearer, they are out of the camera's view)
_PASSED_M = 0.2
#: the largest turn of an object's face (radians): the detector is trained on faces turned up to 0.9 rad
_MAX_YAW_RAD = 0.7
#: the sharpest defocus blur of the drive's look (pixels): blurrier plates cannot be read
_MAX_DEFOCUS_PX = 0.6


@dataclass(frozen=True)
class _Roadside:
    """A sign or plate standing beside the lane, in the lane frame of the drive.

    Attributes:
        arc_m: where it stands along the drive (metres travelled from the start).
        lateral_m: its distance from the lane centre line, positive to the LEFT.
        kind: one of :data:`OBJECT_KINDS`.
        text: a plate's text or a speed limit's number, else ``""``.
        turn_rad: how far its face is turned away from facing along the lane.
    """

    arc_m: float
    lateral_m: float
    kind: str
    text: str
    turn_rad: float


def _roadside(rng: np.random.Generator, lane_width_m: float) -> Iterator[_Roadside]:
    """The drive's roadside objects, nearest first and without end: a sign, a plate, a sign, a plate...

    Signs stand 6..14 cm beyond a boundary line; plates stand nearer the line
    (3..8 cm beyond it), as they are read only from up close. Either side.
    """
    arc = float(rng.uniform(*_FIRST_AT_M))
    signs: list[str] = []  # a shuffled deck of the sign kinds: every kind comes by within six signs
    for index in itertools.count():
        side = 1.0 if rng.random() < 0.5 else -1.0
        if index % 2:
            kind, text = "plate", f"AGV-{int(rng.integers(1000)):03d}"
            beyond = float(rng.uniform(0.03, 0.08))
        else:
            if not signs:
                signs = [SIGN_KINDS[int(i)] for i in rng.permutation(len(SIGN_KINDS))]
            kind = signs.pop()
            text = str(int(rng.choice([10, 20, 30, 50]))) if kind == "speed_limit" else ""
            beyond = float(rng.uniform(0.06, 0.14))
        turn = float(rng.uniform(-0.15, 0.15))
        yield _Roadside(arc, side * (lane_width_m / 2 + beyond), kind, text, turn)
        arc += float(rng.uniform(*ROADSIDE_GAP_M))


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
    drive, with a slowly varying gain. Beside the lane stand a sign, then a
    plate (text like ``AGV-042``), then a sign ... one every
    :data:`ROADSIDE_GAP_M` metres (a few seconds apart at the default speed),
    the first in view from the first frame; each faces along the lane and
    passes by as the car moves at ``speed_mps``. Signs are seen from about
    1.7 m and plates read within about 0.6 m (by the shipped detector and OCR).
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
            defocus_sigma_px=min(base.defocus_sigma_px, _MAX_DEFOCUS_PX),
        )
        self._offset = _Wander(self._rng, 0.9 * RANGES["offset_m"], (6.0, 20.0))
        self._heading = _Wander(self._rng, 0.8 * RANGES["heading_rad"], (4.0, 12.0))
        self._kappa = _Wander(self._rng, 0.8 * RANGES["curvature_per_m"], (8.0, 25.0))
        self._gain = _Wander(self._rng, 0.15, (10.0, 30.0))
        self._speed = speed_mps
        self._t = 0.0
        self._travelled = 0.0
        # a stream of its own: the roadside does not shift the pose or the look of a seed's drive
        self._coming = _roadside(np.random.default_rng((seed, 0x516E)), self._base.lane_width_m)
        self._next = next(self._coming)
        self._objects: list[_Roadside] = []  # in the scene now, nearest first
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
        while self._next.arc_m < self._travelled + _SPAWN_AHEAD_M:
            self._objects.append(self._next)
            self._next = next(self._coming)
        self._objects = [o for o in self._objects if o.arc_m - self._travelled > _PASSED_M]
        return replace(
            self._base,
            offset_m=offset,
            heading_rad=heading,
            curvature_per_m=kappa,
            dash_phase_m=(self._base.dash_phase_m + self._travelled) % 1.0,
            gain=float(np.clip(self._base.gain + self._gain(t), 0.5, 1.6)),
            noise_seed=(self._base.noise_seed + self._frame) % (2**31),
            objects=self._in_view(offset, heading, kappa),
        )

    def _in_view(self, offset: float, heading: float, kappa: float) -> tuple[SceneObject, ...]:
        """The roadside objects ahead, in the car frame of the current pose."""
        objects = []
        for o in self._objects:
            arc = o.arc_m - self._travelled
            if abs(kappa) > 1e-6 and arc * abs(kappa) > 1.2:  # round the bend, out of sight
                continue
            xl, yl = centerline_point(arc, o.lateral_m, kappa)
            x, y = lane_to_car(np.float64(xl), np.float64(yl), offset, heading)
            if x > _PASSED_M:
                # square to the lane where it stands (its tangent turned by kappa * arc), seen from the yawed car
                yaw = float(np.clip(kappa * arc - heading + o.turn_rad, -_MAX_YAW_RAD, _MAX_YAW_RAD))
                objects.append(SceneObject(o.kind, float(x), float(y), o.text, yaw))
        return tuple(objects)

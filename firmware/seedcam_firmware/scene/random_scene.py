"""Random scenes for training and evaluation (a pure function of the generator state)."""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from .geometry import centerline_point, lane_to_car
from .types import OBJECT_KINDS, SceneObject, SceneSpec

__all__ = ["RANGES", "random_objects", "random_scene"]


class Ranges(TypedDict):
    """Ranges of the random scene's pose and lane (see :data:`RANGES`)."""

    offset_m: float
    heading_rad: float
    curvature_per_m: float
    lane_width_m: tuple[float, float]


#: sampling ranges of the lane pose (symmetric: +-value) and the lane width
RANGES: Ranges = {"offset_m": 0.15, "heading_rad": 0.30, "curvature_per_m": 1.0, "lane_width_m": (0.40, 0.50)}

#: probability that a random scene has exactly one / no visible line
P_ONE_LINE = 0.12
P_LOST = 0.04

_LINE_COLOURS = ((0.95, 0.95, 0.95), (0.9, 0.92, 0.88), (0.15, 0.8, 0.95), (0.2, 0.75, 0.9))
_FLOORS = (
    (0.35, 0.35, 0.37),
    (0.25, 0.25, 0.26),
    (0.42, 0.45, 0.5),
    (0.3, 0.38, 0.45),
    (0.5, 0.5, 0.5),
    (0.2, 0.22, 0.2),
)


def random_objects(
    rng: np.random.Generator, spec_pose: tuple[float, float, float, float], n: int
) -> tuple[SceneObject, ...]:
    """``n`` random signs / plates standing beside the lane, 0.5..3 m ahead along it.

    Args:
        spec_pose: (offset_m, heading_rad, curvature_per_m, lane_width_m) of the scene.
    """
    offset, heading, kappa, width = spec_pose
    objs = []
    for _ in range(n):
        kind = OBJECT_KINDS[int(rng.integers(len(OBJECT_KINDS)))]
        arc = float(rng.uniform(0.5, 3.0))
        if abs(kappa) > 1e-6:
            arc = min(arc, 1.2 / abs(kappa))
        side = 1.0 if rng.random() < 0.5 else -1.0
        lat = side * (width / 2 + float(rng.uniform(0.08, 0.35)))
        xl, yl = centerline_point(arc, lat, kappa)
        x, y = lane_to_car(np.float64(xl), np.float64(yl), offset, heading)
        if x < 0.3:
            continue
        text = ""
        if kind == "plate":
            text = f"AGV-{int(rng.integers(1000)):03d}"
        elif kind == "speed_limit":
            text = str(int(rng.choice([10, 20, 30, 50])))
        objs.append(SceneObject(kind, float(x), float(y), text))
    return tuple(objs)


def _bgr(colour: np.ndarray) -> tuple[float, float, float]:
    b, g, r = (float(v) for v in colour)
    return b, g, r


def random_scene(rng: np.random.Generator) -> SceneSpec:
    """Draw a random scene: pose uniform in :data:`RANGES`, random look and distractors."""
    offset = float(rng.uniform(-1, 1) * RANGES["offset_m"])
    heading = float(rng.uniform(-1, 1) * RANGES["heading_rad"])
    # curvature: half the scenes mild, half anywhere in range (radius >= 1 m)
    kmax = RANGES["curvature_per_m"] if rng.random() < 0.5 else 0.3
    kappa = float(rng.uniform(-1, 1) * kmax)
    lo, hi = RANGES["lane_width_m"]
    width = float(rng.uniform(lo, hi))

    styles = ["solid" if rng.random() < 0.6 else "dashed" for _ in range(2)]
    contrast = [float(rng.uniform(0.45, 1.0)) for _ in range(2)]
    u = rng.random()
    if u < P_LOST:
        hidden = [0, 1]
    elif u < P_LOST + P_ONE_LINE:
        hidden = [int(rng.integers(2))]
    else:
        hidden = []
    for k in hidden:
        if rng.random() < 0.6:
            styles[k] = "none"
        else:
            contrast[k] = float(rng.uniform(0.0, 0.1))  # worn away, practically invisible

    floor = np.asarray(_FLOORS[int(rng.integers(len(_FLOORS)))]) * rng.uniform(0.8, 1.2, 3)
    line = np.asarray(_LINE_COLOURS[int(rng.integers(len(_LINE_COLOURS)))]) * rng.uniform(0.9, 1.05)
    shadows = tuple(
        (
            float(rng.uniform(0.1, 1.2)),
            float(rng.uniform(-0.5, 0.5)),
            float(rng.uniform(0.05, 0.4)),
            float(rng.uniform(0.05, 0.4)),
            float(rng.uniform(0.2, 0.6)),
        )
        for _ in range(int(rng.choice([0, 0, 1, 2, 3])))
    )
    n_obj = int(rng.choice([0, 0, 0, 1, 1, 2]))
    objects = random_objects(rng, (offset, heading, kappa, width), n_obj)
    return SceneSpec(
        offset_m=offset,
        heading_rad=heading,
        curvature_per_m=kappa,
        lane_width_m=width,
        line_width_m=float(rng.uniform(0.018, 0.035)),
        left_style=styles[0],
        right_style=styles[1],
        left_contrast=contrast[0],
        right_contrast=contrast[1],
        line_bgr=_bgr(np.clip(line, 0, 1)),
        dash_m=float(rng.uniform(0.08, 0.2)),
        gap_m=float(rng.uniform(0.06, 0.15)),
        dash_phase_m=float(rng.uniform(0, 0.4)),
        floor_bgr=_bgr(np.clip(floor, 0, 1)),
        texture_strength=float(rng.uniform(0.02, 0.2)),
        texture_seed=int(rng.integers(16)),
        wall_bgr=_bgr(rng.uniform(0.3, 0.8, 3)),
        shadows=shadows,
        gain=float(rng.uniform(0.6, 1.5)),
        gamma=float(rng.uniform(0.7, 1.4)),
        defocus_sigma_px=float(rng.choice([0.0, 0.0, rng.uniform(0.3, 1.5)])),
        motion_blur_px=float(rng.choice([0.0, 0.0, 0.0, rng.uniform(1.0, 5.0)])),
        motion_angle_deg=float(rng.uniform(-90, 90)),
        noise_sigma=float(rng.uniform(0.0, 0.04)),
        noise_seed=int(rng.integers(2**31)),
        objects=objects,
    )

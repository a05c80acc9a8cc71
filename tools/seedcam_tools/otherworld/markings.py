"""Lane plans (geometry, marking styles, designed failure cases) and painting them on the floor."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import cv2
import numpy as np

from .assets import fbm, sample_points
from .lanegeom import LanePath

__all__ = ["LanePlan", "MarkLine", "paint_lines", "sample_lane_plan"]

logger = logging.getLogger(__name__)

_PAINTS = {  # BGR in [0, 1]
    "white": (0.93, 0.94, 0.94),
    "yellow": (0.10, 0.78, 0.95),
    "orange": (0.12, 0.45, 0.95),
    "blue": (0.75, 0.40, 0.10),
    "green": (0.30, 0.62, 0.15),
    "red": (0.15, 0.15, 0.80),
    "black": (0.07, 0.07, 0.08),
    "grey": (0.55, 0.55, 0.55),
}
_PAINT_WEIGHTS = {
    "white": 0.38,
    "yellow": 0.28,
    "orange": 0.07,
    "blue": 0.08,
    "green": 0.06,
    "red": 0.05,
    "black": 0.05,
    "grey": 0.03,
}


@dataclass(frozen=True)
class MarkLine:
    """One painted or taped line along the lane.

    Attributes:
        role: ``"left"``/``"right"`` boundary, ``"centre"`` marking or ``"neighbour"`` line.
        lateral: lateral position of the line centre from the lane centre (left positive).
        width: line width in metres.
        colour: BGR colour in [0, 1].
        opacity: paint opacity (worn-to-invisible lines have a low one).
        dash: ``(period, duty, phase)`` in metres for dashed lines, or None for solid.
        wear: fraction of the paint removed by wear, 0..1.
        rough: edge raggedness in metres (paint), 0 for tape.
        gloss: extra sheen of tape.
        start_arc: the line only exists beyond this arc length (a line that begins ahead).
    """

    role: str
    lateral: float
    width: float
    colour: tuple[float, float, float]
    opacity: float
    dash: tuple[float, float, float] | None
    wear: float
    rough: float
    gloss: float
    start_arc: float = -1e9


@dataclass(frozen=True)
class LanePlan:
    """Lane geometry and markings of one scene.

    Attributes:
        width: distance between the boundary line centres.
        offset: car offset from the centre (left positive).
        heading: car yaw relative to the lane (left positive).
        path: the centre line.
        lines: the markings.
        design: the status the sampler aimed at (the truth is measured, not this).
    """

    width: float
    offset: float
    heading: float
    path: LanePath
    lines: tuple[MarkLine, ...]
    design: str


def _paint_colour(rng: np.random.Generator) -> tuple[float, float, float]:
    names = list(_PAINT_WEIGHTS)
    p = np.array([_PAINT_WEIGHTS[n] for n in names])
    base = np.array(_PAINTS[names[int(rng.choice(len(names), p=p / p.sum()))]])
    r, g, b = (float(v) for v in np.clip(base + rng.normal(0, 0.04, 3), 0, 1))
    return r, g, b


def _style(rng: np.random.Generator, role: str, lateral: float) -> MarkLine:
    tape = rng.random() < 0.45
    dashed = rng.random() < (0.8 if role == "centre" else 0.25)
    dash = None
    if dashed:
        period = float(rng.uniform(0.12, 0.6))
        dash = (period, float(rng.uniform(0.35, 0.7)), float(rng.uniform(0, period)))
    return MarkLine(
        role=role,
        lateral=lateral,
        width=float(rng.uniform(0.015, 0.05)),
        colour=_paint_colour(rng),
        opacity=float(rng.uniform(0.85, 1.0)),
        dash=dash,
        wear=0.0 if tape and rng.random() < 0.7 else float(rng.choice([0.0, rng.uniform(0.0, 0.45)])),
        rough=0.0 if tape else float(rng.uniform(0.0, 0.004)),
        gloss=float(rng.uniform(0.0, 0.15)) if tape else 0.0,
    )


def _curvature(rng: np.random.Generator) -> tuple[float, tuple[tuple[float, float], ...]]:
    r = rng.random()
    if r < 0.3:
        k0 = float(rng.normal(0.0, 0.05))
    elif r < 0.8:
        k0 = float(rng.uniform(-1.0, 1.0))
    else:
        k0 = float(rng.choice([-1.0, 1.0]) * rng.uniform(1.0, 2.0))
    k0 = float(np.clip(k0, -2.0, 2.0))
    breaks: list[tuple[float, float]] = []
    arc = 0.0
    if rng.random() < 0.22:  # S-bend: the curvature changes sign ahead
        arc = float(rng.uniform(0.25, 1.2))
        k1 = -np.sign(k0 if abs(k0) > 0.05 else rng.choice([-1.0, 1.0])) * rng.uniform(0.6, 2.0)
        breaks.append((arc, float(k1)))
        k_last = float(k1)
    else:
        k_last = k0
    # keep the total turn moderate: straighten out after about 1.4 rad
    turn_len = 1.4 / max(abs(k_last), 1e-3)
    if turn_len < 6.0:
        breaks.append((arc + float(rng.uniform(0.6, 1.0)) * turn_len, float(rng.normal(0.0, 0.1))))
    return k0, tuple(breaks)


def sample_lane_plan(rng: np.random.Generator) -> LanePlan:
    """Draw the lane of a scene: geometry, markings, and designed one-line / lost cases.

    Args:
        rng: the scene's random generator.

    Returns:
        The lane plan.
    """
    width = float(rng.uniform(0.35, 0.60))
    offset = (
        float(np.clip(rng.normal(0.0, 0.06), -0.15, 0.15)) if rng.random() < 0.7 else float(rng.uniform(-0.15, 0.15))
    )
    heading = float(np.clip(rng.normal(0.0, 0.11), -0.3, 0.3)) if rng.random() < 0.7 else float(rng.uniform(-0.3, 0.3))
    k0, breaks = _curvature(rng)
    path = LanePath(k0, breaks)
    left = _style(rng, "left", width / 2)
    right = _style(rng, "right", -width / 2) if rng.random() < 0.25 else _restyle(left, rng, -width / 2)
    r = rng.random()
    design = "lost" if r < 0.035 else "one_line" if r < 0.06 else "ok"
    sides: tuple[MarkLine | None, ...] = (left, right)  # a damaged line may be gone (None)
    if design != "ok":
        victims = ["left", "right"] if design == "lost" else [str(rng.choice(["left", "right"]))]
        mode = str(rng.choice(["absent", "worn", "faint", "late"]))
        sides = tuple(_damage(line, mode, rng) if line.role in victims else line for line in (left, right))
    lines = [line for line in sides if line is not None]
    if rng.random() < 0.2:
        c = _style(rng, "centre", 0.0)
        lines.append(MarkLine(**{**c.__dict__, "width": min(c.width, 0.025)}))
    if rng.random() < 0.2:
        side = float(rng.choice([-1.0, 1.0]))
        lines.append(_style(rng, "neighbour", side * (width / 2 + float(rng.uniform(0.3, 0.6)))))
    return LanePlan(width=width, offset=offset, heading=heading, path=path, lines=tuple(lines), design=design)


def _restyle(line: MarkLine, rng: np.random.Generator, lateral: float) -> MarkLine:
    return MarkLine(
        **{
            **line.__dict__,
            "role": "right",
            "lateral": lateral,
            "wear": float(np.clip(line.wear + rng.normal(0, 0.05), 0, 0.6)),
        }
    )


def _damage(line: MarkLine, mode: str, rng: np.random.Generator) -> MarkLine | None:
    if mode == "absent":
        return None
    if mode == "worn":
        return MarkLine(**{**line.__dict__, "wear": float(rng.uniform(0.985, 1.0)), "opacity": 0.3})
    if mode == "faint":
        return MarkLine(**{**line.__dict__, "opacity": float(rng.uniform(0.0, 0.04))})
    return MarkLine(**{**line.__dict__, "start_arc": float(rng.uniform(6.0, 12.0))})


def _box_overlap(lo: np.ndarray, hi: np.ndarray, centre: np.ndarray, g: np.ndarray) -> np.ndarray:
    a = np.maximum(lo, centre - 0.5 * g)
    b = np.minimum(hi, centre + 0.5 * g)
    return np.clip(b - a, 0.0, None) / g


def _square_wave_integral(t: np.ndarray, period: float, on: float) -> np.ndarray:
    return np.floor(t / period) * on + np.minimum(np.mod(t, period), on)


def paint_lines(
    floor: np.ndarray,
    lat: np.ndarray,
    arc: np.ndarray,
    g_lat: np.ndarray,
    g_arc: np.ndarray,
    plan: LanePlan,
    rng: np.random.Generator,
    contrast_min: float = 12.0,
) -> dict[str, np.ndarray]:
    """Paint the plan's lines on the floor pixels, box-filtered over each pixel's footprint.

    Args:
        floor: N x 3 float32 BGR albedo of the floor pixels in [0, 1] (painted in place).
        lat, arc: N lateral offsets and arc lengths of the pixels' floor points.
        g_lat, g_arc: N footprints of the pixels in lateral and arc direction (metres).
        plan: the lane plan.
        rng: random generator (wear patterns).
        contrast_min: CIE76 colour difference a painted pixel needs to count as seen.

    Returns:
        For each boundary role (``"left"``, ``"right"``), an N bool mask of the pixels
        covered at least half by its paint with visible contrast.
    """
    n = lat.shape[0]
    seen: dict[str, np.ndarray] = {"left": np.zeros(n, bool), "right": np.zeros(n, bool)}
    noise = fbm(rng, (96, 96), base_cells=6, octaves=4, persistence=0.6)
    ragged = fbm(rng, (8, 256), base_cells=24, octaves=2) - 0.5
    for line in plan.lines:
        wear_scale = float(rng.uniform(18, 40))
        reach = 0.5 * line.width + line.rough + g_lat
        sel = np.flatnonzero((np.abs(lat - line.lateral) < reach) & (arc > line.start_arc))
        if sel.size == 0:
            continue
        la, ar, gl, ga = lat[sel], arc[sel], g_lat[sel], g_arc[sel]
        hw = np.full(sel.size, 0.5 * line.width)
        if line.rough > 0:
            u = np.mod(ar * 40.0, 255.0)
            edge = sample_points(ragged, u, np.full_like(u, 4.0))
            hw = hw + line.rough * edge
        cover = _box_overlap(line.lateral - hw, line.lateral + hw, la, gl)
        if line.dash is not None:
            period, duty, phase = line.dash
            t = ar + phase
            on = duty * period
            cover = (
                cover
                * (_square_wave_integral(t + 0.5 * ga, period, on) - _square_wave_integral(t - 0.5 * ga, period, on))
                / ga
            )
        if line.wear > 0:
            w = sample_points(noise, np.mod(ar * wear_scale, 95.0), np.mod((la - line.lateral) * 300.0 + 48.0, 95.0))
            keep = np.clip((w - line.wear) / 0.08 + 0.5, 0.0, 1.0) if line.wear < 0.98 else np.zeros_like(w)
            cover = cover * keep
        alpha = (cover * line.opacity).astype(np.float32)[:, None]
        before = floor[sel]
        colour = np.array(line.colour, np.float32) * (1.0 + line.gloss)
        mix = before * (1.0 - alpha) + colour * alpha
        floor[sel] = mix
        if line.role in seen:
            lab_a = cv2.cvtColor(np.clip(before, 0, 1).reshape(1, -1, 3), cv2.COLOR_BGR2Lab).reshape(-1, 3)
            lab_b = cv2.cvtColor(np.clip(mix, 0, 1).reshape(1, -1, 3), cv2.COLOR_BGR2Lab).reshape(-1, 3)
            diff = np.linalg.norm(lab_b - lab_a, axis=-1) / np.maximum(alpha[:, 0], 1e-3)
            seen[line.role][sel[(alpha[:, 0] >= 0.5) & (diff >= contrast_min)]] = True
    return seen

"""The lane's boundary markings in a share of the randomized world's scenes: paint or tape of any colour.

The firmware's renderer draws the boundaries of the classic world: white, cream or yellow
paint, brighter than a grey floor, with clean edges. Real floors also carry dark tape on light
concrete, coloured tape on wood or epoxy, paint worn through in patches, ragged edges, and
dashes of many lengths. For a share of the world's scenes (:func:`draw_line_look`) the renderer
draws the floor without its boundaries and :func:`paint_boundaries` paints them: the lane's own
geometry (centre line, width, curvature and bend, styles and which lines are hidden), a look of
its own. The truth mask is the paint that remains, so that a boundary worn away far enough is not
"in view" (:func:`seedcam_tools.world.lines_in_view`).

The look is drawn from a generator of its own, keyed on the scene's seed, so that every other
draw of a scene stays as it was.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import cv2
import numpy as np

from seedcam_firmware.scene import CameraModel, SceneSpec
from seedcam_firmware.scene.camera_model import ground_rays
from seedcam_firmware.scene.geometry import car_to_lane, lateral_and_arc, painted_stretch

__all__ = ["LINE_LOOK_SHARE", "LineLook", "draw_line_look", "paint_boundaries", "without_boundaries"]

#: share of the world's scenes whose boundaries this module paints
LINE_LOOK_SHARE = 0.6
#: the least step (0..1) between a line's colour and its floor: in luma, or half the B, G, R distance
MIN_COLOUR_STEP = 0.3
_LUMA_BGR = np.array([0.114, 0.587, 0.299])

_FLOORS_BGR = (
    (0.63, 0.64, 0.64),  # light concrete
    (0.74, 0.74, 0.72),  # pale epoxy
    (0.55, 0.68, 0.76),  # beige
    (0.32, 0.47, 0.62),  # wood
    (0.36, 0.55, 0.36),  # green epoxy
    (0.66, 0.62, 0.56),  # blue-grey
    (0.13, 0.13, 0.14),  # black rubber
)
_LINES_BGR = (
    (0.95, 0.95, 0.95),  # white
    (0.10, 0.80, 0.95),  # yellow
    (0.10, 0.50, 0.95),  # orange
    (0.15, 0.15, 0.80),  # red
    (0.70, 0.35, 0.10),  # blue
    (0.30, 0.60, 0.15),  # green
    (0.08, 0.08, 0.08),  # black tape
    (0.28, 0.28, 0.28),  # dark grey
)
_WEAR_GRID = 48  # cells of the wear noise's period


@dataclass(frozen=True)
class LineLook:
    """How one scene's boundaries look.

    Attributes:
        floor_bgr: the floor's base colour (0..1): one of the look's floors, or the scene's own.
        line_bgr: the markings' colour (0..1).
        line_width_m: the markings' width.
        dash_m, gap_m: dash and gap lengths of a dashed boundary.
        wear: how much of the paint is worn through (0: none .. 0.6: most of it, in patches).
        wear_scale_m: the size of the worn patches along the line.
        ragged: how far (a share of the width) the edges wander.
        seed: of the wear and edge noise.
    """

    floor_bgr: tuple[float, float, float]
    line_bgr: tuple[float, float, float]
    line_width_m: float
    dash_m: float
    gap_m: float
    wear: float
    wear_scale_m: float
    ragged: float
    seed: int


def _bgr(values: np.ndarray) -> tuple[float, float, float]:
    b, g, r = (float(v) for v in np.clip(values, 0.0, 1.0))
    return b, g, r


def _colour_step(a: np.ndarray, b: np.ndarray) -> float:
    return max(abs(float((a - b) @ _LUMA_BGR)), 0.5 * float(np.linalg.norm(a - b)))


def draw_line_look(seed: int, plate_focus: bool, floor_bgr: tuple[float, float, float]) -> LineLook | None:
    """The look of scene ``seed``'s boundaries on a floor of its own or the scene's ``floor_bgr``; None for the
    share of the scenes that keeps the renderer's boundaries."""
    rng = np.random.default_rng([seed, 0xC4 if plate_focus else 0xBE, 0x11])
    if rng.random() >= LINE_LOOK_SHARE:
        return None
    floor = floor_bgr
    if rng.random() < 0.6:
        floor = _bgr(np.asarray(_FLOORS_BGR[int(rng.integers(len(_FLOORS_BGR)))]) * rng.uniform(0.85, 1.15, 3))
    base = np.asarray(floor)
    line = np.asarray(_LINES_BGR[int(rng.integers(len(_LINES_BGR)))]) * rng.uniform(0.85, 1.1, 3)
    if _colour_step(np.clip(line, 0, 1), base) < MIN_COLOUR_STEP:
        line = np.full(3, 0.08 if base.mean() > 0.45 else 0.95)  # black tape on a light floor, white on a dark one
    return LineLook(
        floor_bgr=floor,
        line_bgr=_bgr(line),
        line_width_m=float(rng.uniform(0.012, 0.075)),
        dash_m=float(rng.uniform(0.05, 0.4)),
        gap_m=float(rng.uniform(0.05, 0.4)),
        wear=float(rng.choice([0.0, rng.uniform(0.0, 0.6)])),
        wear_scale_m=float(rng.uniform(0.03, 0.3)),
        ragged=float(rng.choice([0.0, rng.uniform(0.0, 0.4)])),
        seed=int(rng.integers(2**31)),
    )


def without_boundaries(spec: SceneSpec, look: LineLook) -> SceneSpec:
    """``spec`` for the renderer: the look's floor, boundaries not painted (they come from :func:`paint_boundaries`)."""
    return dataclasses.replace(spec, floor_bgr=look.floor_bgr, left_contrast=0.0, right_contrast=0.0)


def _smooth_noise(rng: np.random.Generator) -> np.ndarray:
    """A periodic field of smooth noise in 0..1 (``_WEAR_GRID`` cells a side)."""
    n = _WEAR_GRID
    cells = np.tile(rng.random((n, n)).astype(np.float32), (3, 3))
    grid = cv2.GaussianBlur(cells, (0, 0), 1.5)[n : 2 * n, n : 2 * n]  # blurred with wrap-around
    lo, hi = float(grid.min()), float(grid.max())
    return (grid - lo) / max(hi - lo, 1e-6)


def paint_boundaries(img: np.ndarray, spec: SceneSpec, camera: CameraModel, look: LineLook) -> np.ndarray:
    """Paint the boundaries of ``spec`` (the scene as drawn, before :func:`without_boundaries`) into ``img``.

    ``img`` is the renderer's H x W x 3 uint8 frame of :func:`without_boundaries` (no camera effects yet).
    Returns the H x W x 2 line mask (left, right): coverage times the paint that remains, for the lines
    that count as visible.
    """
    rays = ground_rays(camera)
    xl, yl = car_to_lane(rays.gx, rays.gy, spec.offset_m, spec.heading_rad)
    lat, arc = lateral_and_arc(xl, yl, spec.curvature_per_m, spec.curvature_rate_per_m2)
    keep = painted_stretch(arc, spec.curvature_per_m, spec.curvature_rate_per_m2)
    fp = rays.gfootprint
    rng = np.random.default_rng(look.seed)
    wear_field, edge_field = _smooth_noise(rng), _smooth_noise(rng)
    cell = look.wear_scale_m
    half = look.line_width_m / 2.0
    h, w = img.shape[:2]
    mask = np.zeros((h * w, 2), np.float32)
    alpha = np.zeros(len(rays.index), np.float32)
    along = (arc / cell).astype(np.int64) % _WEAR_GRID
    for k, (style, contrast, visible, side) in enumerate(
        (
            (spec.left_style, spec.left_contrast, spec.left_visible, +1.0),
            (spec.right_style, spec.right_contrast, spec.right_visible, -1.0),
        )
    ):
        if style == "none":
            continue
        centre = side * spec.lane_width_m / 2.0
        across = ((lat - centre) / cell + 2 * k * _WEAR_GRID // 3).astype(np.int64) % _WEAR_GRID
        wobble = (edge_field[along, k] - 0.5) * 2.0 * look.ragged * look.line_width_m
        cov = np.clip((half - np.abs(lat - centre - wobble)) / fp + 0.5, 0.0, 1.0)
        if style == "dashed":
            period = look.dash_m + look.gap_m
            cov *= np.mod(arc + look.seed % 97 / 97.0 * period, period) < look.dash_m
        remaining = np.clip((wear_field[along, across] - look.wear) / 0.12 + 0.5, 0.0, 1.0) if look.wear else 1.0
        cov = (cov * remaining * keep).astype(np.float32)
        alpha = np.maximum(alpha, cov * np.float32(contrast))
        if visible:
            mask[rays.index, k] = cov
    flat = img.reshape(-1, 3)
    px = flat[rays.index].astype(np.float32)
    floor = np.asarray(look.floor_bgr, np.float32) * 255.0
    light = np.clip(px.mean(axis=1) / max(float(floor.mean()), 1.0), 0.2, 1.6)  # texture, shadows and haze
    paint = np.asarray(look.line_bgr, np.float32)[None, :] * 255.0 * light[:, None]
    flat[rays.index] = np.clip(px + (paint - px) * alpha[:, None], 0, 255).astype(np.uint8)
    return mask.reshape(h, w, 2)

"""``render_scene``: one evaluation scene as a pure function of its seed."""

from __future__ import annotations

import logging

import numpy as np

from .camera import sample_camera
from .compose import Compositor
from .effects import apply_camera_effects
from .floor import floor_lighting, sample_floor_material, shade_floor
from .lanegeom import car_to_lane_frame
from .markings import paint_lines, sample_lane_plan
from .props import plan_props
from .room import sample_wall, wall_colour, wall_hit
from .truth import OtherLane, OtherObject, OtherScene, is_difficult

__all__ = ["MIN_LINE_PIXELS", "render_scene"]

logger = logging.getLogger(__name__)

MIN_LINE_PIXELS = 60
"""Pixels a boundary must cover (at least half, with visible contrast) to count as in view."""


def _status(left: int, right: int) -> str:
    seen = (left >= MIN_LINE_PIXELS) + (right >= MIN_LINE_PIXELS)
    return ("lost", "one_line", "ok")[seen]


def _footprint(a: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """L1 size of one pixel in the quantity ``a`` (flattened H x W)."""
    g = a.reshape(shape)
    out = np.abs(np.gradient(g, axis=0)) + np.abs(np.gradient(g, axis=1))
    return out.ravel()


def render_scene(seed: int) -> OtherScene:
    """Render the evaluation scene of ``seed``.

    Args:
        seed: a non-negative integer; the scene is a pure function of it.

    Returns:
        The scene: BGR image, labelled objects and lane truth.

    Raises:
        ValueError: ``seed`` is not a non-negative integer.
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")
    seed = int(seed)
    rng = np.random.default_rng(seed)
    cam = sample_camera(rng)
    shape = (cam.height, cam.width)
    rays = cam.rays()
    fmap = cam.floor(rays)
    plan = sample_lane_plan(rng)
    wall = sample_wall(rng, cam.height_m)
    t_wall, w_col, w_row = wall_hit(wall, cam.centre, rays)
    region = fmap.hit & (fmap.t < t_wall)
    fl = np.flatnonzero(region)
    wl = np.flatnonzero(~region)
    image: np.ndarray = np.empty((rays.shape[0], 3), np.float32)  # one row per ray, then H x W x 3
    image[wl] = wall_colour(wall, t_wall[wl], w_col[wl], w_row[wl]) * float(rng.uniform(0.7, 1.1))

    material = sample_floor_material(rng)
    gx = np.gradient(fmap.x.reshape(shape), axis=(0, 1))
    gy = np.gradient(fmap.y.reshape(shape), axis=(0, 1))
    foot = np.maximum(np.hypot(gx[0], gy[0]), np.hypot(gx[1], gy[1])).ravel()
    x, y = fmap.x[fl], fmap.y[fl]
    albedo = shade_floor(material, x, y, foot[fl])
    xl, yl = car_to_lane_frame(fmap.x, fmap.y, plan.offset, plan.heading)
    lat, arc = plan.path.coords(xl, yl)
    g_lat = np.clip(np.nan_to_num(_footprint(lat, shape)[fl], nan=1.0), 1e-5, 1.0)
    g_arc = np.clip(np.nan_to_num(_footprint(arc, shape)[fl], nan=1.0), 1e-5, 1.0)
    seen = paint_lines(albedo, lat[fl], arc[fl], g_lat, g_arc, plan, rng)
    light = floor_lighting(rng, x, y)
    floor_rgb = albedo * light[:, None]
    if material.gloss > 0.05 and fl.size:  # the wall mirrored in a glossy floor
        origin = np.stack([x, y, np.zeros_like(x)], axis=-1)
        mirrored = rays[fl] * np.array([1.0, 1.0, -1.0])
        t_r, c_r, r_r = wall_hit(wall, origin, mirrored)
        refl = wall_colour(wall, t_r, c_r, r_r, blur_level=1.0 + 2.0 * (1.0 - material.gloss))
        steep = -rays[fl, 2] / np.linalg.norm(rays[fl], axis=-1)
        k = ((0.06 + 0.3 * np.clip(1.0 - 2.5 * steep, 0.0, 1.0)) * material.gloss).astype(np.float32)[:, None]
        floor_rgb = floor_rgb * (1.0 - 0.5 * k) + refl * k
    image[fl] = floor_rgb
    image = image.reshape(*shape, 3)

    comp = Compositor(image, cam)
    shade = float(np.clip(light.mean() if light.size else 1.0, 0.6, 1.2))
    faces, pieces = plan_props(rng, plan, shade=shade, camera=cam)
    for piece in sorted(pieces, key=lambda p: -p.depth):
        piece.draw(comp)

    clear = (comp.owner == 0).ravel()[fl]
    status = _status(int((seen["left"] & clear).sum()), int((seen["right"] & clear).sum()))
    objects = []
    for face in faces:
        patch = face.patch
        if patch is None or patch.box is None:
            continue
        occluded = 1.0 - comp.visible_fraction(patch, face.owner)
        objects.append(
            OtherObject(
                label=face.label,
                box=patch.box,
                text=face.text,
                difficult=is_difficult(patch.box, patch.inside, occluded),
            )
        )
    frame = apply_camera_effects(rng, comp.image)
    lane = OtherLane(offset_m=plan.offset, heading_rad=plan.heading, curvature_per_m=plan.path.kappa0, status=status)
    logger.debug("seed %d: %d objects, lane %s (designed %s)", seed, len(objects), status, plan.design)
    return OtherScene(image=frame, objects=tuple(objects), lane=lane, seed=seed)

"""Render a :class:`SceneSpec` to a BGR frame by per-pixel inverse perspective.

Every floor pixel's ray is intersected with the floor (cached per camera), moved
into the lane frame, and shaded: floor texture, shadows, and the two boundary
lines, antialiased with the pixel's footprint on the floor. Billboards are
projected from the world and warped on top, far to near. Lighting, blur and
sensor noise are applied last.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from .camera_model import DEFAULT_CAMERA, CameraModel, ground_rays
from .geometry import MAX_LINE_RANGE_M, car_to_lane, lateral_and_arc, painted_stretch
from .textures import OBJECT_SIZE_M, TEXEL_M, TEXTURE_SIZE, floor_texture, object_face
from .types import LaneTruth, ObjectTruth, SceneObject, SceneSpec, SceneTruth

__all__ = ["MAX_LINE_RANGE_M", "CleanRender", "expose", "object_corners", "render", "render_clean", "render_with_mask"]


def render(
    spec: SceneSpec, camera: CameraModel = DEFAULT_CAMERA, *, rng: np.random.Generator | None = None
) -> tuple[np.ndarray, SceneTruth]:
    """Render ``spec``: returns ``(H x W x 3 uint8 BGR image, truth)``.

    Deterministic given ``spec`` (noise from ``spec.noise_seed``) unless ``rng``
    is passed, which then supplies the sensor noise.
    """
    image, truth, _ = render_with_mask(spec, camera, rng=rng)
    return image, truth


def _line_coverage(
    lat: np.ndarray, arc: np.ndarray, keep: np.ndarray, fp: np.ndarray, centre: float, spec: SceneSpec, style: str
) -> np.ndarray:
    half = spec.line_width_m / 2.0
    cov = np.clip((np.float32(half) - np.abs(lat - np.float32(centre))) / fp + 0.5, 0.0, 1.0)
    if style == "dashed":
        period = spec.dash_m + spec.gap_m
        phase = np.mod(arc + spec.dash_phase_m, period)
        cov = cov * (phase < spec.dash_m)
    return (cov * keep).astype(np.float32, copy=False)


def _floor(spec: SceneSpec, camera: CameraModel) -> tuple[np.ndarray, np.ndarray]:
    """Shade the floor; returns (H x W x 3 float32 image 0..1, H x W x 2 line coverage)."""
    rays = ground_rays(camera)
    idx = rays.index
    h, w = rays.ground.shape
    xl, yl = car_to_lane(rays.gx, rays.gy, spec.offset_m, spec.heading_rad)
    xl = xl.astype(np.float32, copy=False)
    yl = yl.astype(np.float32, copy=False)
    fp = rays.gfootprint
    lat, arc = lateral_and_arc(xl, yl, spec.curvature_per_m, spec.curvature_rate_per_m2)

    tex = floor_texture(spec.texture_seed % 16)
    ti = (xl * np.float32(1.0 / TEXEL_M)).astype(np.int32) & (TEXTURE_SIZE - 1)
    tj = (yl * np.float32(1.0 / TEXEL_M)).astype(np.int32) & (TEXTURE_SIZE - 1)
    fade = np.clip(1.5 - fp * np.float32(1.0 / TEXEL_M), 0.0, 1.0)  # fade the texture where it would alias
    shade = 1.0 + np.float32(spec.texture_strength) * tex[ti, tj] * fade
    for sx, sy, ra, rb, dark in spec.shadows:
        d = np.sqrt(((xl - sx) / ra) ** 2 + ((yl - sy) / rb) ** 2)
        shade *= 1.0 - np.float32(dark) * np.clip((1.1 - d) * 4.0, 0.0, 1.0)

    half_w = spec.lane_width_m / 2.0
    zero = np.zeros_like(lat)
    keep = painted_stretch(arc, spec.curvature_per_m, spec.curvature_rate_per_m2)
    cov_l = _line_coverage(lat, arc, keep, fp, +half_w, spec, spec.left_style) if spec.left_style != "none" else zero
    cov_r = _line_coverage(lat, arc, keep, fp, -half_w, spec, spec.right_style) if spec.right_style != "none" else zero
    paint = np.clip(cov_l * np.float32(spec.left_contrast) + cov_r * np.float32(spec.right_contrast), 0.0, 1.0)

    floor_bgr = np.asarray(spec.floor_bgr, dtype=np.float32)
    line_bgr = np.asarray(spec.line_bgr, dtype=np.float32)
    wall = np.asarray(spec.wall_bgr, dtype=np.float32)
    # distance haze towards the wall colour near the horizon
    haze = np.clip((rays.grange - 4.0) * np.float32(1.0 / 8.0), 0.0, 1.0)
    px = (shade * (1.0 - haze))[:, None] * (floor_bgr + paint[:, None] * (line_bgr - floor_bgr)) + haze[:, None] * wall

    rows = np.arange(h, dtype=np.float32)[:, None, None]
    grad = 0.85 + 0.3 * rows / h
    img = np.broadcast_to(wall * grad, (h, w, 3)).copy()
    img.reshape(-1, 3)[idx] = px
    mask = np.zeros((h * w, 2), np.float32)
    if spec.left_visible:
        mask[idx, 0] = cov_l
    if spec.right_visible:
        mask[idx, 1] = cov_r
    return img, mask.reshape(h, w, 2)


def object_corners(obj: SceneObject) -> np.ndarray:
    """The 4 x 3 car-frame corners of an object's face: top-left, top-right, bottom-right, bottom-left as seen."""
    ow, oh, oz = OBJECT_SIZE_M[obj.kind]
    # the face's horizontal unit vector pointing to the car's left, turned by the yaw
    dx, dy = -math.sin(obj.yaw_rad) * ow / 2, math.cos(obj.yaw_rad) * ow / 2
    top, bottom = oz + oh / 2, oz - oh / 2
    return np.array(
        [
            [obj.forward_m + dx, obj.left_m + dy, top],
            [obj.forward_m - dx, obj.left_m - dy, top],
            [obj.forward_m - dx, obj.left_m - dy, bottom],
            [obj.forward_m + dx, obj.left_m + dy, bottom],
        ]
    )


def _draw_occluders(img: np.ndarray, spec: SceneSpec) -> None:
    h, w = img.shape[:2]
    for x0, y0, x1, y1, grey in spec.occluders:
        p0 = (round(x0 * w), round(y0 * h))
        p1 = (round(x1 * w) - 1, round(y1 * h) - 1)
        cv2.rectangle(img, p0, p1, (grey * 0.95, grey, grey * 1.05), -1)


def _draw_objects(img: np.ndarray, spec: SceneSpec, camera: CameraModel) -> tuple[ObjectTruth, ...]:
    """Warp object faces into ``img`` (float 0..1, in place); far objects first."""
    truths: list[tuple[float, ObjectTruth]] = []
    h, w = img.shape[:2]
    for obj in sorted(spec.objects, key=lambda o: -o.forward_m):
        oh, oz = OBJECT_SIZE_M[obj.kind][1:]
        uv, depth = camera.project(object_corners(obj))
        if np.any(depth < 0.05):
            continue
        x0, y0 = uv.min(axis=0)
        x1, y1 = uv.max(axis=0)
        bx0, by0, bx1, by1 = max(x0, 0.0), max(y0, 0.0), min(x1, w - 1.0), min(y1, h - 1.0)
        if bx1 - bx0 < 1.0 or by1 - by0 < 1.0:
            continue
        # the pole, from the bottom of the face to the floor
        base, _ = camera.project(np.array([[obj.forward_m, obj.left_m, 0.0], [obj.forward_m, obj.left_m, oz - oh / 2]]))
        thick = max(1, round(0.008 * camera.focal_px / obj.forward_m))
        p0 = tuple(round(v) for v in np.clip(base[0], -1e4, 1e4))
        p1 = tuple(round(v) for v in np.clip(base[1], -1e4, 1e4))
        cv2.line(img, p0, p1, (0.45, 0.45, 0.45), thick, cv2.LINE_AA)
        face, alpha = object_face(obj.kind, obj.text)
        fh, fw = alpha.shape
        # warp only into the box's region of interest
        ix0, iy0 = int(np.floor(bx0)), int(np.floor(by0))
        ix1, iy1 = int(np.ceil(bx1)) + 1, int(np.ceil(by1)) + 1
        src = np.array([[0, 0], [fw, 0], [fw, fh], [0, fh]], np.float32) - 0.5
        dst = (uv - np.array([ix0, iy0])).astype(np.float32)
        m = cv2.getPerspectiveTransform(src, dst)
        size = (ix1 - ix0, iy1 - iy0)
        warped = cv2.warpPerspective(face, m, size, flags=cv2.INTER_LINEAR).astype(np.float32) / 255.0
        a = cv2.warpPerspective(alpha, m, size, flags=cv2.INTER_LINEAR).astype(np.float32)[..., None] / 255.0
        roi = img[iy0:iy1, ix0:ix1]
        roi[:] = roi * (1.0 - a) + warped * a
        left, top, right, bottom = (
            float(np.clip(v, 0, 1)) for v in (bx0 / w, by0 / h, (bx1 + 1.0) / w, (by1 + 1.0) / h)
        )
        truths.append(
            (obj.forward_m, ObjectTruth(obj.kind, obj.text, (left, top, right, bottom), obj.forward_m, obj.left_m))
        )
    truths.sort(key=lambda t: t[0])
    return tuple(t for _, t in truths)


def _optics(img: np.ndarray, spec: SceneSpec) -> np.ndarray:
    """Lighting and blur (in place on the float32 ``img`` where it can); returns float32 0..1."""
    img32: np.ndarray = img.astype(np.float32, copy=False)
    np.multiply(img32, np.float32(spec.gain), out=img32)
    np.clip(img32, 0.0, 1.0, out=img32)
    if abs(spec.gamma - 1.0) > 1e-3:
        cv2.pow(img32, spec.gamma, dst=img32)
    if spec.motion_blur_px >= 1.0:
        k = math.ceil(spec.motion_blur_px) | 1
        kernel: np.ndarray = np.zeros((k, k), np.float32)
        kernel[k // 2, :] = 1.0
        rot = cv2.getRotationMatrix2D(((k - 1) / 2, (k - 1) / 2), spec.motion_angle_deg, 1.0)
        kernel = cv2.warpAffine(kernel, rot, (k, k))
        img32 = cv2.filter2D(img32, -1, kernel / max(kernel.sum(), 1e-6))
    if spec.defocus_sigma_px > 0.1:
        img32 = cv2.GaussianBlur(img32, (0, 0), spec.defocus_sigma_px)
    return img32


def _sensor(img32: np.ndarray, spec: SceneSpec, rng: np.random.Generator) -> np.ndarray:
    """Sensor noise and quantisation (in place on the float32 ``img32``); returns uint8."""
    if spec.noise_sigma > 0:
        noise = rng.standard_normal(img32.shape, dtype=np.float32)
        noise *= np.float32(spec.noise_sigma)
        img32 += noise
    img32 *= np.float32(255.0)
    img32 += np.float32(0.5)
    np.clip(img32, 0.0, 255.0, out=img32)
    return img32.astype(np.uint8)


@dataclass(frozen=True)
class CleanRender:
    """A scene drawn up to its sensor noise: what stays the same between frames of one scene.

    Attributes:
        spec: the scene.
        image: H x W x 3 float32 BGR 0..1 after lighting and blur (read-only).
        truth: the scene's truth.
        mask: H x W x 2 float32 line coverage (see :func:`render_with_mask`).
    """

    spec: SceneSpec
    image: np.ndarray
    truth: SceneTruth
    mask: np.ndarray


def _draw(spec: SceneSpec, camera: CameraModel) -> tuple[np.ndarray, SceneTruth, np.ndarray]:
    """The scene up to its sensor noise: (float32 image after lighting and blur, truth, line mask)."""
    img, mask = _floor(spec, camera)
    objects = _draw_objects(img, spec, camera) if spec.objects else ()
    _draw_occluders(img, spec)
    lane = LaneTruth(
        offset_m=float(spec.offset_m),
        heading_rad=float(spec.heading_rad),
        curvature_per_m=float(spec.curvature_per_m),
        lane_width_m=float(spec.lane_width_m),
        left_visible=spec.left_visible,
        right_visible=spec.right_visible,
    )
    return _optics(img, spec), SceneTruth(lane=lane, objects=objects), mask


def _noise_rng(spec: SceneSpec, rng: np.random.Generator | None) -> np.random.Generator:
    return rng if rng is not None else np.random.default_rng(spec.noise_seed)


def render_clean(spec: SceneSpec, camera: CameraModel = DEFAULT_CAMERA) -> CleanRender:
    """Everything of :func:`render` but the sensor noise; :func:`expose` adds it.

    A camera that shows one scene for many frames draws it once and exposes it
    per frame: ``expose(render_clean(spec, cam), rng)`` equals ``render(spec, cam, rng=rng)``
    bit for bit, drawing the same numbers from ``rng``.
    """
    image, truth, mask = _draw(spec, camera)
    image.flags.writeable = False
    return CleanRender(spec, image, truth, mask)


def expose(clean: CleanRender, rng: np.random.Generator | None = None) -> np.ndarray:
    """One H x W x 3 uint8 BGR frame of ``clean``: fresh sensor noise from ``rng``
    (default: the scene's ``noise_seed``)."""
    return _sensor(clean.image.copy(), clean.spec, _noise_rng(clean.spec, rng))


def render_with_mask(
    spec: SceneSpec, camera: CameraModel = DEFAULT_CAMERA, *, rng: np.random.Generator | None = None
) -> tuple[np.ndarray, SceneTruth, np.ndarray]:
    """Like :func:`render`, also returning the H x W x 2 float32 line-coverage mask.

    Mask channel 0 is the left line, 1 the right line (0..1 coverage, before blur;
    only lines that count as visible in the truth).
    """
    image, truth, mask = _draw(spec, camera)
    return _sensor(image, spec, _noise_rng(spec, rng)), truth, mask  # in place: this image is drawn for one frame

"""One frame of the randomized training world (domain randomization), with its truth.

The floor and lane come from the firmware's renderer (the same geometry and
lane-truth conventions as the emulated board), widened: lane widths 0.3-0.65 m,
curvature up to +-2 1/m, S-bends and curves that tighten or open ahead, line
widths 15-50 mm, a dashed centre marking or a neighbouring lane's line now and
then, photographic floor textures, and a camera whose pitch and height jitter; in
a share of the scenes the boundaries are paint or tape of any colour on light or
dark floors, worn through in patches, ragged, dashed at any length (:mod:`.lines`).
On top of it this module composes:

* a background (photographs and textures from :mod:`.assets`) instead of a flat wall;
* 0..4 labelled objects (:mod:`.faces`: several designs per class, real fonts, wear)
  of any size (sign faces 5-22 cm, plates any text length), mounted anywhere from
  the floor to above the camera, on posts or not, 0.25..2.4 m ahead, yawed
  +-0.9 rad; plates also on boxes;
* 0..4 distractors (posters, cones, discs, boxes, shapes, photo cut-outs) that are
  none of the labels, in front of or behind the objects;
* camera effects: exposure, white balance, gamma, vignetting, motion and defocus
  blur, noise, JPEG, small roll.

Every one of those factors can be switched off for a diagnosis (:data:`WORLD_FACTORS`,
``render_world_scene(seed, without=...)``): the scene still makes every random draw it
would have made, so a scene without one factor is the same scene in everything else
(``seedcam-tools ablate-world`` scores a model on both and reports what each factor costs).

Truth: every labelled object's box (the face's pixels, clipped to the frame), with a
``difficult`` flag for objects too small, too far out of the frame or too occluded
to be fair targets (training ignores them; evaluation does not count them); the
lane state with its status from what is in view (a boundary counts when >= 60
pixels of it are painted >= 50 %).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection
from dataclasses import dataclass

import cv2
import numpy as np

from seedcam_firmware.scene import DEFAULT_CAMERA, CameraModel, SceneSpec, random_scene, render_with_mask
from seedcam_firmware.scene.camera_model import ground_rays
from seedcam_firmware.scene.geometry import car_to_lane, lateral_and_arc, painted_stretch

from .assets import photos, textures
from .faces import Face, distractor_face, object_face, weather
from .lines import draw_line_look, paint_boundaries, without_boundaries

__all__ = [
    "IN_VIEW_PIXELS",
    "LABELS",
    "WORLD_FACTORS",
    "WorldLane",
    "WorldObject",
    "WorldScene",
    "lines_in_view",
    "plate_text",
    "render_world_scene",
]

LABELS: tuple[str, ...] = ("stop", "speed_limit", "turn_left", "turn_right", "crossing", "parking", "plate")
#: a boundary line is in view when at least this many pixels are painted >= 50 %
IN_VIEW_PIXELS = 60
#: what can be switched off in a scene (``render_world_scene(without=...)``) -> what it is
WORLD_FACTORS: dict[str, str] = {
    "camera_jitter": "camera pitch and height other than the board's",
    "bends": "curves that tighten or open ahead",
    "line_looks": "paint and tape boundaries (colours, dashes, wear, ragged edges)",
    "extra_lines": "a dashed centre marking, a neighbouring lane's line",
    "floor_texture": "photographic floor textures",
    "background": "photographs and textures instead of the flat wall",
    "objects": "the labelled objects (signs, plates; lane scenes only)",
    "distractors": "posters, cones, shapes and cut-outs that are none of the labels",
    "face_wear": "fading, dirt and glare on faces",
    "exposure": "exposure, white balance, gamma and vignetting of the camera",
    "blur": "motion and defocus blur",
    "sensor_noise": "sensor noise",
    "jpeg": "JPEG compression",
    "roll": "a small camera roll",
}
_MARGIN = 64  # off-frame margin (px) used to measure how much of a face is out of the frame
_PLATE_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#: camera variants (pitch degrees, height metres): a few, so the floor rays stay cached
_CAMERAS = tuple(
    dataclasses.replace(DEFAULT_CAMERA, pitch_deg=p, height_m=h) for p in (13.5, 15.0, 16.5) for h in (0.11, 0.13)
)


def lines_in_view(mask: np.ndarray) -> tuple[bool, bool]:
    """Whether the left / right boundary is in view, from the renderer's H x W x 2 line-coverage mask."""
    return tuple(bool(np.count_nonzero(mask[..., k] >= 0.5) >= IN_VIEW_PIXELS) for k in range(2))  # type: ignore[return-value]


@dataclass(frozen=True)
class WorldObject:
    """A labelled object: ``box`` (x0, y0, x1, y1) frame pixels; ``text`` of plates and speed limits."""

    label: str
    box: tuple[float, float, float, float]
    text: str
    difficult: bool
    forward_m: float


@dataclass(frozen=True)
class WorldLane:
    """Lane truth (the firmware's conventions) and the status from what is in view."""

    offset_m: float
    heading_rad: float
    curvature_per_m: float
    lane_width_m: float
    left_in_view: bool
    right_in_view: bool

    @property
    def status(self) -> str:
        """``"ok"``, ``"one_line"`` or ``"lost"``."""
        return ("lost", "one_line", "ok")[int(self.left_in_view) + int(self.right_in_view)]


@dataclass(frozen=True)
class WorldScene:
    """A rendered frame (H x W x 3 uint8 BGR), its objects, lane truth and line mask (H x W x 2 float32)."""

    image: np.ndarray
    objects: tuple[WorldObject, ...]
    lane: WorldLane
    mask: np.ndarray
    seed: int


def plate_text(rng: np.random.Generator) -> str:
    """3..8 characters of the OCR alphabet, with an inner ``-`` now and then."""
    n = int(rng.integers(3, 9))
    chars = [_PLATE_ALPHABET[int(v)] for v in rng.integers(len(_PLATE_ALPHABET), size=n)]
    if n >= 4 and rng.random() < 0.5:
        chars[int(rng.integers(1, n - 1))] = "-"
    return "".join(chars)


def _lane_spec(rng: np.random.Generator) -> SceneSpec:
    spec = random_scene(rng)
    kappa = spec.curvature_per_m
    if rng.random() < 0.25:
        kappa = float(rng.uniform(-2.0, 2.0))
    offset = spec.offset_m * (1.0 if rng.random() < 0.8 else 1.4)
    return dataclasses.replace(
        spec,
        offset_m=float(offset),
        curvature_per_m=kappa,
        lane_width_m=float(rng.uniform(0.3, 0.65)),
        line_width_m=float(rng.uniform(0.015, 0.05)),
        gain=1.0,
        gamma=1.0,
        defocus_sigma_px=0.0,
        motion_blur_px=0.0,
        noise_sigma=0.0,
        objects=(),
        occluders=(),
    )


def _bend(seed: int, plate_focus: bool) -> float:
    """The curvature rate (1/m^2) of scene ``seed``: a third of the scenes bend further ahead.

    Drawn from a generator of its own, so that every other draw of the scene stays as it was.
    """
    rng = np.random.default_rng([seed, 0xC4 if plate_focus else 0xBE, 0xD])
    return float(rng.uniform(-4.0, 4.0)) if rng.random() < 1 / 3 else 0.0


def _extra_lines(img: np.ndarray, spec: SceneSpec, camera: CameraModel, rng: np.random.Generator) -> None:
    """A dashed centre marking and / or a neighbouring lane's line (not lane boundaries)."""
    wanted = []
    if rng.random() < 0.2:
        wanted.append((0.0, True))
    if rng.random() < 0.15:
        wanted.append(((1.5 if rng.random() < 0.5 else -1.5) * spec.lane_width_m * float(rng.uniform(1.0, 1.4)), False))
    if not wanted:
        return
    rays = ground_rays(camera)
    xl, yl = car_to_lane(rays.gx, rays.gy, spec.offset_m, spec.heading_rad)
    lat, arc = lateral_and_arc(xl, yl, spec.curvature_per_m, spec.curvature_rate_per_m2)
    keep = painted_stretch(arc, spec.curvature_per_m, spec.curvature_rate_per_m2)
    flat = img.reshape(-1, 3)
    colour = np.asarray(rng.choice([(235, 235, 235), (40, 200, 235)]), np.float32) * np.float32(rng.uniform(0.7, 1.0))
    for centre, dashed in wanted:
        half = spec.line_width_m * float(rng.uniform(0.4, 0.7))
        cov = np.clip((half - np.abs(lat - centre)) / rays.gfootprint + 0.5, 0.0, 1.0)
        if dashed:
            period = float(rng.uniform(0.1, 0.3))
            cov *= np.mod(arc + rng.uniform(0, period), period) < period * float(rng.uniform(0.3, 0.6))
        cov *= keep
        px = flat[rays.index].astype(np.float32)
        flat[rays.index] = (px + (colour - px) * cov[:, None]).astype(np.uint8)


def _texture_floor(img: np.ndarray, camera: CameraModel, rng: np.random.Generator) -> None:
    tex = textures()[int(rng.integers(len(textures())))]
    grey = cv2.cvtColor(tex, cv2.COLOR_BGR2GRAY).astype(np.float32)
    grey = (grey - grey.mean()) / max(grey.std(), 1.0)
    rays = ground_rays(camera)
    scale = float(rng.uniform(0.001, 0.004))  # metres per texel
    th, tw = grey.shape
    ti = (rays.gx / scale).astype(np.int64) % th
    tj = (rays.gy / scale).astype(np.int64) % tw
    fade = np.clip(1.5 - rays.gfootprint / (3 * scale), 0.2, 1.0)
    shade = 1.0 + np.float32(rng.uniform(0.05, 0.25)) * grey[ti, tj] * fade
    flat = img.reshape(-1, 3)
    flat[rays.index] = np.clip(flat[rays.index].astype(np.float32) * shade[:, None], 0, 255).astype(np.uint8)


def _background(img: np.ndarray, camera: CameraModel, rng: np.random.Generator) -> None:
    """Replace what is not floor with a photograph or texture (bands of it, tinted)."""
    source = photos() if rng.random() < 0.6 else textures()
    pic = source[int(rng.integers(len(source)))]
    h, w = img.shape[:2]
    ph, pw = pic.shape[:2]
    cw = int(pw * rng.uniform(0.3, 1.0))
    ch = min(ph, max(8, int(cw * h / w * rng.uniform(0.5, 1.2))))
    y, x = int(rng.integers(0, ph - ch + 1)), int(rng.integers(0, pw - cw + 1))
    crop = cv2.resize(pic[y : y + ch, x : x + cw], (w, h), interpolation=cv2.INTER_AREA)
    if rng.random() < 0.5:
        crop = crop[:, ::-1]
    tint = rng.uniform(0.6, 1.2, 3).astype(np.float32)
    crop = np.clip(crop.astype(np.float32) * tint, 0, 255).astype(np.uint8)
    wall = ~ground_rays(camera).ground
    img[wall] = crop[wall]


def _corners(forward: float, left: float, zc: float, w: float, h: float, yaw: float) -> np.ndarray:
    dx, dy = -math.sin(yaw) * w / 2, math.cos(yaw) * w / 2
    top, bottom = zc + h / 2, zc - h / 2
    return np.array(
        [
            [forward + dx, left + dy, top],
            [forward - dx, left - dy, top],
            [forward - dx, left - dy, bottom],
            [forward + dx, left + dy, bottom],
        ]
    )


@dataclass
class _Placed:
    face: Face
    corners: np.ndarray  # 4 x 3 car frame
    label: str | None  # None: a distractor
    text: str
    post: bool
    forward: float


#: the OCR world's plates are at least this large in the frame (pixels): big enough to read
_LEGIBLE_PLATE_PX = (40.0, 14.0)


def _plate_in_view(rng: np.random.Generator, camera: CameraModel, *, wear: bool = True) -> _Placed:
    """A legible plate fully in the frame, 0.22..0.6 m ahead (the OCR world)."""
    w, h = camera.width, camera.height
    for _ in range(40):
        p = _random_placed(rng, "plate", forward_range=(0.22, 0.6), max_yaw=0.7, wear=wear)
        uv, depth = camera.project(p.corners)
        inside = uv[:, 0].min() >= 2 and uv[:, 0].max() <= w - 3 and uv[:, 1].min() >= 2 and uv[:, 1].max() <= h - 3
        size = uv.max(axis=0) - uv.min(axis=0)
        if np.all(depth > 0.05) and inside and size[0] >= _LEGIBLE_PLATE_PX[0] and size[1] >= _LEGIBLE_PLATE_PX[1]:
            return p
    return p


def _random_placed(
    rng: np.random.Generator,
    label: str | None,
    *,
    forward_range: tuple[float, float] | None = None,
    max_yaw: float = 0.9,
    wear: bool = True,
) -> _Placed:
    text = ""
    if label == "plate":
        text = plate_text(rng)
    elif label == "speed_limit":
        text = str(int(rng.choice([5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 100, 120])))
    face = object_face(rng, label, text) if label else distractor_face(rng)
    worn = weather(rng, face)
    face = worn if wear else face
    if label == "plate":
        height = float(rng.uniform(0.025, 0.07))
        far = 1.5
    elif label is None:
        height = float(np.exp(rng.uniform(math.log(0.05), math.log(0.35))))
        far = 2.4
    else:
        height = float(np.exp(rng.uniform(math.log(0.05), math.log(0.22))))
        far = 2.4
    width = height * face.aspect
    near, far = forward_range or (0.25, far)
    forward = float(np.exp(rng.uniform(math.log(near), math.log(far))))
    left = float(rng.uniform(-1.0, 1.0) * (forward * 1.1 + 0.05))
    bottom = float(rng.choice([0.0, rng.uniform(0.0, 0.06), rng.uniform(0.0, 0.3)]))
    yaw = float(rng.uniform(-max_yaw, max_yaw))
    corners = _corners(forward, left, bottom + height / 2, width, height, yaw)
    return _Placed(face, corners, label, text, post=bottom > 0.02 and rng.random() < 0.7, forward=forward)


def _box_behind(rng: np.random.Generator, plate: _Placed) -> _Placed:
    """A crate standing on the floor with the plate fixed to its front."""
    c = plate.corners
    top = float(c[0, 2]) + float(rng.uniform(0.01, 0.08))
    w_half = np.linalg.norm(c[0, :2] - c[1, :2]) / 2 + float(rng.uniform(0.01, 0.1))
    centre = (c[0, :2] + c[1, :2]) / 2
    d = (c[0, :2] - c[1, :2]) / max(np.linalg.norm(c[0, :2] - c[1, :2]), 1e-6)
    behind = centre + np.array([0.002, 0.0])
    a, b = behind + d * w_half, behind - d * w_half
    corners = np.array([[a[0], a[1], top], [b[0], b[1], top], [b[0], b[1], 0.0], [a[0], a[1], 0.0]])
    h = 64
    img = np.full((h, int(h * 2 * w_half / max(top, 0.01)) + 1, 3), 0, np.uint8)
    img[:] = tuple(int(v) for v in rng.integers(40, 220, 3))
    return _Placed(Face(img, np.full(img.shape[:2], 255, np.uint8)), corners, None, "", False, plate.forward + 0.002)


def _warp(face: Face, uv: np.ndarray, size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    fh, fw = face.alpha.shape
    src = np.array([[0, 0], [fw, 0], [fw, fh], [0, fh]], np.float32) - 0.5
    m = cv2.getPerspectiveTransform(src, (uv + _MARGIN).astype(np.float32))
    colour = cv2.warpPerspective(face.bgr, m, size, flags=cv2.INTER_AREA if fw > 64 else cv2.INTER_LINEAR)
    alpha = cv2.warpPerspective(face.alpha, m, size, flags=cv2.INTER_LINEAR).astype(np.float32) / 255.0
    return colour, alpha


def _compose(
    img: np.ndarray, placed: list[_Placed], camera: CameraModel
) -> list[tuple[_Placed, np.ndarray, np.ndarray]]:
    """Draw far to near on a canvas with off-frame margins.

    Returns, per labelled object, its face's alpha on that canvas and the part of it left
    visible by what was drawn in front.
    """
    h, w = img.shape[:2]
    size = (w + 2 * _MARGIN, h + 2 * _MARGIN)
    canvas = np.zeros((size[1], size[0], 3), np.float32)
    canvas[_MARGIN : _MARGIN + h, _MARGIN : _MARGIN + w] = img
    visible: list[tuple[_Placed, np.ndarray, np.ndarray]] = []
    for p in sorted(placed, key=lambda q: -q.forward):
        uv, depth = camera.project(p.corners)
        if np.any(depth < 0.05) or np.abs(uv).max() > 4 * (w + h):
            continue
        if p.post:
            foot = p.corners[2:].mean(axis=0)
            ends, _ = camera.project(np.array([foot, [foot[0], foot[1], 0.0]]))
            thick = max(1, round(0.01 * camera.focal_px / max(p.forward, 0.1)))
            top, bottom = (tuple(int(v) for v in e + _MARGIN) for e in ends)
            cv2.line(canvas, top, bottom, (110, 110, 115), thick, cv2.LINE_AA)
        colour, alpha = _warp(p.face, uv, size)
        a = alpha[..., None]
        canvas *= 1.0 - a
        canvas += colour.astype(np.float32) * a
        for _, _, seen in visible:
            seen *= 1.0 - alpha
        if p.label is not None:
            visible.append((p, alpha, alpha.copy()))
    img[:] = np.clip(canvas[_MARGIN : _MARGIN + h, _MARGIN : _MARGIN + w], 0, 255).astype(np.uint8)
    return visible


def _camera_effects(
    img: np.ndarray, rng: np.random.Generator, *, mild: bool = False, skip: Collection[str] = ()
) -> np.ndarray:
    """Exposure, white balance, gamma, vignetting, blur, noise, JPEG (``mild``: less blur and JPEG loss).

    ``skip``: camera factors of :data:`WORLD_FACTORS` not to apply (``exposure``, ``blur``,
    ``sensor_noise``, ``jpeg``); their random draws are made all the same.
    """
    x: np.ndarray = img.astype(np.float32) / 255.0
    exposure = np.float32(np.exp(rng.normal(0.0, 0.3)))
    balance = rng.uniform(0.85, 1.15, 3).astype(np.float32)  # white balance
    gamma = np.float32(rng.uniform(0.7, 1.4))
    if "exposure" not in skip:
        x *= exposure
        x *= balance
        np.clip(x, 0.0, 1.0, out=x)
        x = np.power(x, gamma)
    if rng.random() < 0.5:  # vignetting
        strength = np.float32(rng.uniform(0.1, 0.45))
        if "exposure" not in skip:
            h, w = x.shape[:2]
            yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
            r2 = ((xx - w / 2) / (w / 2)) ** 2 + ((yy - h / 2) / (h / 2)) ** 2
            x *= (1.0 - strength * r2 / 2)[..., None]
    if rng.random() < 0.25:  # motion blur
        k = int(rng.integers(2, 4 if mild else 7)) | 1
        angle = float(rng.uniform(-90, 90))
        if "blur" not in skip:
            kernel: np.ndarray = np.zeros((k, k), np.float32)
            kernel[k // 2, :] = 1.0
            rot = cv2.getRotationMatrix2D(((k - 1) / 2, (k - 1) / 2), angle, 1.0)
            kernel = cv2.warpAffine(kernel, rot, (k, k))
            x = cv2.filter2D(x, -1, kernel / max(kernel.sum(), 1e-6))
    if rng.random() < 0.3:  # defocus
        sigma = float(rng.uniform(0.4, 0.9 if mild else 1.6))
        if "blur" not in skip:
            x = cv2.GaussianBlur(x, (0, 0), sigma)
    noise = rng.standard_normal(x.shape, dtype=np.float32) * np.float32(rng.uniform(0.0, 0.05))
    if "sensor_noise" not in skip:
        x += noise
    out: np.ndarray = np.clip(x * 255.0 + 0.5, 0, 255).astype(np.uint8)
    if rng.random() < 0.4:
        quality = int(rng.integers(45 if mild else 25, 90))
        if "jpeg" not in skip:
            ok, buf = cv2.imencode(".jpg", out, [cv2.IMWRITE_JPEG_QUALITY, quality])
            decoded = cv2.imdecode(buf, cv2.IMREAD_COLOR) if ok else None
            out = out if decoded is None else decoded
    return out


def _roll(image: np.ndarray, mask: np.ndarray, alphas: list[np.ndarray], deg: float) -> tuple[np.ndarray, np.ndarray]:
    h, w = image.shape[:2]
    m = cv2.getRotationMatrix2D(((w - 1) / 2, (h - 1) / 2), deg, 1.0)
    image = cv2.warpAffine(image, m, (w, h), borderMode=cv2.BORDER_REFLECT)
    mask = cv2.warpAffine(mask, m, (w, h))
    big = m.copy()
    big[:, 2] += _MARGIN - m[:, :2] @ np.array([_MARGIN, _MARGIN])
    for i, a in enumerate(alphas):
        alphas[i] = cv2.warpAffine(a, big, (a.shape[1], a.shape[0]))
    return image, mask


def _truth(p: _Placed, full: np.ndarray, seen: np.ndarray, w: int, h: int) -> WorldObject | None:
    ys, xs = np.nonzero(full > 0.5)
    if len(xs) == 0:
        return None
    x0, x1 = xs.min() - _MARGIN, xs.max() + 1 - _MARGIN
    y0, y1 = ys.min() - _MARGIN, ys.max() + 1 - _MARGIN
    bx0, by0, bx1, by1 = max(x0, 0), max(y0, 0), min(x1, w), min(y1, h)
    if bx1 - bx0 < 1 or by1 - by0 < 1:
        return None
    total = float(full.sum())
    inside = float(full[_MARGIN : _MARGIN + h, _MARGIN : _MARGIN + w].sum())
    unhidden = float(seen[_MARGIN : _MARGIN + h, _MARGIN : _MARGIN + w].sum())
    difficult = min(bx1 - bx0, by1 - by0) < 6 or inside < 0.6 * total or unhidden < 0.5 * max(inside, 1e-6)
    box = (float(bx0), float(by0), float(bx1), float(by1))
    return WorldObject(p.label or "", box, p.text, bool(difficult), p.forward)


def render_world_scene(
    seed: int, *, objects: bool = True, plate_focus: bool = False, without: Collection[str] = ()
) -> WorldScene:
    """Render scene ``seed`` of the randomized world (a pure function of ``seed`` and the flags).

    Args:
        objects: place labelled objects and distractors (False: lane scenes only).
        plate_focus: the OCR world: exactly one labelled object, a legible plate
            (at least 40 x 14 px) fully in the frame 0.22..0.6 m ahead with nothing
            in front of it (``objects[0]``), a few distractors behind, milder blur.
        without: factors of :data:`WORLD_FACTORS` to leave out (for a diagnosis, never for
            training); every random draw is still made, so the rest of the scene is unchanged.

    Raises:
        ValueError: a negative seed, or a factor that is not one of :data:`WORLD_FACTORS`
            (``objects`` with ``plate_focus``: the OCR world is its plate).
    """
    if seed < 0:
        raise ValueError("seed must be >= 0")
    off = frozenset(without)
    unknown = sorted(off - WORLD_FACTORS.keys())
    if unknown:
        raise ValueError(f"unknown world factor(s) {', '.join(unknown)}; known: {', '.join(WORLD_FACTORS)}")
    if plate_focus and "objects" in off:
        raise ValueError("the OCR world (plate_focus) cannot be rendered without its objects")
    rng = np.random.default_rng([seed, 0x0C4 if plate_focus else 0x5EED])
    drawn_camera = _CAMERAS[int(rng.integers(len(_CAMERAS)))] if rng.random() < 0.6 else DEFAULT_CAMERA
    camera = DEFAULT_CAMERA if "camera_jitter" in off else drawn_camera
    bend = 0.0 if "bends" in off else _bend(seed, plate_focus)
    spec = dataclasses.replace(_lane_spec(rng), curvature_rate_per_m2=bend)
    look = None if "line_looks" in off else draw_line_look(seed, plate_focus, spec.floor_bgr)
    if look is None:
        image, _, mask = render_with_mask(spec, camera, rng=rng)
    else:
        image, _, _ = render_with_mask(without_boundaries(spec, look), camera, rng=rng)
        mask = paint_boundaries(image, spec, camera, look)

    def canvas(factor: str) -> np.ndarray:
        """The frame, or a scratch copy that a factor switched off draws on (its draws still made)."""
        return image.copy() if factor in off else image

    _extra_lines(canvas("extra_lines"), spec, camera, rng)
    if rng.random() < 0.5:
        _texture_floor(canvas("floor_texture"), camera, rng)
    if rng.random() < 0.8:
        _background(canvas("background"), camera, rng)
    wear = "face_wear" not in off
    placed: list[_Placed] = []
    if plate_focus:
        # placed for the camera drawn, as the full scene is: its draws are the same without camera_jitter
        plate = _plate_in_view(rng, drawn_camera, wear=wear)
        placed.append(plate)
        for _ in range(int(rng.choice([0, 1, 2]))):
            d = _random_placed(rng, None, wear=wear)
            if d.forward > plate.forward + 0.05:
                placed.append(d)
    elif objects:
        for _ in range(int(rng.choice([0, 1, 1, 2, 2, 3, 4]))):
            p = _random_placed(rng, LABELS[int(rng.integers(len(LABELS)))], wear=wear)
            placed.append(p)
            if p.label == "plate" and p.corners[2, 2] < 0.1 and rng.random() < 0.4:
                placed.append(_box_behind(rng, p))
        for _ in range(int(rng.choice([0, 1, 1, 2, 3, 4]))):
            placed.append(_random_placed(rng, None, wear=wear))
    if "objects" in off:
        placed = [p for p in placed if p.label is None]
    if "distractors" in off:
        placed = [p for p in placed if p.label is not None]
    visible = _compose(image, placed, camera) if placed else []
    image = _camera_effects(image, rng, mild=plate_focus, skip=off)
    if rng.random() < 0.5:
        deg = float(rng.uniform(-3.0, 3.0))
        if "roll" not in off:
            alphas = [a for _, full, seen in visible for a in (full, seen)]
            image, mask = _roll(image, mask, alphas, deg)
            visible = [(p, alphas[2 * i], alphas[2 * i + 1]) for i, (p, _, _) in enumerate(visible)]
    h, w = image.shape[:2]
    truths = [_truth(p, full, seen, w, h) for p, full, seen in visible]
    lane = WorldLane(spec.offset_m, spec.heading_rad, spec.curvature_per_m, spec.lane_width_m, *lines_in_view(mask))
    return WorldScene(image, tuple(t for t in truths if t is not None), lane, mask, seed)

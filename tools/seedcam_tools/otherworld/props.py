"""Things standing on the floor: labelled signs and plates with their mounts, and distractors."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

import cv2
import numpy as np
from PIL import Image, ImageDraw

from .assets import fbm, pick_font
from .camera import JitterCamera
from .compose import Compositor, FacePatch, face_basis
from .lanegeom import lane_frame_to_car
from .markings import LanePlan
from .plates import draw_plate, random_plate_text
from .room import random_words
from .signs import Sprite, draw_fitted_text, draw_sign, finish_sprite
from .truth import OTHERWORLD_LABELS

__all__ = ["Piece", "PlacedFace", "plan_props"]

logger = logging.getLogger(__name__)

_LABEL_P = np.array([1.0, 1.0, 0.8, 0.8, 0.9, 0.9, 1.7])
_F = 146.6  # focal length in pixels, for sizing sprites


@dataclass
class PlacedFace:
    """A labelled face placed in the scene (filled in with its patch once drawn).

    Attributes:
        owner: owner id (1-based) in the compositor.
        label: object label.
        text: plate text or speed number.
        patch: where it landed, after drawing.
    """

    owner: int
    label: str
    text: str
    patch: FacePatch | None = None


@dataclass
class Piece:
    """Something to paint, with its distance from the camera for far-to-near ordering."""

    depth: float
    draw: Callable[[Compositor], None]


def _cuboid(centre: np.ndarray, yaw: float, size: tuple[float, float, float]) -> np.ndarray:
    """Corners (8 x 3) of a floor-standing box: centre is its base centre, size = (depth, width, height)."""
    d, w, h = size
    c, s = math.cos(yaw), math.sin(yaw)
    out = []
    for z in (0.0, h):
        for dx, dy in ((-d / 2, -w / 2), (d / 2, -w / 2), (d / 2, w / 2), (-d / 2, w / 2)):
            out.append([centre[0] + c * dx - s * dy, centre[1] + s * dx + c * dy, z])
    return np.array(out)


_BOX_FACES = ((0, 1, 2, 3), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7))


def _draw_cuboid(comp: Compositor, corners: np.ndarray, colour: np.ndarray, owner: int = -1) -> None:
    cam = comp.camera.centre
    centre = corners.mean(axis=0)
    light = np.array([0.3, 0.5, 0.8])
    for face in _BOX_FACES:
        pts = corners[list(face)]
        mid = pts.mean(axis=0)
        n = mid - centre
        n /= np.linalg.norm(n) + 1e-9
        if np.dot(n, mid - cam) >= 0:
            continue
        comp.fill(pts, colour * (0.55 + 0.45 * max(0.0, float(n @ light) / float(np.linalg.norm(light)))), owner)


def _circle3d(centre: np.ndarray, r: float, z: float, n: int = 20) -> np.ndarray:
    a = np.linspace(0, 2 * math.pi, n, endpoint=False)
    return np.stack([centre[0] + r * np.cos(a), centre[1] + r * np.sin(a), np.full(n, z)], axis=1)


def _face_fx(rng: np.random.Generator, rgba: np.ndarray) -> np.ndarray:
    """Fading, dirt and glare on a sprite (float32 result)."""
    sp = rgba.astype(np.float32) / 255.0
    rgb = sp[..., :3]
    h, w = rgb.shape[:2]
    if rng.random() < 0.2:  # faded by the sun
        f = float(rng.uniform(0.15, 0.5))
        grey = rgb.mean(axis=2, keepdims=True)
        rgb[...] = (1 - f) * rgb + f * (0.5 * grey + 0.45)
    if rng.random() < 0.2:  # dirt
        dirty = fbm(rng, (h, w), 3, 4) > float(rng.uniform(0.55, 0.8))
        dirt = cv2.GaussianBlur(dirty.astype(np.float32), (0, 0), max(1.0, w / 40))[..., None]
        rgb[...] = rgb * (1 - 0.5 * dirt) + dirt * np.array([0.15, 0.25, 0.3], np.float32) * 0.5
    if rng.random() < 0.15:  # glare
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        cx, cy = rng.uniform(0, w), rng.uniform(0, h)
        sig = rng.uniform(0.1, 0.35) * w
        g = float(rng.uniform(0.3, 0.8)) * np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * sig * sig))
        rgb[...] = rgb + (1.0 - rgb) * g[..., None]
    return sp


def _lane_to_car(plan: LanePlan, arc: float, lat: float) -> tuple[float, float, float]:
    xl, yl, th = plan.path.point(arc, lat)
    x, y = lane_frame_to_car(np.array(xl), np.array(yl), plan.offset, plan.heading)
    return float(x), float(y), th - plan.heading


def _spot(rng: np.random.Generator, plan: LanePlan, near: bool) -> tuple[float, float] | None:
    for _ in range(12):
        r = rng.random()
        if r < 0.12:  # anywhere in view
            x = float(rng.uniform(0.25, 2.0))
            y = float(rng.uniform(-1.0, 1.0)) * x
        else:
            arc = 0.25 + (0.6 if near else 1.75) * float(rng.random()) ** 1.6
            if r < 0.24:
                lat = float(rng.uniform(-0.3, 0.3)) * plan.width
            else:
                lat = float(rng.choice([-1.0, 1.0])) * (plan.width / 2 + float(rng.uniform(0.04, 0.45)))
            x, y, _ = _lane_to_car(plan, arc, lat)
        if 0.25 <= x <= 2.1 and abs(y) < 1.15 * x + 0.05 and math.hypot(x, y) <= 2.2:
            return x, y
    return None


def _mount(rng: np.random.Generator, label: str, cz: float, fh: float) -> str:
    low = cz - fh / 2 < 0.02
    if low:
        return "none"
    r = rng.random()
    if label == "plate":
        return "post" if r < 0.35 else "box" if r < 0.65 else "panel" if r < 0.9 else "none"
    return "post" if r < 0.75 else "box" if r < 0.88 else "panel" if r < 0.95 else "none"


def _face_piece(
    rng: np.random.Generator,
    placed: PlacedFace,
    sprite: Sprite,
    base: np.ndarray,
    cz: float,
    fw: float,
    fh: float,
    yaw: float,
    mount: str,
    shade: float,
) -> Piece:
    right, up, normal = face_basis(yaw, float(rng.normal(0, 0.06)), float(rng.normal(0, 0.04)))
    centre = np.array([base[0], base[1], cz])
    corners = np.array(
        [centre + sx * fw / 2 * right + sy * fh / 2 * up for sx, sy in ((-1, 1), (1, 1), (1, -1), (-1, -1))]
    )
    ol = sprite.outline
    outline = centre + (ol[:, :1] - 0.5) * fw * right + (0.5 - ol[:, 1:2]) * fh * up
    rgba = _face_fx(rng, sprite.rgba)
    metal = np.array(rng.uniform(0.3, 0.75, 3) if rng.random() < 0.4 else [0.55] * 3, np.float32)
    post_w = float(rng.uniform(0.006, 0.018))
    box_col = np.array(rng.uniform(0.15, 0.8, 3), np.float32)
    box_depth = float(rng.uniform(0.06, 0.25))
    margin = float(rng.uniform(0.01, 0.05))

    def draw(comp: Compositor) -> None:
        back = centre - normal * 0.004
        if mount == "post":
            foot = back.copy()
            foot[2] = 0.0
            top = back - up * fh * 0.3
            comp.shadow(_circle3d(foot, 0.04, 0.0, 10), 0.3)
            comp.fill(
                np.array([foot - right * post_w, foot + right * post_w, top + right * post_w, top - right * post_w]),
                metal,
            )
            comp.fill(_circle3d(foot, 0.03, 0.004, 10), metal * 0.6)
        elif mount in ("box", "panel"):
            height = cz + fh / 2 + margin
            width = fw + 2 * margin
            depth = box_depth if mount == "box" else 0.012
            foot = back - normal * depth / 2
            corners_b = _cuboid(foot, yaw, (depth, width, height))
            comp.shadow(corners_b[:4], 0.35)
            _draw_cuboid(comp, corners_b, box_col)
        placed.patch = comp.sprite(rgba, corners, outline, placed.owner, shade)

    return Piece(depth=float(np.hypot(base[0], base[1])), draw=draw)


def _distractor(rng: np.random.Generator, x: float, y: float, scale: float = 1.0) -> Piece:
    kind = str(rng.choice(["box", "cone", "cylinder", "disc", "board", "ball"], p=[0.3, 0.18, 0.14, 0.14, 0.14, 0.1]))
    base = np.array([x, y, 0.0])
    yaw = float(rng.uniform(-math.pi, math.pi))
    col = np.array(rng.uniform(0.1, 0.9, 3), np.float32)
    if kind == "box":
        if rng.random() < 0.5:
            col = np.array([0.35, 0.55, 0.7], np.float32) * float(rng.uniform(0.7, 1.1))  # cardboard
        depth, width, height = (float(v) * scale for v in rng.uniform([0.08, 0.08, 0.05], [0.4, 0.5, 0.35]))

        def draw(comp: Compositor) -> None:
            c = _cuboid(base, yaw, (depth, width, height))
            comp.shadow(c[:4] * [1.05, 1.05, 0], 0.4)
            _draw_cuboid(comp, c, col)
    elif kind in ("cone", "cylinder"):
        r = float(rng.uniform(0.03, 0.1)) * scale
        h = float(rng.uniform(0.08, 0.35)) * scale
        cone_col = np.array([0.1, 0.4, 0.95], np.float32) if kind == "cone" else col

        def draw(comp: Compositor) -> None:
            comp.shadow(_circle3d(base, r * 1.3, 0.0), 0.4)
            if kind == "cone":
                apex = base + [0, 0, h]
                comp.fill(np.vstack([_circle3d(base, r * 1.2, 0.0), _circle3d(base, r * 1.2, 0.01)]), cone_col * 0.3)
                comp.fill(np.vstack([_circle3d(base, r, 0.01), apex]), cone_col)
                comp.fill(
                    np.vstack([_circle3d(base, r * 0.55, h * 0.45), _circle3d(base, r * 0.35, h * 0.65)]),
                    np.array([0.92, 0.92, 0.92], np.float32),
                )
                comp.fill(np.vstack([_circle3d(base, r * 0.34, h * 0.66), apex]), cone_col)
            else:
                comp.fill(np.vstack([_circle3d(base, r, 0.0), _circle3d(base, r, h)]), cone_col)
                comp.fill(_circle3d(base, r, h), cone_col * 1.15)
    elif kind in ("disc", "board"):
        size = float(rng.uniform(0.06, 0.3)) * scale
        cz = float(rng.uniform(size / 2 + 0.01, 0.35))
        sprite = _disc_sprite(rng) if kind == "disc" else _board_sprite(rng)
        aspect = sprite.rgba.shape[1] / sprite.rgba.shape[0]
        fw, fh = size * min(aspect, 1.8), size * min(aspect, 1.8) / aspect
        nyaw = math.atan2(-y, -x) + float(rng.uniform(-0.7, 0.7))
        right, up, _n = face_basis(nyaw)
        centre = np.array([x, y, cz])
        corners = np.array(
            [centre + sx * fw / 2 * right + sy * fh / 2 * up for sx, sy in ((-1, 1), (1, 1), (1, -1), (-1, -1))]
        )
        post = rng.random() < 0.7

        def draw(comp: Compositor) -> None:
            if post:
                comp.fill(
                    np.array(
                        [base - right * 0.008, base + right * 0.008, centre + right * 0.008, centre - right * 0.008]
                    ),
                    np.array([0.5, 0.5, 0.5], np.float32),
                )
            comp.sprite(sprite.rgba, corners, corners, -1)
    else:
        r = float(rng.uniform(0.03, 0.12)) * scale
        ball_col = np.array([0.15, 0.15, 0.85] if rng.random() < 0.5 else rng.uniform(0.1, 0.9, 3), np.float32)

        def draw(comp: Compositor) -> None:
            comp.shadow(_circle3d(base, r, 0.0), 0.5)
            pts = np.vstack(
                [_circle3d(base, r * math.sin(a) + 1e-4, r - r * math.cos(a), 16) for a in np.linspace(0.0, math.pi, 9)]
            )
            comp.fill(pts, ball_col)
            comp.fill(_circle3d(base, r * 0.35, r * 1.7, 8) + [-0.3 * r, 0.3 * r, 0], ball_col * 0.6 + 0.4)

    return Piece(depth=float(math.hypot(x, y)), draw=draw)


def _disc_sprite(rng: np.random.Generator) -> Sprite:
    s = 128
    im = Image.new("RGBA", (s, s), (0, 0, 0, 0))
    d = ImageDraw.Draw(im)
    kind = int(rng.integers(5))
    if kind == 0:  # red disc, white bar
        d.ellipse((0, 0, s - 1, s - 1), fill=(200, 25, 30, 255))
        d.rectangle((s * 0.18, s * 0.42, s * 0.82, s * 0.58), fill=(250, 250, 250, 255))
    elif kind == 1:  # blue disc, red ring and cross
        d.ellipse((0, 0, s - 1, s - 1), fill=(200, 25, 30, 255))
        d.ellipse((s * 0.12, s * 0.12, s * 0.88, s * 0.88), fill=(30, 80, 180, 255))
        d.line([(s * 0.2, s * 0.2), (s * 0.8, s * 0.8)], fill=(200, 25, 30, 255), width=int(s * 0.1))
    elif kind == 2:  # plain coloured disc
        d.ellipse((0, 0, s - 1, s - 1), fill=tuple(int(v) for v in rng.integers(0, 256, 3)) + (255,))
    elif kind == 3:  # warning triangle with exclamation mark
        d.polygon([(s / 2, 4), (s - 4, s - 12), (4, s - 12)], fill=(205, 25, 30, 255))
        d.polygon([(s / 2, 30), (s - 30, s - 24), (30, s - 24)], fill=(250, 250, 250, 255))
        d.rectangle((s / 2 - 4, 50, s / 2 + 4, 82), fill=(15, 15, 15, 255))
        d.rectangle((s / 2 - 4, 88, s / 2 + 4, 96), fill=(15, 15, 15, 255))
    else:  # round target / clock-like face
        d.ellipse((0, 0, s - 1, s - 1), fill=(240, 240, 240, 255))
        for k in range(3):
            m = s * (0.12 + 0.13 * k)
            d.ellipse((m, m, s - 1 - m, s - 1 - m), outline=(30, 30, 30, 255), width=5)
    return finish_sprite(im.resize((s * 2, s * 2)), np.array([[0, 0], [1, 0], [1, 1], [0, 1]], float), "")


def _board_sprite(rng: np.random.Generator) -> Sprite:
    w, h = 256, int(rng.integers(120, 300))
    bg = tuple(int(v) for v in rng.integers(120, 256, 3))
    im = Image.new("RGBA", (w, h), bg + (255,))
    d = ImageDraw.Draw(im)
    ink = tuple(int(v) for v in rng.integers(0, 100, 3)) + (255,)
    lines = random_words(rng, int(rng.integers(2, 5)))
    step = h / (len(lines) + 0.5)
    for i, word in enumerate(lines):
        draw_fitted_text(
            d, word, (10, i * step + 8, w - 10, (i + 1) * step), pick_font(rng, "sans", "serif", "fancy"), ink
        )
    return finish_sprite(im.resize((w * 2, h * 2)), np.array([[0, 0], [1, 0], [1, 1], [0, 1]], float), "")


def plan_props(
    rng: np.random.Generator, plan: LanePlan, shade: float, camera: JitterCamera
) -> tuple[list[PlacedFace], list[Piece]]:
    """Choose the labelled objects and distractors of a scene.

    Args:
        rng: the scene's random generator.
        plan: the lane (objects stand beside, around and sometimes on it).
        shade: scene light level for faces.
        camera: the scene camera (most faces are kept with their centre in view).

    Returns:
        ``(faces, pieces)``: labelled faces (truth filled in when drawn) and all pieces to paint.
    """
    faces: list[PlacedFace] = []
    pieces: list[Piece] = []
    n = int(rng.choice(5, p=[0.18, 0.32, 0.25, 0.15, 0.10]))
    taken: list[tuple[float, float]] = []
    for _ in range(n):
        label = OTHERWORLD_LABELS[int(rng.choice(7, p=_LABEL_P / _LABEL_P.sum()))]
        spot = _spot(rng, plan, near=label == "plate" and rng.random() < 0.7)
        if spot is None or any(math.hypot(spot[0] - a, spot[1] - b) < 0.15 for a, b in taken):
            continue
        x, y = spot
        dist = math.hypot(x, y)
        uv, _ = camera.project(np.array([[x, y, 0.12]]))
        inside = 5 <= uv[0, 0] <= camera.width - 5 and 5 <= uv[0, 1] <= camera.height - 5
        if not inside and rng.random() < 0.8:
            continue
        taken.append(spot)
        if label == "plate":
            text = random_plate_text(rng)
            fw = float(rng.uniform(0.10, 0.24))
            px = _F * fw / dist
            sprite, aspect = draw_plate(rng, text, int(np.clip(1.3 * px / 3.0, 16, 80)))
            fh = fw / aspect
        else:
            fw = fh = float(rng.uniform(0.06, 0.20))
            sprite = draw_sign(label, rng, int(np.clip(1.3 * _F * fw / dist, 24, 160)))
            text = sprite.text
        cz = float(rng.uniform(fh / 2 + 0.003, max(fh / 2 + 0.01, 0.35)))
        if rng.random() < 0.5:
            cz = min(cz, float(rng.uniform(fh / 2 + 0.003, 0.2)))
        yaw = math.atan2(-y, -x) + float(np.clip(rng.normal(0, 0.35), -0.8, 0.8))
        placed = PlacedFace(owner=len(faces) + 1, label=label, text=text)
        faces.append(placed)
        shade_i = shade * float(rng.uniform(0.8, 1.15))
        pieces.append(
            _face_piece(rng, placed, sprite, np.array([x, y]), cz, fw, fh, yaw, _mount(rng, label, cz, fh), shade_i)
        )
        if rng.random() < 0.12:  # an occluder between the camera and the face
            q = float(rng.uniform(0.45, 0.8))
            side = np.array([-y, x]) / dist * float(rng.choice([-1, 1])) * float(rng.uniform(0.3, 1.0)) * fw
            pieces.append(_distractor(rng, q * x + side[0], q * y + side[1], scale=0.8))
    for _ in range(int(rng.choice(6, p=[0.2, 0.25, 0.2, 0.15, 0.1, 0.1]))):
        x = float(rng.uniform(0.3, 3.5))
        y = float(rng.uniform(-1.2, 1.2)) * x
        if any(math.hypot(x - a, y - b) < 0.2 for a, b in taken):
            continue
        if (
            any(
                math.hypot(x, y) < math.hypot(a, b) and abs(math.atan2(y, x) - math.atan2(b, a)) < 0.25
                for a, b in taken
            )
            and rng.random() < 0.85
        ):
            continue  # mostly keep random clutter out of the line of sight to the faces
        pieces.append(_distractor(rng, x, y))
    return faces, pieces

"""The room above the floor: a far wall with procedural clutter, and its reflection on glossy floors."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import cv2
import numpy as np
from PIL import Image, ImageDraw

from .assets import backdrop, backdrop_names, fbm, font, pick_font, sample_points

__all__ = ["Wall", "random_words", "sample_wall", "wall_colour", "wall_hit"]

logger = logging.getLogger(__name__)

_RES = 0.02  # metres per canvas pixel
_HALF_W = 9.0
_TOP = 4.0
_WORDS = (
    "safety first",
    "aisle",
    "keep clear",
    "loading zone",
    "caution",
    "exit",
    "storage",
    "fragile",
    "inventory",
    "workshop",
    "lab",
    "quiet please",
    "this side up",
    "handle with care",
    "hello",
    "welcome",
    "office",
    "maintenance",
    "charging",
    "robot lab",
    "no smoking",
    "push",
    "pull",
    "fire door",
    "level two",
)


def random_words(rng: np.random.Generator, n: int) -> list[str]:
    """Poster-like words and pseudo-words (never plate-like codes)."""
    out = []
    for _ in range(n):
        if rng.random() < 0.6:
            out.append(str(rng.choice(_WORDS)))
        else:
            vowels, cons = "aeiou", "bcdfghklmnprstvw"
            out.append(
                "".join(
                    (cons if i % 2 == 0 else vowels)[int(rng.integers(5 if i % 2 else 16))]
                    for i in range(int(rng.integers(4, 9)))
                )
            )
    return out


@dataclass(frozen=True)
class Wall:
    """A vertical wall plane facing the camera, with its painted canvas.

    Attributes:
        dist: distance of the plane from the car origin along its normal.
        yaw: direction of the normal (0 = straight ahead).
        levels: float32 BGR canvas and its pyramid; rows from z = ``_TOP`` down to 0, columns
            along the wall from left to right as seen from the camera.
    """

    dist: float
    yaw: float
    levels: tuple[np.ndarray, ...]


def _px(z: float) -> int:
    return int((_TOP - z) / _RES)


def _col(h: float) -> int:
    return int((h + _HALF_W) / _RES)


def _rgb(rng: np.random.Generator, lo: float = 0.1, hi: float = 0.9) -> tuple[float, float, float]:
    r, g, b = (float(v) for v in rng.uniform(lo, hi, 3))
    return r, g, b


def _base(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    kind = rng.random()
    grey = float(rng.uniform(0.45, 0.92))
    col = np.clip(grey + rng.normal(0.0, 0.07, 3), 0.1, 1.0).astype(np.float32)
    if kind < 0.3:  # painted plaster
        mott = cv2.resize(fbm(rng, (h // 2, w // 2), 8, 4), (w, h), interpolation=cv2.INTER_LINEAR)
        return col * (0.9 + 0.15 * mott[..., None])
    if kind < 0.5:  # brick or block courses
        tex = np.empty((h, w, 3), np.float32)
        tex[:] = col * 0.75
        course = int(rng.choice([5, 13]))
        brick = course * int(rng.choice([3, 2]))
        base = np.array(_rgb(rng, 0.25, 0.7), np.float32)
        for r in range(0, h, course):
            off = (r // course % 2) * brick // 2
            for c in range(-off, w, brick):
                tone = base * float(1.0 + rng.normal(0, 0.08))
                tex[r + 1 : r + course, max(c + 1, 0) : c + brick] = tone
        return tex
    if kind < 0.7:  # a backdrop image as wallpaper or mural
        img = backdrop(str(rng.choice(backdrop_names()))).astype(np.float32) / 255.0
        tile = cv2.resize(img, (int(rng.integers(120, 300)),) * 2, interpolation=cv2.INTER_AREA)
        reps = (h // tile.shape[0] + 1, w // tile.shape[1] + 1, 1)
        return np.tile(tile, reps)[:h, :w] * float(rng.uniform(0.6, 1.0))
    tex = np.empty((h, w, 3), np.float32)  # vertical panels
    pw = int(rng.integers(30, 90))
    for c in range(0, w, pw):
        tex[:, c : c + pw] = col * float(1.0 + rng.normal(0, 0.05))
        tex[:, c : c + 1] *= 0.6
    return tex


def _poster(rng: np.random.Generator, wpx: int, hpx: int) -> np.ndarray:
    bg = tuple(int(v) for v in rng.integers(0, 256, 3))
    im = Image.new("RGB", (wpx, hpx), bg)
    draw = ImageDraw.Draw(im)
    ink = tuple(255 - v for v in bg) if rng.random() < 0.7 else tuple(int(v) for v in rng.integers(0, 256, 3))
    y = 2
    for word in random_words(rng, int(rng.integers(1, 4))):
        size = int(rng.integers(max(6, hpx // 8), max(8, hpx // 3)))
        draw.text(
            (3, y),
            word if rng.random() < 0.5 else word.title(),
            fill=ink,
            font=font(pick_font(rng, "sans", "serif", "fancy", "sans_bold"), size),
        )
        y += size + 2
    return np.asarray(im, np.float32)[..., ::-1] / 255.0


def _clutter(rng: np.random.Generator, tex: np.ndarray, cam_z: float) -> None:
    h, w = tex.shape[:2]
    floor_row = _px(0.0)
    for _ in range(int(rng.integers(0, 4))):  # shelving racks with boxes
        c0 = _col(rng.uniform(-_HALF_W, _HALF_W - 2))
        c1 = c0 + int(rng.uniform(1.0, 3.0) / _RES)
        upright = _rgb(rng, 0.1, 0.9)
        levels = [_px(z) for z in np.arange(0.05, rng.uniform(1.0, 2.5), rng.uniform(0.3, 0.6))]
        for r in levels:
            x = c0
            while x < c1:
                bw = int(rng.integers(8, 40))
                bh = int(rng.integers(6, 25))
                cv2.rectangle(tex, (x, r - bh), (x + bw, r), _rgb(rng, 0.2, 0.9), -1)
                x += bw + int(rng.integers(0, 10))
            cv2.rectangle(tex, (c0, r), (c1, r + 4), upright, -1)
        for c in (c0, c1):
            cv2.rectangle(tex, (c - 3, levels[-1] - 30), (c + 3, floor_row), upright, -1)
    for _ in range(int(rng.integers(0, 3))):  # doors
        c0 = _col(rng.uniform(-_HALF_W, _HALF_W - 1))
        cv2.rectangle(tex, (c0, _px(2.0)), (c0 + int(0.9 / _RES), floor_row), _rgb(rng, 0.15, 0.7), -1)
        cv2.circle(tex, (c0 + int(0.8 / _RES), _px(1.0)), 2, (0.8, 0.8, 0.8), -1)
    if rng.random() < 0.3:  # a bright band near the camera's horizon (windows, lit gap, light strip)
        z0 = cam_z + rng.uniform(-0.1, 0.25)
        band = rng.uniform(0.03, 0.4)
        tex[max(_px(z0 + band), 0) : _px(max(z0, 0.0)), :] = float(rng.uniform(1.1, 1.6))
    for _ in range(int(rng.integers(0, 5))):  # posters and notices
        pw = int(rng.uniform(0.3, 1.2) / _RES)
        ph = int(pw * rng.uniform(0.4, 1.4))
        r0 = _px(rng.uniform(0.3, 1.8)) - ph
        c0 = _col(rng.uniform(-_HALF_W, _HALF_W - 1.5))
        if r0 < 0 or c0 + pw >= w:
            continue
        tex[r0 : r0 + ph, c0 : c0 + pw] = _poster(rng, pw, ph)
    bh = int(rng.uniform(0.04, 0.15) / _RES)  # baseboard
    tex[floor_row - bh : floor_row + 1] = np.array(_rgb(rng, 0.1, 0.8), np.float32)


def sample_wall(rng: np.random.Generator, cam_z: float) -> Wall:
    """Draw the room wall: distance, direction and painted canvas.

    Args:
        rng: the scene's random generator.
        cam_z: camera height (for bright bands near the horizon).
    """
    h, w = int(_TOP / _RES) + 1, int(2 * _HALF_W / _RES)
    tex = _base(rng, h, w)
    _clutter(rng, tex, cam_z)
    ceiling = _px(float(rng.uniform(2.2, 3.2)))
    tex[:ceiling] = np.array(_rgb(rng, 0.15, 0.5), np.float32) * 0.8
    if rng.random() < 0.5:  # ceiling lights
        for c in range(int(rng.integers(0, w // 4)), w, int(rng.integers(60, 200))):
            tex[max(ceiling - 6, 0) : ceiling, c : c + 40] = 1.8
    dist = float(rng.uniform(2.6, 9.0))
    levels: list[np.ndarray] = [np.ascontiguousarray(tex, np.float32)]
    for _ in range(3):
        levels.append(cv2.pyrDown(levels[-1]))
    return Wall(dist=dist, yaw=float(rng.uniform(-0.45, 0.45)), levels=tuple(levels))


def wall_hit(wall: Wall, origin: np.ndarray, dirs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where rays meet the wall.

    Args:
        wall: the wall.
        origin: N x 3 (or 3,) ray origins in the car frame.
        dirs: N x 3 ray directions.

    Returns:
        ``(t, col, row)``: N ray parameters (inf where the ray misses) and canvas coordinates.
    """
    ca, sa = math.cos(wall.yaw), math.sin(wall.yaw)
    origin = np.broadcast_to(np.asarray(origin, np.float64), dirs.shape)
    denom = dirs[:, 0] * ca + dirs[:, 1] * sa
    o_m = origin[:, 0] * ca + origin[:, 1] * sa
    ok = denom > 1e-4
    t = np.where(ok, (wall.dist - o_m) / np.where(ok, denom, 1.0), np.inf)
    t = np.where(t > 0, t, np.inf)
    tt = np.where(np.isfinite(t), t, 0.0)
    px = origin[:, 0] + tt * dirs[:, 0]
    py = origin[:, 1] + tt * dirs[:, 1]
    pz = origin[:, 2] + tt * dirs[:, 2]
    col = ((px * sa - py * ca) + _HALF_W) / _RES
    row = (_TOP - pz) / _RES
    return t, col, row


def wall_colour(wall: Wall, t: np.ndarray, col: np.ndarray, row: np.ndarray, blur_level: float = 0.0) -> np.ndarray:
    """Canvas colour at wall hits (N x 3 float32), filtered for the viewing distance.

    Args:
        wall: the wall.
        t, col, row: from :func:`wall_hit`.
        blur_level: extra pyramid levels of blur (reflections on rough floors).
    """
    finite = np.isfinite(t)
    dist = float(np.median(t[finite])) if finite.any() else wall.dist
    level = int(np.clip(round(math.log2(max(dist / 147.0 / _RES, 1.0)) + blur_level), 0, len(wall.levels) - 1))
    scale = 0.5**level
    out = sample_points(wall.levels[level], col * scale, row * scale, cv2.BORDER_REPLICATE)
    out[~finite] = 0.12
    return out

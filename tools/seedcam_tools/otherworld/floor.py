"""Floor materials (procedural and from backdrop images), mip-mapped sampling and floor lighting."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import cv2
import numpy as np

from .assets import backdrop, fbm, sample_points

__all__ = ["FloorMaterial", "floor_lighting", "sample_floor_material", "shade_floor"]

logger = logging.getLogger(__name__)

_N = 256  # texels across a material tile
_FLOOR_KINDS = ("concrete", "wood", "tiles", "carpet", "asphalt", "epoxy", "image")
_KIND_P = (0.22, 0.15, 0.15, 0.12, 0.1, 0.12, 0.14)


@dataclass(frozen=True)
class FloorMaterial:
    """A floor texture tile and how it lies on the floor.

    Attributes:
        kind: material family.
        levels: mip levels of the BGR float32 tile (level 0 is ``_N`` texels across).
        tile_m: metres covered by one tile edge.
        angle, shift_x, shift_y: placement of the texture on the floor.
        gloss: 0 (matte) .. 1 (mirror-like epoxy).
    """

    kind: str
    levels: tuple[np.ndarray, ...]
    tile_m: float
    angle: float
    shift_x: float
    shift_y: float
    gloss: float

    @property
    def mean_colour(self) -> np.ndarray:
        """Average BGR colour of the material."""
        return self.levels[-1].reshape(-1, 3).mean(axis=0)


def _tint(rng: np.random.Generator, base: tuple[float, float, float], spread: float = 0.06) -> np.ndarray:
    return np.clip(np.array(base) + rng.normal(0.0, spread, 3), 0.02, 0.98).astype(np.float32)


def _concrete(rng: np.random.Generator) -> tuple[np.ndarray, float, float]:
    grey = float(rng.uniform(0.4, 0.72))
    col = _tint(rng, (grey, grey + 0.01, grey + 0.02), 0.03)
    mott = fbm(rng, (_N, _N), 3, 5, 0.55)[..., None]
    speck = rng.normal(0.0, 0.035, (_N, _N, 1)).astype(np.float32)
    tex = col * (0.82 + 0.3 * mott) + speck
    if rng.random() < 0.5:  # saw-cut joint along one tile edge
        tex[:2, :] *= 0.6
        tex[:, :2] *= 0.6
    for _ in range(int(rng.integers(0, 3))):  # hairline cracks
        pts = np.cumsum(rng.normal(0, 9, (8, 2)), axis=0) + rng.uniform(0, _N, 2)
        cv2.polylines(tex, [pts.astype(np.int32)], False, (col * 0.55).tolist(), 1, cv2.LINE_AA)
    return tex, float(rng.uniform(1.2, 2.5)), float(rng.uniform(0.0, 0.35))


def _wood(rng: np.random.Generator) -> tuple[np.ndarray, float, float]:
    base = _tint(rng, (0.25, 0.45, 0.62) if rng.random() < 0.75 else (0.55, 0.58, 0.6), 0.06)
    planks = int(rng.integers(4, 9))
    tex = np.empty((_N, _N, 3), np.float32)
    pw = _N // planks
    grain = fbm(rng, (_N, 16), 8, 3)
    grain = cv2.resize(grain, (_N * 4, _N), interpolation=cv2.INTER_LINEAR)[:, :_N]
    for i in range(planks):
        tone = 1.0 + rng.normal(0, 0.09)
        rows = slice(i * pw, (i + 1) * pw if i < planks - 1 else _N)
        g = np.roll(grain, int(rng.integers(_N)), axis=1)[rows]
        tex[rows] = base * tone * (0.8 + 0.35 * g[..., None])
        tex[i * pw : i * pw + 1] *= 0.55
        cut = int(rng.integers(_N))
        tex[rows, cut : cut + 1] *= 0.6
    tex += rng.normal(0, 0.015, tex.shape).astype(np.float32)
    return tex, float(planks * rng.uniform(0.08, 0.18)), float(rng.uniform(0.05, 0.5))


def _tiles(rng: np.random.Generator) -> tuple[np.ndarray, float, float]:
    n = int(rng.choice([2, 4]))
    palette = [(0.85, 0.86, 0.86), (0.6, 0.62, 0.64), (0.6, 0.72, 0.8), (0.25, 0.35, 0.62), (0.3, 0.3, 0.32)]
    a = _tint(rng, palette[int(rng.integers(len(palette)))], 0.04)
    b = _tint(rng, palette[int(rng.integers(len(palette)))], 0.04) if rng.random() < 0.3 else a
    step = _N // n
    tex = np.empty((_N, _N, 3), np.float32)
    for i in range(n):
        for j in range(n):
            c = (a if (i + j) % 2 == 0 else b) * (1.0 + rng.normal(0, 0.035))
            tex[i * step : (i + 1) * step, j * step : (j + 1) * step] = c
    tex *= 0.93 + 0.1 * fbm(rng, (_N, _N), 6, 3)[..., None]
    grout = max(1, int(rng.integers(1, 5)))
    gcol = _tint(rng, (0.45, 0.47, 0.5), 0.1)
    for k in range(n):
        tex[k * step : k * step + grout] = gcol
        tex[:, k * step : k * step + grout] = gcol
    return tex, float(n * rng.uniform(0.15, 0.5)), float(rng.uniform(0.2, 0.7))


def _carpet(rng: np.random.Generator) -> tuple[np.ndarray, float, float]:
    palette = [(0.4, 0.4, 0.42), (0.5, 0.3, 0.2), (0.2, 0.2, 0.5), (0.3, 0.45, 0.3), (0.35, 0.4, 0.5)]
    col = _tint(rng, palette[int(rng.integers(len(palette)))], 0.05)
    fine = cv2.GaussianBlur(rng.random((_N, _N, 1)).astype(np.float32), (3, 3), 0.7)[..., None]
    tex = col * (0.7 + 0.5 * fine) * (0.9 + 0.2 * fbm(rng, (_N, _N), 4, 3)[..., None])
    if rng.random() < 0.5:  # carpet tiles laid in alternating directions
        h = _N // 2
        tex[:h, :h] *= 0.92
        tex[h:, h:] *= 0.92
    return tex, float(rng.uniform(0.5, 1.2)), 0.0


def _asphalt(rng: np.random.Generator) -> tuple[np.ndarray, float, float]:
    grey = float(rng.uniform(0.16, 0.32))
    tex = np.full((_N, _N, 3), grey, np.float32) * _tint(rng, (1.0, 1.0, 1.0), 0.03)
    agg = rng.random((_N, _N)).astype(np.float32)
    tex += ((agg > 0.93) * 0.18 - (agg < 0.05) * 0.08)[..., None]
    tex *= 0.85 + 0.3 * fbm(rng, (_N, _N), 3, 4)[..., None]
    return cv2.GaussianBlur(tex, (3, 3), 0.6), float(rng.uniform(0.4, 1.0)), float(rng.uniform(0.0, 0.2))


def _epoxy(rng: np.random.Generator) -> tuple[np.ndarray, float, float]:
    palette = [(0.55, 0.56, 0.55), (0.42, 0.55, 0.35), (0.6, 0.5, 0.4), (0.7, 0.7, 0.68), (0.45, 0.45, 0.6)]
    col = _tint(rng, palette[int(rng.integers(len(palette)))], 0.04)
    tex = col * (0.93 + 0.12 * fbm(rng, (_N, _N), 2, 4)[..., None])
    if rng.random() < 0.5:  # decorative flakes
        flakes = rng.random((_N, _N)) > 0.985
        tex[flakes] = rng.uniform(0.1, 0.95, (int(flakes.sum()), 3))
    return tex.astype(np.float32), float(rng.uniform(1.0, 3.0)), float(rng.uniform(0.5, 1.0))


def _image(rng: np.random.Generator) -> tuple[np.ndarray, float, float]:
    name = str(
        rng.choice(
            [
                "wood-l.webp",
                "wood-d.webp",
                "grid-l.webp",
                "grid-d.webp",
                "pixels-l.webp",
                "truchet-l.webp",
                "licorice-l.webp",
            ]
        )
    )
    img = backdrop(name).astype(np.float32) / 255.0
    y0, x0 = (int(v) for v in rng.integers(0, 256, 2))
    tex = cv2.resize(img[y0 : y0 + 256, x0 : x0 + 256], (_N, _N), interpolation=cv2.INTER_AREA)
    grey = tex.mean(axis=2, keepdims=True)
    sat = float(rng.uniform(0.1, 0.6)) if "wood" not in name else float(rng.uniform(0.7, 1.0))
    tex = grey + sat * (tex - grey)
    tex = tex * float(rng.uniform(0.7, 1.1)) + float(rng.uniform(-0.05, 0.1))
    return tex.astype(np.float32), float(rng.uniform(0.3, 1.0)), float(rng.uniform(0.0, 0.5))


_MAKERS = {
    "concrete": _concrete,
    "wood": _wood,
    "tiles": _tiles,
    "carpet": _carpet,
    "asphalt": _asphalt,
    "epoxy": _epoxy,
    "image": _image,
}


def sample_floor_material(rng: np.random.Generator) -> FloorMaterial:
    """Draw a floor material with its mip levels and placement.

    Args:
        rng: the scene's random generator.
    """
    kind = str(rng.choice(_FLOOR_KINDS, p=np.array(_KIND_P) / sum(_KIND_P)))
    tex, tile_m, gloss = _MAKERS[kind](rng)
    tex = np.clip(tex, 0.0, 1.0).astype(np.float32)
    if rng.random() < 0.5:  # stains and dirt
        stained = fbm(rng, (_N, _N), 3, 4) > float(rng.uniform(0.7, 0.85))
        blot = cv2.GaussianBlur(stained.astype(np.float32), (0, 0), 3.0)[..., None]
        tex = tex * (1.0 - float(rng.uniform(0.1, 0.35)) * blot * _tint(rng, (1.0, 0.9, 0.8), 0.1))
    levels = [tex]
    while levels[-1].shape[0] > 8:
        levels.append(cv2.pyrDown(levels[-1]))
    return FloorMaterial(
        kind,
        tuple(levels),
        tile_m,
        float(rng.uniform(0, math.pi)),
        float(rng.uniform(0, 10)),
        float(rng.uniform(0, 10)),
        gloss,
    )


def _mirror(t: np.ndarray, n: int) -> np.ndarray:
    period = 2.0 * (n - 1)
    m = np.mod(t, period)
    return np.where(m > n - 1, period - m, m).astype(np.float32)


def shade_floor(material: FloorMaterial, x: np.ndarray, y: np.ndarray, foot_m: np.ndarray) -> np.ndarray:
    """Sample the material at floor points with trilinear mip filtering.

    Args:
        material: the floor material.
        x, y: N car-frame floor coordinates (the floor pixels, flattened).
        foot_m: N pixel footprints on the floor, metres.

    Returns:
        N x 3 float32 BGR albedo.
    """
    c, s = math.cos(material.angle), math.sin(material.angle)
    texel = material.tile_m / _N
    tu = ((c * x - s * y + material.shift_x) / texel).astype(np.float32)
    tv = ((s * x + c * y + material.shift_y) / texel).astype(np.float32)
    lod = np.clip(np.log2(np.maximum(foot_m / texel, 1e-3)), 0.0, len(material.levels) - 1.0001).astype(np.float32)
    out = np.zeros((x.shape[0], 3), np.float32)
    for li, level in enumerate(material.levels):
        wgt = 1.0 - np.abs(lod - li)
        sel = np.flatnonzero(wgt > 0)
        if sel.size == 0:
            continue
        n = level.shape[0]
        scale = n / _N
        got = sample_points(level, _mirror(tu[sel] * scale, n), _mirror(tv[sel] * scale, n))
        out[sel] += wgt[sel, None] * got
    return out


def _sigmoid(t: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * t))


def floor_lighting(rng: np.random.Generator, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Light falling on the floor: ambient level, light pools and soft shadows.

    Args:
        rng: the scene's random generator.
        x, y: N floor coordinates.

    Returns:
        N float32 multipliers.
    """
    light = np.full(x.shape, float(rng.uniform(0.65, 1.05)), np.float32)
    for _ in range(int(rng.integers(0, 4))):
        cx, cy = rng.uniform(0.3, 5.0), rng.uniform(-3.0, 3.0)
        sig = rng.uniform(0.4, 2.0)
        light += float(rng.uniform(0.1, 0.45)) * np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * sig * sig))
    if rng.random() < 0.35:  # a soft shadow band (shelf, door frame, person)
        ang = rng.uniform(0, math.pi)
        d = math.cos(ang) * x + math.sin(ang) * y - rng.uniform(0.2, 2.5)
        width = rng.uniform(0.1, 0.8)
        soft = rng.uniform(0.02, 0.15)
        band = _sigmoid((width / 2 - np.abs(d)) / soft)
        light *= 1.0 - float(rng.uniform(0.25, 0.6)) * band
    if rng.random() < 0.3:  # the robot's own shadow at the bottom of the view
        r = np.hypot((x - 0.0) / rng.uniform(0.15, 0.3), y / rng.uniform(0.1, 0.25))
        light *= 1.0 - float(rng.uniform(0.2, 0.5)) * _sigmoid((1.0 - r) / 0.15)
    return light.astype(np.float32)

"""Sign face designs of the evaluation world, drawn with Pillow as RGBA sprites."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

from .assets import font, pick_font

__all__ = ["Sprite", "draw_fitted_text", "draw_sign", "finish_sprite"]

logger = logging.getLogger(__name__)

_SPEEDS = (5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120)
_STOP_WORDS = ("STOP", "STOP", "STOP", "STOP", "HALT", "ARRET", "ALTO", "PARE", "STOPP", "DUR")


@dataclass(frozen=True)
class Sprite:
    """A drawn face.

    Attributes:
        rgba: H x W x 4 uint8, BGR colour and alpha.
        outline: N x 2 face outline in [0, 1] sprite coordinates (x right, y down), convex.
        text: the number or plate text it shows ('' otherwise).
    """

    rgba: np.ndarray
    outline: np.ndarray
    text: str


def _c(rng: np.random.Generator, base: tuple[int, int, int], spread: float = 12.0) -> tuple[int, int, int]:
    b, g, r = (int(v) for v in np.clip(np.array(base) + rng.normal(0, spread, 3), 0, 255))
    return b, g, r


def _circle(n: int = 48) -> np.ndarray:
    a = np.linspace(0, 2 * math.pi, n, endpoint=False)
    return np.stack([0.5 + 0.5 * np.cos(a), 0.5 + 0.5 * np.sin(a)], axis=1)


def _octagon() -> np.ndarray:
    a = np.arange(8) * math.pi / 4 + math.pi / 8
    r = 0.5 / math.cos(math.pi / 8)
    return np.stack([0.5 + r * np.cos(a), 0.5 + r * np.sin(a)], axis=1)


_SQUARE = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
_DIAMOND = np.array([[0.5, 0.0], [1.0, 0.5], [0.5, 1.0], [0.0, 0.5]])
_TRIANGLE = np.array([[0.5, 0.04], [1.0, 0.92], [0.0, 0.92]])


def _poly(draw: ImageDraw.ImageDraw, pts: np.ndarray, size: tuple[int, int], scale: float, fill) -> None:
    cx, cy = 0.5, 0.5
    p = [((x - cx) * scale + cx) * size[0] for x in pts[:, 0]], [((y - cy) * scale + cy) * size[1] for y in pts[:, 1]]
    draw.polygon(list(zip(p[0], p[1], strict=True)), fill=fill)


def draw_fitted_text(
    draw: ImageDraw.ImageDraw,
    text: str,
    box: tuple[float, float, float, float],
    font_name: str,
    fill,
    spacing: float = 0.0,
) -> None:
    """Draw ``text`` centred in ``box``, as large as fits; ``spacing`` adds letter gaps (em fraction)."""
    x0, y0, x1, y1 = box
    ref = 100
    f = font(font_name, ref)
    widths = [f.getlength(ch) for ch in text]
    lft, t, r, b = draw.textbbox((0, 0), text, font=f, anchor="ls")
    width = sum(widths) + spacing * ref * (len(text) - 1) if spacing else r - lft
    scale = min((x1 - x0) / max(width, 1), (y1 - y0) / max(b - t, 1))
    size = max(4, int(ref * scale))
    f = font(font_name, size)
    lft, t, r, b = draw.textbbox((0, 0), text, font=f, anchor="ls")
    widths = [f.getlength(ch) for ch in text]
    width = sum(widths) + spacing * size * (len(text) - 1) if spacing else r - lft
    x = (x0 + x1) / 2 - width / 2 - (0 if spacing else lft)
    y = (y0 + y1) / 2 - (t + b) / 2
    if not spacing:
        draw.text((x, y), text, font=f, fill=fill, anchor="ls")
        return
    for ch, wch in zip(text, widths, strict=True):
        draw.text((x, y), ch, font=f, fill=fill, anchor="ls")
        x += wch + spacing * size


def finish_sprite(im: Image.Image, outline: np.ndarray, text: str, mirror: bool = False) -> Sprite:
    """Downsample a 2x supersampled RGBA drawing into a :class:`Sprite`."""
    im = im.reduce(2)
    arr = np.asarray(im)
    if mirror:
        arr = arr[:, ::-1]
        outline = np.stack([1.0 - outline[:, 0], outline[:, 1]], axis=1)
    rgba = np.ascontiguousarray(arr[..., [2, 1, 0, 3]])
    return Sprite(rgba=rgba, outline=outline, text=text)


def _stop(rng: np.random.Generator, s: int) -> Sprite:
    im = Image.new("RGBA", (s, s), (0, 0, 0, 0))
    d = ImageDraw.Draw(im)
    octa = _octagon()
    rim = (
        _c(rng, (245, 245, 240))
        if rng.random() < 0.75
        else _c(rng, [(20, 20, 20), (240, 200, 30), (150, 150, 150)][int(rng.integers(3))])
    )
    red = _c(rng, (200, 25, 30), 18)
    _poly(d, octa, (s, s), 1.0, rim + (255,))
    _poly(d, octa, (s, s), 1.0 - float(rng.uniform(0.05, 0.2)), red + (255,))
    if rng.random() < 0.25:
        _poly(d, octa, (s, s), 1.0 - float(rng.uniform(0.25, 0.3)), rim + (255,))
        _poly(d, octa, (s, s), 1.0 - float(rng.uniform(0.31, 0.34)), red + (255,))
    word = str(rng.choice(_STOP_WORDS))
    w = float(rng.uniform(0.58, 0.74))
    ink = (250, 250, 250) if rng.random() < 0.9 else (20, 20, 20)
    draw_fitted_text(
        d,
        word,
        (s * (0.5 - w / 2), s * 0.36, s * (0.5 + w / 2), s * 0.64),
        pick_font(rng, "sans_bold", "condensed", "serif"),
        ink + (255,),
    )
    return finish_sprite(im, octa, "")


def _speed(rng: np.random.Generator, s: int) -> Sprite:
    im = Image.new("RGBA", (s, s), (0, 0, 0, 0))
    d = ImageDraw.Draw(im)
    r = rng.random()
    rim = (
        _c(rng, (205, 25, 30), 15)
        if r < 0.8
        else _c(rng, [(230, 110, 20), (25, 25, 25), (30, 70, 170)][int(rng.integers(3))])
    )
    inner = _c(rng, (248, 248, 244), 6) if rng.random() < 0.85 else _c(rng, (240, 220, 60), 10)
    if rng.random() < 0.4:
        d.ellipse((0, 0, s - 1, s - 1), fill=(235, 235, 235, 255))
        m = s * float(rng.uniform(0.02, 0.05))
    else:
        m = 0.0
    d.ellipse((m, m, s - 1 - m, s - 1 - m), fill=rim + (255,))
    k = s * float(rng.uniform(0.08, 0.18)) + m
    d.ellipse((k, k, s - 1 - k, s - 1 - k), fill=inner + (255,))
    value = int(rng.choice(_SPEEDS)) if rng.random() < 0.8 else int(rng.integers(5, 121))
    text = str(value)
    w = min(0.62, 0.24 * len(text) + 0.1)
    kmh = rng.random() < 0.15
    y0, y1 = (0.3, 0.6) if kmh else (0.33, 0.67)
    fnt = pick_font(rng, "sans_bold", "condensed", "serif", "mono", "sans")
    draw_fitted_text(d, text, (s * (0.5 - w / 2), s * y0, s * (0.5 + w / 2), s * y1), fnt, (20, 20, 20, 255))
    if kmh:
        draw_fitted_text(d, "km/h", (s * 0.4, s * 0.64, s * 0.6, s * 0.72), fnt, (20, 20, 20, 255))
    return finish_sprite(im, _circle(), text)


def _arrow_left(d: ImageDraw.ImageDraw, rng: np.random.Generator, s: int, ink) -> None:
    t = s * float(rng.uniform(0.09, 0.14))
    head = s * float(rng.uniform(0.17, 0.25))
    if rng.random() < 0.55:  # bent: up from the bottom, then to the left
        ty = s * float(rng.uniform(0.38, 0.48))
        sx = s * float(rng.uniform(0.55, 0.62))
        d.line([(sx, s * 0.8), (sx, ty), (s * 0.3, ty)], fill=ink, width=int(t), joint="curve")
    else:  # straight sideways
        ty = s * 0.5
        d.line([(s * 0.8, ty), (s * 0.32, ty)], fill=ink, width=int(t))
    tip = s * 0.18
    d.polygon([(tip, ty), (tip + head, ty - head * 0.75), (tip + head, ty + head * 0.75)], fill=ink)


def _curved_left(d: ImageDraw.ImageDraw, rng: np.random.Generator, s: int, ink) -> None:
    t = s * float(rng.uniform(0.09, 0.13))
    head = s * float(rng.uniform(0.18, 0.24))
    cx, cy, r = s * 0.45, s * 0.6, s * float(rng.uniform(0.2, 0.25))
    d.arc((cx - r, cy - r, cx + r, cy + r), 270, 360, fill=ink, width=int(t))
    d.line([(cx + r - t / 2, cy - 1), (cx + r - t / 2, s * 0.84)], fill=ink, width=int(t))
    hy = cy - r + t / 2
    d.polygon([(cx + 1, hy - head * 0.75), (cx + 1, hy + head * 0.75), (cx - head, hy)], fill=ink)


def _turn(rng: np.random.Generator, s: int, right: bool) -> Sprite:
    im = Image.new("RGBA", (s, s), (0, 0, 0, 0))
    d = ImageDraw.Draw(im)
    blue = (
        _c(rng, (25, 80, 175), 18)
        if rng.random() < 0.85
        else _c(rng, [(20, 20, 20), (20, 120, 60)][int(rng.integers(2))])
    )
    square = rng.random() < 0.12
    if rng.random() < 0.4:
        (d.rectangle if square else d.ellipse)((0, 0, s - 1, s - 1), fill=(240, 240, 240, 255))
        m = s * float(rng.uniform(0.025, 0.05))
    else:
        m = 0
    (d.rectangle if square else d.ellipse)((m, m, s - 1 - m, s - 1 - m), fill=blue + (255,))
    ink = (248, 248, 248, 255)
    if rng.random() < 0.25:
        _curved_left(d, rng, s, ink)
    else:
        _arrow_left(d, rng, s, ink)
    return finish_sprite(im, _SQUARE if square else _circle(), "", mirror=right)


def _walker(d: ImageDraw.ImageDraw, rng: np.random.Generator, cx: float, top: float, h: float, ink) -> None:
    w = max(2, int(h * 0.11))
    stride = float(rng.uniform(0.15, 0.3)) * h
    hr = h * 0.09
    d.ellipse((cx - hr, top, cx + hr, top + 2 * hr), fill=ink)
    neck, hip = (cx, top + 2.4 * hr), (cx - h * 0.03, top + h * 0.55)
    d.line([neck, hip], fill=ink, width=int(w * 1.3))
    d.line([hip, (cx - stride, top + h)], fill=ink, width=w, joint="curve")
    d.line([hip, (cx + stride * 0.4, top + h * 0.78), (cx + stride, top + h)], fill=ink, width=w, joint="curve")
    d.line([(cx - h * 0.02, top + h * 0.3), (cx + stride * 0.9, top + h * 0.45)], fill=ink, width=w)
    d.line([(cx - h * 0.02, top + h * 0.3), (cx - stride * 0.8, top + h * 0.5)], fill=ink, width=w)


def _crossing(rng: np.random.Generator, s: int) -> Sprite:
    im = Image.new("RGBA", (s, s), (0, 0, 0, 0))
    d = ImageDraw.Draw(im)
    kind = int(rng.choice(4, p=[0.45, 0.25, 0.15, 0.15]))
    black = (20, 20, 20, 255)
    if kind == 0:  # blue square, white triangle, person on stripes
        rr = int(s * rng.uniform(0.0, 0.08))
        d.rounded_rectangle((0, 0, s - 1, s - 1), rr, fill=(240, 240, 240, 255))
        m = s * 0.04
        d.rounded_rectangle((m, m, s - 1 - m, s - 1 - m), rr, fill=_c(rng, (30, 90, 180), 15) + (255,))
        _poly(d, _TRIANGLE, (s, s), 0.8, (250, 250, 250, 255))
        for i in range(4):
            x = s * (0.3 + i * 0.11)
            d.rectangle((x, s * 0.75, x + s * 0.06, s * 0.8), fill=black)
        _walker(d, rng, s * 0.5, s * 0.3, s * 0.42, black)
        outline = _SQUARE
    elif kind == 1:  # yellow diamond, person
        _poly(d, _DIAMOND, (s, s), 1.0, black)
        _poly(d, _DIAMOND, (s, s), 0.92, _c(rng, (250, 210, 20), 10) + (255,))
        _walker(d, rng, s * 0.5, s * 0.24, s * 0.5, black)
        outline = _DIAMOND
    elif kind == 2:  # red-rimmed warning triangle
        _poly(d, _TRIANGLE, (s, s), 1.0, _c(rng, (205, 25, 30)) + (255,))
        _poly(d, _TRIANGLE, (s, s), 0.72, (250, 250, 250, 255))
        _walker(d, rng, s * 0.5, s * 0.42, s * 0.36, black)
        outline = _TRIANGLE
    else:  # blue square, white person over zebra stripes
        d.rectangle((0, 0, s - 1, s - 1), fill=_c(rng, (25, 85, 170), 15) + (255,))
        white = (245, 245, 245, 255)
        for i in range(5):
            x = s * (0.12 + i * 0.16)
            d.polygon(
                [(x, s * 0.88), (x + s * 0.08, s * 0.88), (x + s * 0.12, s * 0.7), (x + s * 0.04, s * 0.7)], fill=white
            )
        _walker(d, rng, s * 0.5, s * 0.1, s * 0.58, white)
        outline = _SQUARE
    return finish_sprite(im, outline, "", mirror=bool(rng.random() < 0.5))


def _parking(rng: np.random.Generator, s: int) -> Sprite:
    im = Image.new("RGBA", (s, s), (0, 0, 0, 0))
    d = ImageDraw.Draw(im)
    kind = int(rng.choice(4, p=[0.55, 0.2, 0.15, 0.1]))
    blue = _c(rng, (30, 90, 185), 15)
    white = (245, 245, 245)
    rr = int(s * rng.uniform(0.0, 0.12))
    outline = _SQUARE
    if kind == 0:
        d.rounded_rectangle((0, 0, s - 1, s - 1), rr, fill=white + (255,))
        m = s * float(rng.uniform(0.02, 0.06))
        d.rounded_rectangle((m, m, s - 1 - m, s - 1 - m), rr, fill=blue + (255,))
        bg, ink = blue, white
    elif kind == 1:
        d.rounded_rectangle((0, 0, s - 1, s - 1), rr, fill=blue + (255,))
        m = s * 0.08
        d.rounded_rectangle((m, m, s - 1 - m, s - 1 - m), rr, fill=white + (255,))
        bg, ink = white, blue
    elif kind == 2:
        d.rounded_rectangle((0, 0, s - 1, s - 1), rr, fill=_c(rng, (30, 130, 70)) + (255,))
        bg, ink = None, white
    else:
        d.ellipse((0, 0, s - 1, s - 1), fill=blue + (255,))
        bg, ink = blue, white
        outline = _circle()
    del bg
    fnt = pick_font(rng, "sans_bold", "condensed", "serif", "sans")
    draw_fitted_text(d, "P", (s * 0.25, s * 0.18, s * 0.75, s * 0.82), fnt, ink + (255,))
    return finish_sprite(im, outline, "")


def draw_sign(label: str, rng: np.random.Generator, size_px: int) -> Sprite:
    """Draw a sign face (not plates: see :mod:`.plates`).

    Args:
        label: one of the sign labels.
        rng: random generator (design choices).
        size_px: sprite edge length in pixels.

    Returns:
        The sprite.
    """
    s = 2 * max(24, int(size_px))
    if label == "stop":
        return _stop(rng, s)
    if label == "speed_limit":
        return _speed(rng, s)
    if label in ("turn_left", "turn_right"):
        return _turn(rng, s, right=label == "turn_right")
    if label == "crossing":
        return _crossing(rng, s)
    if label == "parking":
        return _parking(rng, s)
    raise ValueError(f"no sign design for label {label!r}")

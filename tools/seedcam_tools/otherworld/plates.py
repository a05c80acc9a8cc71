"""Licence-plate-like tags: texts, styles and their sprites."""

from __future__ import annotations

import logging

import numpy as np
from PIL import Image, ImageDraw

from .assets import pick_font
from .signs import Sprite, draw_fitted_text, finish_sprite
from .truth import PLATE_ALPHABET, valid_plate_text

__all__ = ["draw_plate", "random_plate_text"]

logger = logging.getLogger(__name__)

_LETTERS = PLATE_ALPHABET[10:36]
_DIGITS = PLATE_ALPHABET[:10]
_PATTERNS = (
    "LLDDD",
    "LL-DDD",
    "DDD-LL",
    "LDDL",
    "LLL-DD",
    "D-LLL",
    "LLDD-LL",
    "DLLD",
    "LDD",
    "LL-DD-LL",
    "DDDD",
    "LLLDDD",
    "L-DDDD",
    "AGV-DD",
    "DD-DDD",
)
_BACKGROUNDS = (
    (250, 250, 248),
    (250, 214, 40),
    (240, 232, 205),
    (200, 202, 205),
    (215, 232, 250),
    (220, 245, 220),
    (255, 235, 215),
)
_INKS = ((15, 15, 15), (20, 30, 110), (110, 20, 20), (20, 70, 30), (60, 60, 60))


def random_plate_text(rng: np.random.Generator) -> str:
    """A plate text: 3..8 characters of the plate alphabet, dashes only between characters."""
    for _ in range(20):
        if rng.random() < 0.6:
            pattern = str(rng.choice(_PATTERNS))
            text = "".join(
                _LETTERS[int(rng.integers(26))] if ch == "L" else _DIGITS[int(rng.integers(10))] if ch == "D" else ch
                for ch in pattern
            )
        else:
            n = int(rng.integers(3, 9))
            chars = [PLATE_ALPHABET[int(rng.integers(36))] for _ in range(n)]
            for i in range(1, n - 1):
                if rng.random() < 0.12 and chars[i - 1] != "-":
                    chars[i] = "-"
            text = "".join(chars)
        if valid_plate_text(text):
            return text
    return "AB-123"


def draw_plate(rng: np.random.Generator, text: str, height_px: int) -> tuple[Sprite, float]:
    """Draw a plate with ``text``.

    Args:
        rng: random generator (style choices).
        text: the plate text.
        height_px: sprite height in pixels.

    Returns:
        ``(sprite, aspect)``: the sprite and its width / height ratio.
    """
    h = 2 * max(16, int(height_px))
    style = str(rng.choice(["sans_bold", "condensed", "serif", "mono", "sans"], p=[0.3, 0.2, 0.15, 0.25, 0.1]))
    spacing = float(rng.uniform(0.15, 0.45)) if rng.random() < 0.2 else 0.0
    if rng.random() < 0.5:  # width follows the text
        per_char = {"condensed": 0.42, "mono": 0.6}.get(style, 0.55) + spacing
        aspect = float(np.clip(len(text) * per_char * rng.uniform(0.95, 1.15) + 0.5, 1.5, 6.0))
    else:
        aspect = float(rng.choice([2.0, 3.0, 4.0, 4.7]))
    w = int(h * aspect)
    bg = tuple(
        int(v)
        for v in np.clip(np.array(_BACKGROUNDS[int(rng.integers(len(_BACKGROUNDS)))]) + rng.normal(0, 6, 3), 0, 255)
    )
    ink = _INKS[int(rng.choice(len(_INKS), p=[0.6, 0.15, 0.1, 0.05, 0.1]))]
    im = Image.new("RGBA", (w, h), (0, 0, 0, 0))
    d = ImageDraw.Draw(im)
    radius = int(h * float(rng.choice([0.0, 0.06, 0.15])))
    border = rng.random()
    if border < 0.35:
        d.rounded_rectangle((0, 0, w - 1, h - 1), radius, fill=bg + (255,))
        inset = h * 0.08
    elif border < 0.75:  # thin dark frame
        d.rounded_rectangle((0, 0, w - 1, h - 1), radius, fill=ink + (255,))
        t = h * float(rng.uniform(0.03, 0.08))
        d.rounded_rectangle((t, t, w - 1 - t, h - 1 - t), radius, fill=bg + (255,))
        inset = t + h * 0.07
    else:  # an inset frame line
        d.rounded_rectangle((0, 0, w - 1, h - 1), radius, fill=bg + (255,))
        t = h * 0.06
        d.rounded_rectangle((t, t, w - 1 - t, h - 1 - t), radius, outline=ink + (255,), width=max(2, int(h * 0.03)))
        inset = t + h * 0.08
    left = inset
    if rng.random() < 0.15:  # a plain coloured band on the left
        band = h * 0.35
        d.rectangle(
            (inset * 0.5, inset * 0.5, inset * 0.5 + band, h - inset * 0.5),
            fill=tuple(int(v) for v in rng.integers(0, 200, 3)) + (255,),
        )
        left = inset * 0.5 + band + h * 0.06
    if rng.random() < 0.3:  # screws
        for x in (w * 0.06, w * 0.94):
            r = h * 0.035
            d.ellipse((x - r, h * 0.5 - r, x + r, h * 0.5 + r), fill=(150, 150, 150, 255))
        left = max(left, w * 0.1)
    right = w - max(inset, left if left > w * 0.09 and left < w * 0.11 else inset)
    fill = float(rng.uniform(0.62, 0.82))
    draw_fitted_text(
        d,
        text,
        (left, h * (0.5 - fill / 2), right, h * (0.5 + fill / 2)),
        pick_font(rng, style),
        ink + (255,),
        spacing=spacing,
    )
    outline = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    return finish_sprite(im, outline, text), aspect

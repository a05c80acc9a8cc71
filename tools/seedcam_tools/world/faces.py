"""Randomized faces of signs and plates: several designs per class, real fonts, wear.

Every function takes the generator it draws from and returns a :class:`Face`:
a BGR uint8 sprite, its alpha (0..255) and the face's physical aspect
(width / height). Designs per class:

* ``stop``: red octagons (rim white, black or none; rim widths; reds; the word in many fonts);
* ``speed_limit``: round signs with a red (or orange / dark red) rim and a number,
  and rectangular "SPEED LIMIT n" signs;
* ``turn_left`` / ``turn_right``: blue rounds or squares with bent, straight, curved or
  double-headed-free arrows pointing that way;
* ``crossing``: blue squares with a white triangle, yellow diamonds and red-rimmed
  warning triangles, each with a walking figure (and sometimes zebra stripes);
* ``parking``: a "P" on blue squares, rounded squares, rectangles, or blue on white;
* ``plate``: text of any length on white, yellow, cream, grey or light backgrounds,
  with or without borders, width following the text or a fixed aspect, letter spacing.

Wear (:func:`weather`) fades, dirties and adds glare to any face.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from .assets import font_families

__all__ = ["Face", "distractor_face", "object_face", "plate_face", "weather"]

S = 128  # sign sprite size (px)


@dataclass(frozen=True)
class Face:
    """A sprite: ``bgr`` H x W x 3 uint8, ``alpha`` H x W uint8, and the physical width / height."""

    bgr: np.ndarray
    alpha: np.ndarray

    @property
    def aspect(self) -> float:
        """Width over height."""
        return self.bgr.shape[1] / self.bgr.shape[0]


@functools.lru_cache(maxsize=512)
def _font(path: str, size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(path, size)


_BOLD_STYLES = ("Bold", "Black", "Heavy", "Demi", "Semibold")


def _pick_font(rng: np.random.Generator) -> str:
    """A font file: a family drawn uniformly, then one of its styles."""
    families = font_families()
    family = families[int(rng.integers(len(families)))]
    return family[int(rng.integers(len(family)))]


def _bold_font(rng: np.random.Generator) -> str:
    """Mostly a bold style of a uniformly drawn family (any style where the family has no bold one)."""
    families = font_families()
    family = families[int(rng.integers(len(families)))]
    bold = [f for f in family if any(w in Path(f).name for w in _BOLD_STYLES)]
    pool = bold if bold and rng.random() < 0.7 else family
    return pool[int(rng.integers(len(pool)))]


def _text_mask(text: str, font_path: str, box_w: int, box_h: int, *, spacing: float = 0.0) -> np.ndarray:
    """An H x W uint8 mask of ``text`` fitted (centred) into ``box_w`` x ``box_h``."""
    size = max(6, int(box_h))
    font = _font(font_path, size)
    # measure per character so that letter spacing can be added
    widths = [font.getlength(ch) for ch in text]
    total = sum(widths) + spacing * size * max(0, len(text) - 1)
    bbox = font.getbbox(text)
    height = max(1, bbox[3] - bbox[1])
    scale = min(box_w / max(total, 1.0), box_h / height)
    size = max(6, int(size * scale))
    font = _font(font_path, size)
    widths = [font.getlength(ch) for ch in text]
    total = sum(widths) + spacing * size * max(0, len(text) - 1)
    bbox = font.getbbox(text)
    img = Image.new("L", (box_w, box_h), 0)
    draw = ImageDraw.Draw(img)
    x = (box_w - total) / 2.0
    y = (box_h - (bbox[3] - bbox[1])) / 2.0 - bbox[1]
    for ch, w in zip(text, widths, strict=True):
        draw.text((x, y), ch, font=font, fill=255)
        x += w + spacing * size
    return np.asarray(img)


def _paint(img: np.ndarray, mask: np.ndarray, colour: tuple[int, int, int], x0: int = 0, y0: int = 0) -> None:
    h, w = mask.shape
    roi = img[y0 : y0 + h, x0 : x0 + w].astype(np.float32)
    a = (mask.astype(np.float32) / 255.0)[..., None]
    img[y0 : y0 + h, x0 : x0 + w] = (roi * (1 - a) + np.asarray(colour, np.float32) * a).astype(np.uint8)


def _jitter(rng: np.random.Generator, colour: tuple[int, int, int], amount: float = 25.0) -> tuple[int, int, int]:
    c = np.clip(np.asarray(colour, np.float64) + rng.normal(0, amount, 3), 0, 255)
    return int(c[0]), int(c[1]), int(c[2])


def _red(rng: np.random.Generator) -> tuple[int, int, int]:
    return _jitter(rng, [(35, 35, 200), (40, 30, 170), (30, 50, 215), (50, 40, 150)][int(rng.integers(4))], 15)


def _blue(rng: np.random.Generator) -> tuple[int, int, int]:
    return _jitter(rng, [(170, 90, 20), (150, 60, 10), (200, 120, 40), (120, 50, 0)][int(rng.integers(4))], 15)


def _white(rng: np.random.Generator) -> tuple[int, int, int]:
    return _jitter(rng, (240, 242, 242), 8)


def _octagon(c: float, r: float, rot: float) -> np.ndarray:
    ang = rot + np.pi / 8 + np.arange(8) * np.pi / 4
    return np.stack([c + r * np.cos(ang), c + r * np.sin(ang)], 1).round().astype(np.int32)


def _stop(rng: np.random.Generator) -> Face:
    img, alpha = np.zeros((S, S, 3), np.uint8), np.zeros((S, S), np.uint8)
    rot = 0.0 if rng.random() < 0.85 else float(rng.uniform(-0.2, 0.2))
    cv2.fillPoly(alpha, [_octagon(S / 2, S / 2 - 1, rot)], 255, cv2.LINE_AA)
    rim = rng.choice(["white", "white", "none", "black", "thin"])
    red = _red(rng)
    if rim == "none":
        cv2.fillPoly(img, [_octagon(S / 2, S / 2 - 1, rot)], red, cv2.LINE_AA)
    else:
        outer = (15, 15, 15) if rim == "black" else _white(rng)
        cv2.fillPoly(img, [_octagon(S / 2, S / 2 - 1, rot)], outer, cv2.LINE_AA)
        inner = S / 2 - (3 if rim == "thin" else float(rng.uniform(5, 12)))
        cv2.fillPoly(img, [_octagon(S / 2, inner, rot)], red, cv2.LINE_AA)
    word_w = int(S * rng.uniform(0.6, 0.82))
    word_h = int(word_w * rng.uniform(0.28, 0.42))
    mask = _text_mask("STOP", _bold_font(rng), word_w, word_h, spacing=float(rng.uniform(0, 0.1)))
    colour = _white(rng) if rng.random() < 0.92 else (20, 20, 20)
    _paint(img, mask, colour, (S - word_w) // 2, (S - word_h) // 2 + int(rng.integers(-4, 5)))
    return Face(img, alpha)


def _speed_limit(rng: np.random.Generator, number: str) -> Face:
    if rng.random() < 0.2:  # rectangular "SPEED LIMIT n"
        h, w = S, int(S * rng.uniform(0.7, 0.85))
        img = np.full((h, w, 3), _white(rng), np.uint8)
        cv2.rectangle(img, (3, 3), (w - 4, h - 4), (20, 20, 20), int(rng.integers(2, 5)))
        font = _pick_font(rng)
        for k, word in enumerate(("SPEED", "LIMIT")):
            _paint(
                img,
                _text_mask(word, font, int(w * 0.8), int(h * 0.13)),
                (20, 20, 20),
                int(w * 0.1),
                int(h * (0.08 + 0.16 * k)),
            )
        _paint(
            img,
            _text_mask(number, _bold_font(rng), int(w * 0.8), int(h * 0.45)),
            (20, 20, 20),
            int(w * 0.1),
            int(h * 0.45),
        )
        return Face(img, np.full((h, w), 255, np.uint8))
    img, alpha = np.zeros((S, S, 3), np.uint8), np.zeros((S, S), np.uint8)
    c = (S // 2, S // 2)
    cv2.circle(alpha, c, S // 2 - 1, 255, -1, cv2.LINE_AA)
    rim = _red(rng) if rng.random() < 0.85 else _jitter(rng, (20, 110, 230), 20)
    cv2.circle(img, c, S // 2 - 1, rim, -1, cv2.LINE_AA)
    inner = int(S / 2 * rng.uniform(0.68, 0.86))
    cv2.circle(
        img, c, inner, _white(rng) if rng.random() < 0.85 else _jitter(rng, (120, 220, 240), 15), -1, cv2.LINE_AA
    )
    box = int(inner * 2 * rng.uniform(0.62, 0.78))
    mask = _text_mask(number, _bold_font(rng), box, int(box * rng.uniform(0.5, 0.7)))
    _paint(img, mask, (20, 20, 20), (S - mask.shape[1]) // 2, (S - mask.shape[0]) // 2)
    return Face(img, alpha)


def _arrow(img: np.ndarray, rng: np.random.Generator, colour: tuple[int, int, int]) -> None:
    """A white arrow pointing LEFT (mirrored for right turns by the caller)."""
    t = int(S * rng.uniform(0.07, 0.12))
    style = int(rng.integers(4))
    head = int(S * rng.uniform(0.16, 0.24))
    if style == 0:  # bent: up the right side, then left
        x_right, y_turn = int(S * rng.uniform(0.58, 0.68)), int(S * rng.uniform(0.36, 0.46))
        cv2.line(img, (x_right, int(S * 0.78)), (x_right, y_turn), colour, t, cv2.LINE_AA)
        tip = (int(S * 0.22), y_turn)
        cv2.line(img, (x_right, y_turn), (tip[0] + head // 2, y_turn), colour, t, cv2.LINE_AA)
    elif style == 1:  # straight sideways
        y = S // 2
        tip = (int(S * 0.18), y)
        cv2.line(img, (int(S * 0.8), y), (tip[0] + head // 2, y), colour, t, cv2.LINE_AA)
    elif style == 2:  # curved
        cv2.ellipse(
            img, (int(S * 0.45), int(S * 0.72)), (int(S * 0.22), int(S * 0.32)), 0, 270, 360, colour, t, cv2.LINE_AA
        )
        cv2.line(img, (int(S * 0.67), int(S * 0.72)), (int(S * 0.67), int(S * 0.8)), colour, t, cv2.LINE_AA)
        tip = (int(S * 0.2), int(S * 0.4))
        cv2.line(img, (int(S * 0.45), int(S * 0.4)), (tip[0] + head // 2, tip[1]), colour, t, cv2.LINE_AA)
    else:  # diagonal up-left
        tip = (int(S * 0.24), int(S * 0.3))
        cv2.line(img, (int(S * 0.7), int(S * 0.76)), (tip[0] + head // 3, tip[1] + head // 3), colour, t, cv2.LINE_AA)
        d = np.array([-1.0, -1.0]) / math.sqrt(2)
        n = np.array([d[1], -d[0]])
        base = np.array(tip) - d * head
        pts = np.array([tip, base + n * head * 0.6, base - n * head * 0.6]).round().astype(np.int32)
        cv2.fillPoly(img, [pts], colour, cv2.LINE_AA)
        return
    pts = np.array([tip, (tip[0] + head, tip[1] - int(head * 0.75)), (tip[0] + head, tip[1] + int(head * 0.75))])
    cv2.fillPoly(img, [pts.astype(np.int32)], colour, cv2.LINE_AA)


def _turn(rng: np.random.Generator, right: bool) -> Face:
    img, alpha = np.zeros((S, S, 3), np.uint8), np.zeros((S, S), np.uint8)
    blue = _blue(rng)
    if rng.random() < 0.8:
        cv2.circle(alpha, (S // 2, S // 2), S // 2 - 1, 255, -1, cv2.LINE_AA)
        if rng.random() < 0.3:
            cv2.circle(img, (S // 2, S // 2), S // 2 - 1, _white(rng), -1, cv2.LINE_AA)
            cv2.circle(img, (S // 2, S // 2), S // 2 - 5, blue, -1, cv2.LINE_AA)
        else:
            cv2.circle(img, (S // 2, S // 2), S // 2 - 1, blue, -1, cv2.LINE_AA)
    else:
        alpha[2:-2, 2:-2] = 255
        img[:] = blue
    _arrow(img, rng, _white(rng))
    if right:
        img, alpha = img[:, ::-1].copy(), alpha[:, ::-1].copy()
    return Face(img, alpha)


def _walker(
    img: np.ndarray, rng: np.random.Generator, colour: tuple[int, int, int], cx: float, cy: float, s: float
) -> None:
    t = max(2, int(s * rng.uniform(0.08, 0.13)))
    head = (int(cx + s * 0.05), int(cy - s * 0.38))
    cv2.circle(img, head, max(2, int(s * 0.11)), colour, -1, cv2.LINE_AA)
    hip = (int(cx - s * 0.02), int(cy + s * 0.12))
    neck = (int(cx + s * 0.03), int(cy - s * 0.22))
    stride = rng.uniform(0.15, 0.3)
    for a, b in (
        (neck, hip),
        (hip, (int(cx - s * stride), int(cy + s * 0.5))),
        (hip, (int(cx + s * stride), int(cy + s * 0.48))),
        (neck, (int(cx - s * 0.2), int(cy + s * 0.02))),
        (neck, (int(cx + s * 0.22), int(cy - s * 0.02))),
    ):
        cv2.line(img, a, b, colour, t, cv2.LINE_AA)


def _crossing(rng: np.random.Generator) -> Face:
    img, alpha = np.zeros((S, S, 3), np.uint8), np.zeros((S, S), np.uint8)
    design = int(rng.integers(3))
    black = (20, 20, 20)
    if design == 0:  # blue square, white triangle
        alpha[2:-2, 2:-2] = 255
        img[:] = _blue(rng)
        tri = np.array(
            [[S // 2, int(S * 0.1)], [int(S * 0.92), int(S * 0.86)], [int(S * 0.08), int(S * 0.86)]], np.int32
        )
        cv2.fillPoly(img, [tri], _white(rng), cv2.LINE_AA)
        _walker(img, rng, black, S * 0.5, S * 0.55, S * 0.5)
        if rng.random() < 0.6:
            for k in range(4):
                x = int(S * (0.24 + 0.14 * k))
                cv2.rectangle(img, (x, int(S * 0.8)), (x + int(S * 0.07), int(S * 0.84)), black, -1)
    elif design == 1:  # yellow diamond
        pts = np.array([[S // 2, 1], [S - 2, S // 2], [S // 2, S - 2], [1, S // 2]], np.int32)
        cv2.fillPoly(alpha, [pts], 255, cv2.LINE_AA)
        cv2.fillPoly(img, [pts], _jitter(rng, (20, 200, 240), 15), cv2.LINE_AA)
        cv2.polylines(img, [pts], True, black, 4, cv2.LINE_AA)
        _walker(img, rng, black, S * 0.5, S * 0.52, S * 0.55)
    else:  # red-rimmed warning triangle
        pts = np.array([[S // 2, 2], [S - 2, S - 8], [1, S - 8]], np.int32)
        cv2.fillPoly(alpha, [pts], 255, cv2.LINE_AA)
        cv2.fillPoly(img, [pts], _red(rng), cv2.LINE_AA)
        inner = ((pts - [S / 2, S * 0.62]) * 0.72 + [S / 2, S * 0.62]).round().astype(np.int32)
        cv2.fillPoly(img, [inner], _white(rng), cv2.LINE_AA)
        _walker(img, rng, black, S * 0.5, S * 0.64, S * 0.38)
    return Face(img, alpha)


def _parking(rng: np.random.Generator) -> Face:
    blue, white = _blue(rng), _white(rng)
    h = S
    w = int(S * rng.uniform(0.75, 1.0)) if rng.random() < 0.3 else S
    img, alpha = np.zeros((h, w, 3), np.uint8), np.zeros((h, w), np.uint8)
    radius = int(rng.choice([0, 0, 8, 16]))
    cv2.rectangle(alpha, (radius // 2, 0), (w - 1 - radius // 2, h - 1), 255, -1)
    cv2.rectangle(alpha, (0, radius // 2), (w - 1, h - 1 - radius // 2), 255, -1)
    inverse = rng.random() < 0.2
    img[:] = white if inverse else blue
    if rng.random() < 0.5:
        cv2.rectangle(img, (6, 6), (w - 7, h - 7), blue if inverse else white, int(rng.integers(2, 5)))
    mask = _text_mask("P", _bold_font(rng), int(w * 0.7), int(h * rng.uniform(0.55, 0.75)))
    _paint(img, mask, blue if inverse else white, (w - mask.shape[1]) // 2, (h - mask.shape[0]) // 2)
    return Face(img, alpha)


_PLATE_BACKGROUNDS = (
    (245, 245, 245),
    (30, 200, 245),
    (200, 235, 245),
    (190, 190, 190),
    (235, 225, 210),
    (160, 220, 170),
)
_PLATE_INKS = ((20, 20, 20), (90, 30, 10), (20, 60, 20), (30, 30, 120), (50, 50, 50))


def plate_face(rng: np.random.Generator, text: str) -> Face:
    """A plate with ``text``: 64 px high, its width following the text or a fixed aspect."""
    h = 64
    font = _pick_font(rng)
    spacing = float(rng.choice([0.0, 0.0, rng.uniform(0.05, 0.35)]))
    text_h = int(h * rng.uniform(0.55, 0.75))
    if rng.random() < 0.5:  # width follows the text
        probe = _font(font, text_h)
        w = int(probe.getlength(text) + spacing * text_h * (len(text) - 1) + h * rng.uniform(0.4, 0.9))
    else:
        w = int(h * rng.uniform(2.6, 5.0))
    w = int(np.clip(w, h * 1.2, h * 7.0))
    bg = _jitter(rng, _PLATE_BACKGROUNDS[int(rng.integers(len(_PLATE_BACKGROUNDS)))], 12)
    ink = _jitter(rng, _PLATE_INKS[int(rng.integers(len(_PLATE_INKS)))], 10)
    img = np.full((h, w, 3), bg, np.uint8)
    border = int(rng.choice([0, 0, 2, 3, 5]))
    if border:
        cv2.rectangle(img, (2, 2), (w - 3, h - 3), ink, border)
    if rng.random() < 0.3:  # screws
        for x in (int(h * 0.2), w - int(h * 0.2)):
            cv2.circle(img, (x, h // 2 if rng.random() < 0.5 else int(h * 0.2)), 3, _jitter(rng, (150, 150, 150)), -1)
    margin = int(h * 0.3) if border else int(h * 0.15)
    mask = _text_mask(text, font, max(8, w - 2 * margin), text_h, spacing=spacing)
    _paint(img, mask, ink, margin, (h - text_h) // 2 + int(rng.integers(-3, 4)))
    alpha = np.full((h, w), 255, np.uint8)
    if rng.random() < 0.3:  # rounded corners
        r = int(rng.integers(4, 12))
        for cx, cy in ((r, r), (w - 1 - r, r), (r, h - 1 - r), (w - 1 - r, h - 1 - r)):
            corner = np.zeros_like(alpha)
            cv2.circle(corner, (cx, cy), r, 255, -1)
            x0, y0 = (0 if cx < w // 2 else w - r), (0 if cy < h // 2 else h - r)
            alpha[y0 : y0 + r, x0 : x0 + r] = corner[y0 : y0 + r, x0 : x0 + r]
    return Face(img, alpha)


def object_face(rng: np.random.Generator, kind: str, text: str = "") -> Face:
    """A random design of ``kind`` (``text``: a plate's text or a speed limit's number)."""
    if kind == "stop":
        return _stop(rng)
    if kind == "speed_limit":
        return _speed_limit(rng, text or "30")
    if kind in ("turn_left", "turn_right"):
        return _turn(rng, right=kind == "turn_right")
    if kind == "crossing":
        return _crossing(rng)
    if kind == "parking":
        return _parking(rng)
    if kind == "plate":
        return plate_face(rng, text or "AGV-000")
    raise ValueError(f"unknown object kind {kind!r}")


_WORDS = ("exit", "door", "aisle", "line", "zone", "keep clear", "warehouse", "dock", "caution", "hall", "lab", "room")


def distractor_face(rng: np.random.Generator) -> Face:
    """Something that is none of the labels: a shape, a poster with words, a cone, a box, a disc."""
    kind = int(rng.integers(6))
    colour = tuple(int(v) for v in rng.integers(0, 256, 3))
    if kind == 0:  # poster: several lines of lower-case words
        h, w = 96, int(96 * rng.uniform(0.6, 1.6))
        img = np.full((h, w, 3), _jitter(rng, (230, 230, 230), 30), np.uint8)
        font = _pick_font(rng)
        for k in range(int(rng.integers(2, 5))):
            words = " ".join(_WORDS[int(i)] for i in rng.integers(len(_WORDS), size=2))
            _paint(
                img,
                _text_mask(words, font, int(w * 0.9), 14),
                _jitter(rng, (40, 40, 40), 40),
                int(w * 0.05),
                8 + 20 * k,
            )
        return Face(img, np.full((h, w), 255, np.uint8))
    if kind == 1:  # cone
        img, alpha = np.zeros((S, S, 3), np.uint8), np.zeros((S, S), np.uint8)
        pts = np.array([[S // 2, 4], [S - 20, S - 10], [20, S - 10]], np.int32)
        cv2.fillPoly(alpha, [pts], 255, cv2.LINE_AA)
        cv2.fillPoly(img, [pts], _jitter(rng, (20, 110, 240), 20), cv2.LINE_AA)
        cv2.rectangle(img, (0, S // 2), (S, S // 2 + 14), _white(rng), -1)
        img[alpha == 0] = 0
        return Face(img, alpha)
    if kind == 2:  # a disc or ring in sign-like colours, without a sign's content
        img, alpha = np.zeros((S, S, 3), np.uint8), np.zeros((S, S), np.uint8)
        cv2.circle(alpha, (S // 2, S // 2), S // 2 - 1, 255, -1, cv2.LINE_AA)
        cv2.circle(img, (S // 2, S // 2), S // 2 - 1, _red(rng) if rng.random() < 0.5 else _blue(rng), -1, cv2.LINE_AA)
        if rng.random() < 0.5:
            cv2.circle(img, (S // 2, S // 2), int(S * rng.uniform(0.2, 0.4)), colour, -1, cv2.LINE_AA)
        return Face(img, alpha)
    if kind == 3:  # cardboard box / crate
        h, w = int(S * rng.uniform(0.6, 1.0)), S
        img = np.full((h, w, 3), _jitter(rng, (70, 130, 170), 25), np.uint8)
        cv2.line(img, (0, h // 2), (w, h // 2), _jitter(rng, (60, 110, 150), 20), 4)
        return Face(img, np.full((h, w), 255, np.uint8))
    if kind == 4:  # random polygon
        img, alpha = np.zeros((S, S, 3), np.uint8), np.zeros((S, S), np.uint8)
        n = int(rng.integers(3, 7))
        ang = np.sort(rng.uniform(0, 2 * np.pi, n))
        rad = rng.uniform(0.3, 0.5, n) * S
        pts = np.stack([S / 2 + rad * np.cos(ang), S / 2 + rad * np.sin(ang)], 1).astype(np.int32)
        cv2.fillPoly(alpha, [pts], 255, cv2.LINE_AA)
        cv2.fillPoly(img, [pts], colour, cv2.LINE_AA)
        return Face(img, alpha)
    # a photo cut-out (a picture on the wall, a screen)
    from .assets import photos

    photo = photos()[int(rng.integers(len(photos())))]
    ph, pw = photo.shape[:2]
    ch, cw = int(ph * rng.uniform(0.2, 0.6)), int(pw * rng.uniform(0.2, 0.6))
    y, x = int(rng.integers(0, ph - ch + 1)), int(rng.integers(0, pw - cw + 1))
    cut = cv2.resize(photo[y : y + ch, x : x + cw], (S, max(16, int(S * ch / cw))))
    return Face(cut, np.full(cut.shape[:2], 255, np.uint8))


def weather(rng: np.random.Generator, face: Face) -> Face:
    """Fade, dirt, glare and a little blur on a face (often nothing)."""
    img = face.bgr.astype(np.float32)
    h, w = img.shape[:2]
    if rng.random() < 0.3:  # faded towards a pale grey
        k = float(rng.uniform(0.1, 0.45))
        img = img * (1 - k) + k * np.float32(rng.uniform(170, 230))
    if rng.random() < 0.25:  # dirt blobs
        dirt: np.ndarray = np.zeros((h, w), np.float32)
        for _ in range(int(rng.integers(2, 8))):
            c = (int(rng.integers(w)), int(rng.integers(h)))
            cv2.circle(dirt, c, int(rng.integers(3, max(4, w // 5))), float(rng.uniform(0.2, 0.6)), -1)
        dirt = cv2.GaussianBlur(dirt, (0, 0), max(1.0, w / 40))
        img *= (1 - dirt)[..., None] * np.array([1.0, 0.95, 0.9], np.float32) + (1 - (1 - dirt))[..., None] * 0.35
    if rng.random() < 0.2:  # specular glare
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        cx, cy = rng.uniform(0, w), rng.uniform(0, h)
        r = rng.uniform(0.15, 0.5) * max(h, w)
        g = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * r * r)) * np.float32(rng.uniform(0.3, 0.9))
        img = img + (255 - img) * g[..., None]
    return Face(np.clip(img, 0, 255).astype(np.uint8), face.alpha)

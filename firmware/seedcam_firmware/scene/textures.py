"""Procedural textures: tileable floor noise and sign / plate faces (drawn with OpenCV)."""

from __future__ import annotations

import functools

import cv2
import numpy as np

__all__ = ["OBJECT_SIZE_M", "TEXEL_M", "floor_texture", "object_face"]

#: floor texture size (texels, square, tileable) and texel size in metres
TEXTURE_SIZE = 256
TEXEL_M = 0.005

#: (width, height, centre height above floor) of each object's face, metres
OBJECT_SIZE_M: dict[str, tuple[float, float, float]] = {
    "stop": (0.10, 0.10, 0.17),
    "speed_limit": (0.10, 0.10, 0.17),
    "turn_left": (0.10, 0.10, 0.17),
    "turn_right": (0.10, 0.10, 0.17),
    "crossing": (0.10, 0.10, 0.17),
    "parking": (0.10, 0.10, 0.17),
    "plate": (0.16, 0.05, 0.09),
}


@functools.lru_cache(maxsize=16)
def floor_texture(seed: int) -> np.ndarray:
    """A tileable zero-mean noise texture (float32, about unit std), two scales mixed."""
    rng = np.random.default_rng(seed)
    n = TEXTURE_SIZE
    white = rng.standard_normal((n, n))
    spec = np.fft.fft2(white)
    fy = np.fft.fftfreq(n)[:, None]
    fx = np.fft.fftfreq(n)[None, :]
    f2 = fx * fx + fy * fy
    fine = np.real(np.fft.ifft2(spec * np.exp(-f2 / (2 * 0.15**2))))
    coarse = np.real(np.fft.ifft2(spec * np.exp(-f2 / (2 * 0.02**2))))
    tex = fine / fine.std() * 0.6 + coarse / coarse.std() * 0.8
    tex = (tex / tex.std()).astype(np.float32)
    tex.setflags(write=False)
    return tex


def _blank(w: int, h: int) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((h, w, 3), np.uint8), np.zeros((h, w), np.uint8)


def _centered_text(img: np.ndarray, text: str, color: tuple[int, int, int], scale: float, thick: int) -> None:
    font = cv2.FONT_HERSHEY_SIMPLEX
    (tw, th), _ = cv2.getTextSize(text, font, scale, thick)
    h, w = img.shape[:2]
    if tw > 0.9 * w:  # shrink long text to fit
        scale *= 0.9 * w / tw
        (tw, th), _ = cv2.getTextSize(text, font, scale, thick)
    cv2.putText(img, text, ((w - tw) // 2, (h + th) // 2), font, scale, color, thick, cv2.LINE_AA)


@functools.lru_cache(maxsize=64)
def object_face(kind: str, text: str = "") -> tuple[np.ndarray, np.ndarray]:
    """Render an object's face: ``(bgr uint8 image, alpha uint8 mask)``.

    Signs are 96 x 96 px; plates are 192 x 60 px, a white rectangle with dark text.
    """
    red, white, blue, black = (30, 30, 200), (245, 245, 245), (170, 90, 20), (20, 20, 20)
    if kind == "plate":
        img, alpha = _blank(192, 60)
        cv2.rectangle(img, (0, 0), (191, 59), white, -1)
        cv2.rectangle(img, (3, 3), (188, 56), (40, 40, 40), 3)
        _centered_text(img, text or "AGV-000", (25, 25, 25), 1.3, 3)
        alpha[:] = 255
        return img, alpha
    img, alpha = _blank(96, 96)
    c = (48, 48)
    if kind == "stop":
        ang = np.deg2rad(22.5 + 45.0 * np.arange(8))
        pts = np.stack([48 + 47 * np.cos(ang), 48 + 47 * np.sin(ang)], 1).astype(np.int32)
        cv2.fillPoly(alpha, [pts], 255)
        cv2.fillPoly(img, [pts], white)
        inner = np.stack([48 + 41 * np.cos(ang), 48 + 41 * np.sin(ang)], 1).astype(np.int32)
        cv2.fillPoly(img, [inner], red)
        _centered_text(img, "STOP", white, 0.9, 2)
    elif kind == "speed_limit":
        cv2.circle(alpha, c, 47, 255, -1)
        cv2.circle(img, c, 47, red, -1)
        cv2.circle(img, c, 36, white, -1)
        _centered_text(img, text or "30", black, 1.2, 3)
    elif kind in ("turn_left", "turn_right"):
        cv2.circle(alpha, c, 47, 255, -1)
        cv2.circle(img, c, 47, blue, -1)
        start, end = ((70, 62), (26, 40)) if kind == "turn_left" else ((26, 62), (70, 40))
        cv2.line(img, start, (start[0], 40), white, 9)
        cv2.arrowedLine(img, (start[0], 40), end, white, 9, tipLength=0.5)
    elif kind == "crossing":
        cv2.rectangle(alpha, (1, 1), (94, 94), 255, -1)
        cv2.rectangle(img, (1, 1), (94, 94), blue, -1)
        tri = np.array([[48, 10], [86, 80], [10, 80]], np.int32)
        cv2.fillPoly(img, [tri], white)
        for k in range(4):  # zebra stripes
            cv2.rectangle(img, (22 + 14 * k, 70), (28 + 14 * k, 77), black, -1)
        cv2.circle(img, (50, 32), 5, black, -1)
        cv2.line(img, (49, 38), (45, 55), black, 4)
        cv2.line(img, (45, 55), (38, 66), black, 3)
        cv2.line(img, (45, 55), (54, 66), black, 3)
        cv2.line(img, (47, 44), (57, 50), black, 3)
    elif kind == "parking":
        cv2.rectangle(alpha, (1, 1), (94, 94), 255, -1)
        cv2.rectangle(img, (1, 1), (94, 94), blue, -1)
        cv2.rectangle(img, (6, 6), (89, 89), white, 2)
        _centered_text(img, "P", white, 2.4, 6)
    else:
        raise ValueError(f"unknown object kind {kind!r}")
    return img, alpha

"""Camera effects: blur, vignetting, exposure, white balance, chromatic shift, noise and JPEG."""

from __future__ import annotations

import logging
import math

import cv2
import numpy as np

__all__ = ["apply_camera_effects"]

logger = logging.getLogger(__name__)


def _motion_kernel(length: float, angle: float) -> np.ndarray:
    size = int(math.ceil(length)) | 1
    k = np.zeros((size, size), np.float32)
    c = size // 2
    dx, dy = math.cos(angle) * length / 2, math.sin(angle) * length / 2
    cv2.line(k, (round(c - dx), round(c - dy)), (round(c + dx), round(c + dy)), 1.0, 1, cv2.LINE_AA)
    return k / max(float(k.sum()), 1e-6)


def _shift(channel: np.ndarray, scale: float, dx: float, dy: float) -> np.ndarray:
    h, w = channel.shape
    m = np.array([[scale, 0, (1 - scale) * (w - 1) / 2 + dx], [0, scale, (1 - scale) * (h - 1) / 2 + dy]], np.float32)
    return cv2.warpAffine(channel, m, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)


def apply_camera_effects(rng: np.random.Generator, img: np.ndarray) -> np.ndarray:
    """Turn a float32 BGR radiance-like image into a camera frame.

    Args:
        rng: the scene's random generator.
        img: H x W x 3 float32 BGR, roughly in [0, 1] (highlights may exceed 1).

    Returns:
        H x W x 3 uint8 BGR frame.
    """
    h, w = img.shape[:2]
    out = img
    r = rng.random()
    if r < 0.25:  # motion blur
        out = cv2.filter2D(out, -1, _motion_kernel(float(rng.uniform(1.5, 5.0)), float(rng.uniform(0, math.pi))))
    elif r < 0.5:  # defocus
        out = cv2.GaussianBlur(out, (0, 0), float(rng.uniform(0.5, 1.4)))
    else:  # optics softness
        out = cv2.GaussianBlur(out, (0, 0), float(rng.uniform(0.3, 0.6)))
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    rad2 = ((xx - w / 2) ** 2 + (yy - h / 2) ** 2) / ((w / 2) ** 2 + (h / 2) ** 2)
    out = out * (1.0 - float(rng.uniform(0.0, 0.45)) * rad2)[..., None]
    gains = np.array([rng.uniform(0.85, 1.15), 1.0, rng.uniform(0.85, 1.15)], np.float32)
    exposure = float(np.exp(rng.normal(0.0, 0.3)))
    out = out * gains * exposure
    if rng.random() < 0.5:  # lateral chromatic aberration
        s = float(rng.uniform(0.996, 1.004))
        b, g, red = cv2.split(np.ascontiguousarray(out))
        out = cv2.merge(
            [
                _shift(b, 2 - s, float(rng.uniform(-0.6, 0.6)), 0.0),
                g,
                _shift(red, s, float(rng.uniform(-0.6, 0.6)), 0.0),
            ]
        )
    out = np.clip(out, 0.0, None)
    out = out / (1.0 + 0.15 * out)  # soft highlight roll-off
    out = np.power(out * 1.15, 1.0 / float(rng.uniform(1.0, 1.25)))
    sigma = float(rng.uniform(0.004, 0.03))
    shot = np.sqrt(np.clip(out, 0.0, 1.0)) * float(rng.uniform(0.0, 0.03))
    out = out + rng.normal(0.0, 1.0, out.shape).astype(np.float32) * (sigma + shot)
    frame = np.clip(out * 255.0 + 0.5, 0, 255).astype(np.uint8)
    if rng.random() < 0.7:
        ok, buf = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(35, 96))])
        if ok:
            frame = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    return frame

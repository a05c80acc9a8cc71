"""SSD anchor grids and the box encoding shared by training and the firmware decoder.

Anchors are ``(cy, cx, h, w)`` normalised to the model input (0..1), ordered
level by level, then row, column and anchor within a cell — the order in which a
detector's ``[1, N, 4]`` box and ``[1, N, C]`` score outputs are laid out.

Box encoding is the one of the TensorFlow Object Detection API and of
``TFLite_Detection_PostProcess`` (``y_scale, x_scale, h_scale, w_scale``, by
default ``10, 10, 5, 5``)::

    ty = (cy - cy_a) / h_a * y_scale      th = log(h / h_a) * h_scale
    tx = (cx - cx_a) / w_a * x_scale      tw = log(w / w_a) * w_scale

and the encodings are stored in the order ``(ty, tx, th, tw)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["BOX_SCALES", "AnchorLevel", "decode_boxes", "encode_boxes", "grid_anchors", "levels_from_manifest"]

#: default (y_scale, x_scale, h_scale, w_scale)
BOX_SCALES = (10.0, 10.0, 5.0, 5.0)


@dataclass(frozen=True)
class AnchorLevel:
    """One feature map of a detector.

    Attributes:
        stride: input pixels per cell; the grid is ``ceil(H / stride) x ceil(W / stride)``.
        sizes: anchor ``(width, height)`` in input pixels, one per anchor of a cell.
    """

    stride: int
    sizes: tuple[tuple[float, float], ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (as stored in manifests)."""
        return {"stride": self.stride, "sizes": [list(s) for s in self.sizes]}


def levels_from_manifest(levels: Sequence[Mapping[str, Any]]) -> tuple[AnchorLevel, ...]:
    """Parse ``[{"stride": 8, "sizes": [[w, h], ...]}, ...]``.

    Raises:
        ValueError: a level is malformed.
    """
    out = []
    for level in levels:
        try:
            stride = int(level["stride"])
            sizes = tuple((float(w), float(h)) for w, h in level["sizes"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"bad anchor level {level!r}: {exc}") from exc
        if stride <= 0 or not sizes or any(w <= 0 or h <= 0 for w, h in sizes):
            raise ValueError(f"bad anchor level {level!r}: stride and sizes must be positive")
        out.append(AnchorLevel(stride, sizes))
    if not out:
        raise ValueError("no anchor levels")
    return tuple(out)


def grid_anchors(input_width: int, input_height: int, levels: Sequence[AnchorLevel]) -> np.ndarray:
    """All anchors as an ``N x 4`` float32 array of normalised ``(cy, cx, h, w)``."""
    parts = []
    for level in levels:
        rows = -(-input_height // level.stride)
        cols = -(-input_width // level.stride)
        cy = (np.arange(rows, dtype=np.float64) + 0.5) * level.stride / input_height
        cx = (np.arange(cols, dtype=np.float64) + 0.5) * level.stride / input_width
        sizes = np.asarray(level.sizes, dtype=np.float64)
        grid = np.zeros((rows, cols, len(sizes), 4))
        grid[..., 0] = cy[:, None, None]
        grid[..., 1] = cx[None, :, None]
        grid[..., 2] = sizes[:, 1] / input_height
        grid[..., 3] = sizes[:, 0] / input_width
        parts.append(grid.reshape(-1, 4))
    return np.concatenate(parts).astype(np.float32)


def encode_boxes(boxes: np.ndarray, anchors: np.ndarray, scales: Sequence[float] = BOX_SCALES) -> np.ndarray:
    """Encode ``N x 4`` normalised ``(x_min, y_min, x_max, y_max)`` boxes against ``N`` anchors."""
    b = np.asarray(boxes, dtype=np.float64)
    a = np.asarray(anchors, dtype=np.float64)
    ys, xs, hs, ws = scales
    h = np.maximum(b[:, 3] - b[:, 1], 1e-6)
    w = np.maximum(b[:, 2] - b[:, 0], 1e-6)
    cy = (b[:, 1] + b[:, 3]) / 2
    cx = (b[:, 0] + b[:, 2]) / 2
    out = np.stack(
        [
            (cy - a[:, 0]) / a[:, 2] * ys,
            (cx - a[:, 1]) / a[:, 3] * xs,
            np.log(h / a[:, 2]) * hs,
            np.log(w / a[:, 3]) * ws,
        ],
        axis=1,
    )
    return out.astype(np.float32)


def decode_boxes(encodings: np.ndarray, anchors: np.ndarray, scales: Sequence[float] = BOX_SCALES) -> np.ndarray:
    """Inverse of :func:`encode_boxes`: ``N x 4`` normalised ``(x_min, y_min, x_max, y_max)``."""
    t = np.asarray(encodings, dtype=np.float32)
    a = np.asarray(anchors, dtype=np.float32)
    ys, xs, hs, ws = (np.float32(s) for s in scales)
    cy = t[:, 0] / ys * a[:, 2] + a[:, 0]
    cx = t[:, 1] / xs * a[:, 3] + a[:, 1]
    h = np.exp(np.clip(t[:, 2] / hs, -10.0, 10.0)) * a[:, 2]
    w = np.exp(np.clip(t[:, 3] / ws, -10.0, 10.0)) * a[:, 3]
    return np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)

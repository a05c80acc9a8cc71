"""Axis-aligned box overlap: the one vectorised IoU, and greedy non-maximum suppression.

Boxes are ``(x_min, y_min, x_max, y_max)`` rows in any consistent unit. A box
with ``x_max <= x_min`` or ``y_max <= y_min`` has zero area; the IoU of two
boxes whose union is empty is 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["box_iou", "iou_matrix", "nms"]


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection over union of every box of ``a`` (``N x 4``) with every box of ``b`` (``M x 4``): ``N x M``."""
    a = np.asarray(a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
    # np.maximum(x, 0.0) rather than np.clip(x, 0.0, None): the same values without clip's Python-level wrapper
    iw = np.maximum(np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0]), 0.0)
    ih = np.maximum(np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1]), 0.0)
    inter = iw * ih
    area_a = np.maximum(a[:, 2] - a[:, 0], 0.0) * np.maximum(a[:, 3] - a[:, 1], 0.0)
    area_b = np.maximum(b[:, 2] - b[:, 0], 0.0) * np.maximum(b[:, 3] - b[:, 1], 0.0)
    union = area_a[:, None] + area_b[None, :] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def box_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """The IoU of two boxes: :func:`iou_matrix`'s float64 operations, in its order, on plain floats.

    Two boxes are too few for numpy: its per-call cost is many times the arithmetic.
    """
    ax0, ay0, ax1, ay1 = (float(v) for v in a)
    bx0, by0, bx1, by1 = (float(v) for v in b)
    iw = max(min(ax1, bx1) - max(ax0, bx0), 0.0)
    ih = max(min(ay1, by1) - max(ay0, by0), 0.0)
    inter = iw * ih
    union = max(ax1 - ax0, 0.0) * max(ay1 - ay0, 0.0) + max(bx1 - bx0, 0.0) * max(by1 - by0, 0.0) - inter
    return inter / union if union > 0 else 0.0


#: up to this many boxes, NMS runs on Python floats: numpy's per-call cost outweighs its loops there
_PLAIN_NMS_MAX = 48


def _plain_nms(boxes: list[list[float]], order: list[int], iou_threshold: float, max_out: int) -> list[int]:
    """Greedy NMS over ``order`` (indices, best first), as :func:`nms` does it with arrays."""
    keep: list[int] = []
    while order and len(keep) < max_out:
        best = boxes[order[0]]
        keep.append(order[0])
        order = [j for j in order[1:] if box_iou(best, boxes[j]) <= iou_threshold]
    return keep


def nms(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float, max_out: int) -> np.ndarray:
    """Greedy non-maximum suppression (class-agnostic: call it once per class).

    Args:
        boxes: ``N x 4`` ``(x_min, y_min, x_max, y_max)``.
        scores: ``N`` scores.
        iou_threshold: a box whose IoU with an already kept box is ``>`` this is dropped.
        max_out: stop after keeping this many.

    Returns:
        Indices of the kept boxes, best score first (equal scores: lower index first).

    Raises:
        ValueError: shapes disagree, ``iou_threshold`` outside [0, 1] or ``max_out < 0``.
    """
    b = np.asarray(boxes, dtype=np.float64)
    s = np.asarray(scores, dtype=np.float64)
    if b.ndim != 2 or b.shape[1] != 4 or s.shape != (b.shape[0],):
        raise ValueError(f"nms needs N x 4 boxes and N scores, got {list(b.shape)} and {list(s.shape)}")
    if not 0.0 <= iou_threshold <= 1.0:
        raise ValueError(f"iou_threshold must be within [0, 1], got {iou_threshold}")
    if max_out < 0:
        raise ValueError(f"max_out must be >= 0, got {max_out}")
    order = np.argsort(-s, kind="stable")
    if len(order) <= _PLAIN_NMS_MAX:
        return np.asarray(_plain_nms(b.tolist(), order.tolist(), iou_threshold, max_out), dtype=np.intp)
    keep: list[int] = []
    while order.size and len(keep) < max_out:
        i, rest = order[0], order[1:]
        keep.append(int(i))
        order = rest[iou_matrix(b[i], b[rest])[0] <= iou_threshold]
    return np.asarray(keep, dtype=np.intp)

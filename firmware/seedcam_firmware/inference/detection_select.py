"""What a detection decoder returns, the thresholds it applies, and the selection every layout shares.

Selection: keep (box, class) pairs scoring at least ``score_threshold`` (the
:data:`MAX_CANDIDATES` best of them), clip boxes to the image and drop those
left empty, run greedy NMS per class, then keep the ``max_detections`` best.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from seedcam.errors import BundleError

from .boxes import nms

__all__ = ["MAX_CANDIDATES", "DetectionParams", "RawDetection", "select_dense", "select_detections"]

#: at most this many (box, class) pairs above the score threshold go into NMS, the best ones
MAX_CANDIDATES = 4096


@dataclass(frozen=True)
class RawDetection:
    """One detected object.

    Attributes:
        class_id: index into the decoder's ``labels``.
        score: confidence, 0..1.
        box: ``(x_min, y_min, x_max, y_max)`` normalised 0..1 to the model input image.
    """

    class_id: int
    score: float
    box: tuple[float, float, float, float]


@dataclass(frozen=True)
class DetectionParams:
    """Thresholds of the box selection.

    Attributes:
        score_threshold: keep scores ``>=`` this (0..1).
        iou_threshold: NMS drops a box whose IoU with a better box of its class
            is ``>`` this (0..1).
        max_detections: at most this many detections in all (>= 1).
    """

    score_threshold: float = 0.5
    iou_threshold: float = 0.45
    max_detections: int = 20

    def __post_init__(self) -> None:
        if not 0.0 <= self.score_threshold <= 1.0:
            raise ValueError(f"score_threshold must be within [0, 1], got {self.score_threshold}")
        if not 0.0 <= self.iou_threshold <= 1.0:
            raise ValueError(f"iou_threshold must be within [0, 1], got {self.iou_threshold}")
        if isinstance(self.max_detections, bool) or not isinstance(self.max_detections, int):
            raise ValueError(f"max_detections must be an int, got {self.max_detections!r}")
        if self.max_detections < 1:
            raise ValueError(f"max_detections must be >= 1, got {self.max_detections}")

    @classmethod
    def from_manifest(cls, decoder: Mapping[str, Any]) -> DetectionParams:
        """The defaults a manifest's ``decoder`` section sets (missing keys keep the class defaults).

        Raises:
            BundleError: a threshold is not a number or out of range.
        """
        kw: dict[str, Any] = {}
        try:
            for key in ("score_threshold", "iou_threshold"):
                if key in decoder:
                    kw[key] = float(decoder[key])
            if "max_detections" in decoder:
                kw["max_detections"] = decoder["max_detections"]  # an int: checked by the class
            return cls(**kw)
        except (TypeError, ValueError) as exc:
            raise BundleError(f"invalid detection thresholds in the manifest's decoder: {exc}") from exc


def select_detections(
    boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray, params: DetectionParams
) -> list[RawDetection]:
    """The selection (see :mod:`.detection`) over candidate ``(box, score, class)`` triples."""
    ok = scores >= params.score_threshold
    boxes = np.clip(boxes[ok], 0.0, 1.0)
    scores, classes = scores[ok], classes[ok]
    ok = (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])
    boxes, scores, classes = boxes[ok], scores[ok], classes[ok]
    if len(scores) > MAX_CANDIDATES:  # a model gone wrong: bound the NMS time
        best = np.sort(np.argpartition(-scores, MAX_CANDIDATES - 1)[:MAX_CANDIDATES])  # sorted: ties keep their order
        boxes, scores, classes = boxes[best], scores[best], classes[best]
    # Per-class NMS in one pass: moving each class's boxes to its own square [2c, 2c + 1] keeps classes apart.
    # Greedy NMS keeps the same boxes either way (a box is only ever suppressed by a better box of its class),
    # and one pass in score order can stop at max_detections.
    shifted = boxes.astype(np.float64) + 2.0 * classes.astype(np.float64)[:, None]
    keep = nms(shifted, scores, params.iou_threshold, params.max_detections)
    return [
        RawDetection(int(classes[i]), float(scores[i]), tuple(float(v) for v in boxes[i]))  # type: ignore[arg-type]
        for i in keep
    ]


def select_dense(boxes: np.ndarray, scores: np.ndarray, params: DetectionParams) -> list[RawDetection]:
    """:func:`select_detections` over ``N`` boxes x ``C`` class scores (every pair is a candidate)."""
    rows, cols = np.nonzero(scores >= params.score_threshold)
    return select_detections(boxes[rows], scores[rows, cols], cols, params)

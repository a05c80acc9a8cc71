"""Detection accuracy: mean average precision at IoU 0.5 (VOC-style, all-point interpolation).

:func:`evaluate_detector` scores a bundle on held-out scenes (:func:`heldout_block`) as the firmware runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from seedcam_firmware.inference.boxes import iou_matrix
from seedcam_firmware.inference.manifest import load_manifest
from seedcam_firmware.inference.preprocess import normalise
from seedcam_firmware.inference.runtime import Model

from .data import DETECT_INPUT, HELDOUT_SEED_BASE, LABELS, DetectionData, generate

__all__ = [
    "DEFAULT_SCORE_THRESHOLD",
    "average_precision",
    "decode_predictions",
    "error_breakdown",
    "evaluate_detector",
    "evaluate_keras",
    "heldout_block",
    "mean_average_precision",
    "threshold_metrics",
]

#: detections below this score are not counted (low, so that the PR curve is complete)
EVAL_SCORE_THRESHOLD = 0.05
IOU_MATCH = 0.5
#: the shipped decoder's score threshold, where recall and false positives are reported
DEFAULT_SCORE_THRESHOLD = 0.5

#: upper edges of the object-height bins (pixels at the model's input) of :func:`error_breakdown`
SIZE_BINS_PX = (12, 24, 48)
#: the most frequent class confusions :func:`error_breakdown` lists
TOP_CONFUSIONS = 10

Prediction = tuple[np.ndarray, np.ndarray, np.ndarray]  # boxes M x 4, scores M, classes M


def average_precision(recall: np.ndarray, precision: np.ndarray) -> float:
    """Area under the PR curve with precision made monotone (all-point interpolation)."""
    r = np.concatenate([[0.0], recall, [1.0]])
    p = np.concatenate([[0.0], precision, [0.0]])
    p = np.maximum.accumulate(p[::-1])[::-1]
    steps = np.nonzero(r[1:] != r[:-1])[0]
    return float(np.sum((r[steps + 1] - r[steps]) * p[steps + 1]))


def _match(box: np.ndarray, gt: np.ndarray, used: np.ndarray) -> bool:
    """Greedy match of ``box`` to the best unused truth box at IoU >= 0.5 (marks it used)."""
    if not len(gt):
        return False
    iou = iou_matrix(box, gt)[0]
    iou[used] = -1.0
    j = int(iou.argmax())
    if iou[j] >= IOU_MATCH:
        used[j] = True
        return True
    return False


def threshold_metrics(
    predictions: Sequence[Prediction],
    truth_boxes: Sequence[np.ndarray],
    truth_classes: Sequence[np.ndarray],
    threshold: float = DEFAULT_SCORE_THRESHOLD,
) -> dict[str, float]:
    """Recall and false positives per frame of the detections scoring >= ``threshold``.

    A detection is true when it matches (IoU >= 0.5, same class) a truth box not yet
    matched; one on a difficult object of its class is neither true nor false.
    """
    found = total = false = 0
    for (boxes, scores, classes), tb, tc in zip(predictions, truth_boxes, truth_classes, strict=True):
        total += int((tc >= 0).sum())
        for c in np.unique(classes):
            gt, hard = tb[tc == c], tb[tc == -1 - c]
            used = np.zeros(len(gt), bool)
            keep = (classes == c) & (scores >= threshold)
            for box in boxes[keep][np.argsort(-scores[keep])]:
                if _match(box, gt, used):
                    found += 1
                elif not (len(hard) and iou_matrix(box, hard).max() >= IOU_MATCH):
                    false += 1
    frames = max(len(predictions), 1)
    return {"threshold": threshold, "recall": found / max(total, 1), "false_positives_per_frame": false / frames}


def mean_average_precision(
    predictions: Sequence[Prediction],
    truth_boxes: Sequence[np.ndarray],
    truth_classes: Sequence[np.ndarray],
    num_classes: int = len(LABELS),
) -> dict[str, Any]:
    """mAP@0.5 over the classes that occur in the truth, with per-class AP and counts."""
    per_class: dict[str, float] = {}
    for c in range(num_classes):
        n_truth = sum(int((tc == c).sum()) for tc in truth_classes)
        if n_truth == 0:
            continue
        scored: list[tuple[float, bool]] = []
        for (boxes, scores, classes), tb, tc in zip(predictions, truth_boxes, truth_classes, strict=True):
            gt = tb[tc == c]
            used = np.zeros(len(gt), bool)
            keep = classes == c
            hard = tb[tc == -1 - c]  # difficult objects of this class: detections on them do not count
            for box, score in sorted(zip(boxes[keep], scores[keep], strict=True), key=lambda t: -t[1]):
                hit = _match(box, gt, used)
                if not hit and len(hard) and iou_matrix(box, hard).max() >= IOU_MATCH:
                    continue
                scored.append((float(score), hit))
        scored.sort(key=lambda t: -t[0])
        hits = np.array([h for _, h in scored], dtype=np.float64)
        tp = np.cumsum(hits)
        fp = np.cumsum(1.0 - hits)
        recall = tp / n_truth if len(hits) else np.zeros(0)
        precision = tp / np.maximum(tp + fp, 1e-12) if len(hits) else np.zeros(0)
        per_class[LABELS[c] if c < len(LABELS) else str(c)] = average_precision(recall, precision)
    m = float(np.mean(list(per_class.values()))) if per_class else 0.0
    return {
        "map50": m,
        "ap50_per_class": per_class,
        "objects": int(sum(int((t >= 0).sum()) for t in truth_classes)),
        "difficult_objects": int(sum(int((t < 0).sum()) for t in truth_classes)),
        "at_threshold": threshold_metrics(predictions, truth_boxes, truth_classes),
    }


def _outcome(box: np.ndarray, label: int, prediction: Prediction, threshold: float) -> tuple[str, int | None]:
    """What became of one truth object (found, mislabelled, scored_low or not_localised), and for a
    mislabelled one the class of the highest-scoring confident detection on it."""
    boxes, scores, classes = prediction
    if not len(boxes):
        return "not_localised", None
    overlapping = iou_matrix(box[None], boxes)[0] >= IOU_MATCH
    mine = overlapping & (classes == label)
    confident = overlapping & (scores >= threshold)
    if (mine & confident).any():
        return "found", None
    if confident.any():
        return "mislabelled", int(classes[confident][np.argmax(scores[confident])])
    return ("scored_low" if mine.any() else "not_localised"), None


def error_breakdown(
    predictions: Sequence[Prediction],
    truth_boxes: Sequence[np.ndarray],
    truth_classes: Sequence[np.ndarray],
    *,
    input_height: int,
    threshold: float = DEFAULT_SCORE_THRESHOLD,
    labels: Sequence[str] = LABELS,
) -> dict[str, Any]:
    """Where a detector loses objects, for deciding what to train next.

    Every non-difficult truth object gets one outcome: ``found`` (a detection of its class at
    IoU >= 0.5 scores >= ``threshold``), ``mislabelled`` (detections there score >= ``threshold``,
    none of its class), ``scored_low`` (its class is detected there, below ``threshold``) or
    ``not_localised`` (nothing of its class at IoU >= 0.5, even at the evaluation's low score).
    An object counts as found without greedy one-to-one matching, so ``found`` may exceed the
    matched recall of :func:`threshold_metrics` slightly. Also: recall at ``threshold`` by object
    height in model-input pixels, and the most frequent (truth, detected as) pairs of the
    mislabelled objects (the confident detection there that scores highest).
    """
    outcomes = {"found": 0, "mislabelled": 0, "scored_low": 0, "not_localised": 0}
    edges = (0, *SIZE_BINS_PX, None)
    bins = [{"objects": 0, "found": 0} for _ in SIZE_BINS_PX + (None,)]
    confusions: dict[tuple[str, str], int] = {}
    for prediction, tb, tc in zip(predictions, truth_boxes, truth_classes, strict=True):
        for box, label in zip(tb, tc, strict=True):
            if label < 0:
                continue
            outcome, other = _outcome(box, int(label), prediction, threshold)
            outcomes[outcome] += 1
            height = float(box[3] - box[1]) * input_height
            b = bins[sum(height >= edge for edge in SIZE_BINS_PX)]
            b["objects"] += 1
            b["found"] += outcome == "found"
            if other is not None:
                key = (labels[int(label)], labels[other] if other < len(labels) else str(other))
                confusions[key] = confusions.get(key, 0) + 1
    by_height = []
    for lo, hi, b in zip(edges[:-1], edges[1:], bins, strict=True):
        span = f"{lo}-{hi}" if hi is not None else f">={lo}"
        recall = b["found"] / b["objects"] if b["objects"] else None
        by_height.append({"height_px": span, "objects": b["objects"], "recall": recall})
    top = sorted(confusions.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_CONFUSIONS]
    return {
        "threshold": threshold,
        "outcomes": outcomes,
        "recall_by_height": by_height,
        "confusions": [{"truth": t, "detected_as": d, "count": n} for (t, d), n in top],
    }


def decode_predictions(boxes: np.ndarray, scores: np.ndarray, decoder: Any) -> list[Prediction]:
    """Decode a batch of ``boxes`` / ``scores`` outputs with a firmware detection decoder (low threshold)."""
    from seedcam_firmware.inference.detection import DetectionParams

    params = DetectionParams(score_threshold=EVAL_SCORE_THRESHOLD, iou_threshold=0.45, max_detections=50)
    out = []
    for i in range(len(boxes)):
        dets = decoder.decode({"boxes": boxes[i : i + 1], "scores": scores[i : i + 1]}, params)
        out.append(
            (
                np.array([d.box for d in dets], np.float32).reshape(-1, 4),
                np.array([d.score for d in dets], np.float32),
                np.array([d.class_id for d in dets], np.int64),
            )
        )
    return out


def evaluate_keras(model: Any, data: DetectionData) -> dict[str, Any]:
    """mAP@0.5 of a Keras detector on ``data`` (decoded by the firmware's decoder)."""
    from seedcam_firmware.inference.detection import make_detection_decoder

    from .model import DETECT_OUTPUTS, detector_decoder_config

    decoder = make_detection_decoder(
        detector_decoder_config(),
        input_width=DETECT_INPUT.width,
        input_height=DETECT_INPUT.height,
        outputs=DETECT_OUTPUTS,
    )
    out = model.predict(normalise(data.x, DETECT_INPUT), batch_size=64, verbose=0)
    preds = decode_predictions(out["boxes"], out["scores"], decoder)
    return mean_average_precision(preds, data.boxes, data.classes)


def heldout_block(samples: int, seed: int = 0) -> DetectionData:
    """Held-out scenes ``HELDOUT_SEED_BASE + seed * samples ...`` (never used in training)."""
    return generate(HELDOUT_SEED_BASE + seed * samples, samples)


def evaluate_detector(
    bundle_dir: Path,
    *,
    precision: str,
    samples: int = 1000,
    seed: int = 0,
    num_threads: int = 2,
    data: DetectionData | None = None,
) -> dict[str, Any]:
    """mAP@0.5 of a bundle's TFLite model on held-out scenes (``data``, else :func:`heldout_block` ``seed``).

    The model runs through the firmware's runtime and its manifest-chosen decoder,
    exactly as on the sensor. ``breakdown``: where objects are lost (:func:`error_breakdown`).
    """
    from seedcam_firmware.inference.detection import make_detection_decoder

    manifest = load_manifest(bundle_dir, precision=precision)
    model = Model(manifest.file, input_shape=manifest.input_shape, outputs=manifest.outputs, num_threads=num_threads)
    decoder = make_detection_decoder(
        manifest.decoder,
        input_width=manifest.input.width,
        input_height=manifest.input.height,
        outputs=manifest.outputs,
        bundle_dir=manifest.bundle_dir,
    )
    held_out = data is None
    if data is None:
        data = heldout_block(samples, seed)
    boxes, scores = [], []
    for i in range(len(data.x)):
        out = model.invoke(normalise(data.x[i : i + 1], DETECT_INPUT))
        boxes.append(out["boxes"])
        scores.append(out["scores"])
    preds = decode_predictions(np.concatenate(boxes), np.concatenate(scores), decoder)
    result = mean_average_precision(preds, data.boxes, data.classes)
    result["breakdown"] = error_breakdown(
        preds, data.boxes, data.classes, input_height=manifest.input.height, labels=tuple(manifest.decoder["labels"])
    )
    block = {"seed": seed} if held_out else {}  # the held-out block it rendered; given data has none
    return {"precision": precision, "samples": len(data.x), **block, **result}

"""Evaluate shipped bundles on labelled frames (:mod:`seedcam_tools.frames`), exactly as the firmware runs them.

* :func:`detector_on_frames` -- mAP@0.5 and, at the shipped threshold, recall and false positives
  per frame; difficult objects neither count nor cost.
* :func:`ocr_on_frames` -- exact text read from the given box (the plates at least ``min_width_px``
  wide), and two-stage through the firmware's own detect and OCR tasks (detect, match at IoU >=
  0.5, read, ``ocr.min_confidence`` applied) on every plate that is not difficult.
* :func:`lane_on_frames` -- offset / heading / curvature errors on frames whose status is ``ok``, and
  status accuracy on all of them.

The same functions score our worlds, the independent world and a user's folder (``--data``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from seedcam_firmware.inference.boxes import box_iou
from seedcam_firmware.inference.lane import decode_lane
from seedcam_firmware.inference.manifest import load_manifest
from seedcam_firmware.inference.preprocess import preprocess
from seedcam_firmware.inference.runtime import Model

from .detect.data import data_from_frames
from .frames import LabelledFrame
from .ocr.evaluate import line_breakdown, line_metrics

__all__ = ["IOU_MATCH", "OCR_MIN_WIDTH_PX", "detector_on_frames", "lane_on_frames", "ocr_on_frames"]

#: a detected plate reads a truth plate when their boxes overlap this much
IOU_MATCH = 0.5
#: the given-box OCR figure counts plates at least this wide in the 320 x 240 frame
OCR_MIN_WIDTH_PX = 44.0


def detector_on_frames(
    bundle_dir: str | Path, frames: Iterable[LabelledFrame], *, precision: str = "int8"
) -> dict[str, Any]:
    """Detection accuracy of a bundle on labelled frames.

    See :func:`~seedcam_tools.detect.evaluate.evaluate_detector`.
    """
    from .detect.evaluate import evaluate_detector

    manifest = load_manifest(Path(bundle_dir), precision=precision)
    labels = tuple(manifest.decoder["labels"])
    data, unknown = data_from_frames(frames, labels)
    report = evaluate_detector(Path(bundle_dir), precision=precision, data=data)
    report["unknown_label_objects"] = unknown
    return report


def ocr_on_frames(
    ocr_bundle: str | Path,
    frames: Iterable[LabelledFrame],
    *,
    precision: str = "int8",
    detect_bundle: str | Path | None = None,
    min_width_px: float = OCR_MIN_WIDTH_PX,
) -> dict[str, Any]:
    """Plate text accuracy of an OCR bundle on labelled frames.

    Returns ``given_box`` (plates >= ``min_width_px`` wide read from their true box as the OCR task
    reads a plate, :meth:`~seedcam_firmware.tasks.ocr.OcrTask.read_plate` with its default settings:
    one crop unless ``ocr.views`` asks for two, greedy decoding, no confidence filter; with where they
    go wrong, ``breakdown``: :func:`~.ocr.evaluate.line_breakdown`) and, with ``detect_bundle``, ``two_stage`` (every
    non-difficult plate: found by the detect task, matched at IoU >= 0.5, read by the OCR task with
    its default settings; a plate not found, or read wrong, or dropped below ``ocr.min_confidence``,
    is a miss).
    """
    from seedcam_firmware.tasks.detect import DetectTask
    from seedcam_firmware.tasks.ocr import OcrTask

    manifest = load_manifest(Path(ocr_bundle), precision=precision)
    detector = None
    if detect_bundle is not None:
        detector = DetectTask(load_manifest(Path(detect_bundle), precision=precision), num_threads=1)
    ocr_task = OcrTask(manifest, detector=detector, num_threads=1)
    given_read, given_truth, staged_read, staged_truth = [], [], [], []
    given_width: list[float] = []
    too_small = 0
    for f in frames:
        plates = [o for o in (f.objects or ()) if o.label == "plate" and not o.difficult]
        if not plates:
            continue
        h, w = f.image.shape[:2]
        for p in plates:
            if p.box[2] - p.box[0] < min_width_px:
                too_small += 1
                continue
            box = (p.box[0] / w, p.box[1] / h, p.box[2] / w, p.box[3] / h)
            given_read.append(ocr_task.read_plate(f.image, box).reading.text)  # as the task reads, greedy
            given_truth.append(p.text)
            given_width.append(float(p.box[2] - p.box[0]))
        if detector is not None:
            lines = [  # (text, box): the OCR task gives each line its plate's box
                (t.text, (t.box.x_min, t.box.y_min, t.box.x_max, t.box.y_max))
                for t in ocr_task.run(f.image).text_lines
                if t.box is not None
            ]
            for p in plates:
                truth_box = (p.box[0] / w, p.box[1] / h, p.box[2] / w, p.box[3] / h)
                best = max(lines, key=lambda t: box_iou(truth_box, t[1]), default=None)
                hit = best is not None and box_iou(truth_box, best[1]) >= IOU_MATCH
                staged_read.append(best[0] if hit and best is not None else "")
                staged_truth.append(p.text)
    report: dict[str, Any] = {"precision": precision}
    report["given_box"] = {
        "min_width_px": min_width_px,
        "plates": len(given_truth),
        "narrower_plates_left_out": too_small,
        **(line_metrics(given_read, given_truth) if given_truth else {}),
        "errors": [f"{t} -> {r}" for r, t in zip(given_read, given_truth, strict=True) if r != t][:12],
        "breakdown": line_breakdown(given_read, given_truth, given_width),
    }
    if detector is not None:
        report["two_stage"] = {
            "plates": len(staged_truth),
            "line_accuracy": float(np.mean([r == t for r, t in zip(staged_read, staged_truth, strict=True)]))
            if staged_truth
            else 0.0,
            "not_found_or_dropped": int(sum(r == "" for r in staged_read)),
        }
    return report


def lane_on_frames(
    bundle_dir: str | Path, frames: Iterable[LabelledFrame], *, precision: str = "int8"
) -> dict[str, Any]:
    """Lane accuracy of a bundle on labelled frames (errors on ``ok`` frames, status on all)."""
    manifest = load_manifest(Path(bundle_dir), precision=precision)
    model = Model(manifest.file, input_shape=manifest.input_shape, outputs=manifest.outputs, num_threads=1)
    errs, status_ok, n = [], 0, 0
    confusion: dict[str, int] = {}
    for f in frames:
        if f.lane is None:
            continue
        est = decode_lane(model.invoke(preprocess(f.image, manifest)), manifest)
        n += 1
        status_ok += int(est.status == f.lane.status)
        key = f"{f.lane.status}->{est.status}"
        confusion[key] = confusion.get(key, 0) + 1
        if f.lane.status == "ok":
            errs.append(
                [
                    est.offset_m - f.lane.offset_m,
                    est.heading_rad - f.lane.heading_rad,
                    est.curvature_per_m - f.lane.curvature_per_m,
                ]
            )
    e = np.abs(np.asarray(errs, np.float64).reshape(-1, 3))
    if not len(e):
        e = np.full((1, 3), np.nan)
    return {
        "precision": precision,
        "samples": n,
        "ok_samples": len(errs),
        "offset_mae_m": float(e[:, 0].mean()),
        "heading_mae_deg": float(math.degrees(e[:, 1].mean())),
        "curvature_mae_per_m": float(e[:, 2].mean()),
        "offset_p95_m": float(np.percentile(e[:, 0], 95)),
        "heading_p95_deg": float(math.degrees(np.percentile(e[:, 1], 95))),
        "status_accuracy": status_ok / max(n, 1),
        "status_confusion": dict(sorted(confusion.items())),
    }

"""Evaluate an OCR bundle: exact-line accuracy, the character error rate and the confidence calibration error.

Evaluation renders held-out plate crops (seeds from
:data:`~seedcam_tools.ocr.data.HELDOUT_SEED_BASE`, never used in training) through
the firmware path -- render, :func:`~seedcam_firmware.inference.plate.crop_plate`,
:func:`~seedcam_firmware.inference.preprocess.crop_resize`, :class:`Model`,
:func:`~seedcam_firmware.inference.ctc.greedy_decode` -- and scores exact-line
accuracy and the character error rate.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from seedcam_firmware.inference.ctc import greedy_decode
from seedcam_firmware.inference.preprocess import normalise
from seedcam_firmware.inference.runtime import Model
from seedcam_firmware.inference.validate import ctc_layout

from ..export import manifest_for_file
from .data import HELDOUT_SEED_BASE, Look, OcrData, generate

__all__ = [
    "ACCEPTANCE_LOOK",
    "calibration_error",
    "edit_distance",
    "evaluate_ocr",
    "evaluate_ocr_on",
    "heldout_data",
    "line_breakdown",
    "line_metrics",
]

#: the acceptance look: plates up to 0.55 m (>= ~44 px wide, >= ~5 px per character of the longest
#: texts); farther plates are trained on and reported, but often illegible at 320 x 240
ACCEPTANCE_LOOK = Look(max_forward_m=0.55)
#: plate widths (frame pixels) where :func:`line_breakdown`'s width bins start
WIDTH_BINS_PX = (60, 80, 120)
#: how many of the most frequent (truth, read) character pairs :func:`line_breakdown` lists
TOP_CONFUSIONS = 8


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions)."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def line_metrics(predicted: Sequence[str], truth: Sequence[str]) -> dict[str, float]:
    """Line accuracy (exact matches) and character error rate (edits / truth characters).

    Raises:
        ValueError: the lists differ in length or are empty.
    """
    if len(predicted) != len(truth) or not truth:
        raise ValueError("need equally long, non-empty lists of readings and truths")
    exact = sum(p == t for p, t in zip(predicted, truth, strict=True))
    edits = sum(edit_distance(p, t) for p, t in zip(predicted, truth, strict=True))
    chars = sum(len(t) for t in truth)
    return {"line_accuracy": exact / len(truth), "cer": edits / max(chars, 1), "samples": len(truth)}


def line_breakdown(predicted: Sequence[str], truth: Sequence[str], widths_px: Sequence[float]) -> dict[str, Any]:
    """Where the readings go wrong: exact-line accuracy by plate width and by text length, and the errors by kind.

    Args:
        predicted, truth: the readings and the true texts.
        widths_px: each plate's width in frame pixels.

    Returns:
        ``by_width_px`` (bins starting at :data:`WIDTH_BINS_PX`), ``by_text_length``, ``errors``:
        how many wrong readings dropped characters (shorter than the truth), added some (longer) or
        have the right length with wrong characters, and the most frequent ``(truth, read)``
        character pairs of the last kind.

    Raises:
        ValueError: the three lists differ in length.
    """
    if not len(predicted) == len(truth) == len(widths_px):
        raise ValueError("need one reading, one truth and one width per plate")
    edges = (0, *WIDTH_BINS_PX, None)
    by_width = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        hits = [
            p == t for p, t, w in zip(predicted, truth, widths_px, strict=True) if w >= lo and (hi is None or w < hi)
        ]
        span = f"{lo}-{hi}" if hi is not None else f">={lo}"
        by_width.append(
            {"width_px": span, "plates": len(hits), "line_accuracy": float(np.mean(hits)) if hits else None}
        )
    by_length = []
    for length in sorted({len(t) for t in truth}):
        hits = [p == t for p, t in zip(predicted, truth, strict=True) if len(t) == length]
        by_length.append({"characters": length, "plates": len(hits), "line_accuracy": float(np.mean(hits))})
    kinds = {"dropped_characters": 0, "added_characters": 0, "wrong_characters": 0}
    pairs: dict[tuple[str, str], int] = {}
    for p, t in zip(predicted, truth, strict=True):
        if p == t:
            continue
        if len(p) != len(t):
            kinds["dropped_characters" if len(p) < len(t) else "added_characters"] += 1
            continue
        kinds["wrong_characters"] += 1
        for a, b in zip(t, p, strict=True):
            if a != b:
                pairs[(a, b)] = pairs.get((a, b), 0) + 1
    top = sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_CONFUSIONS]
    return {
        "by_width_px": by_width,
        "by_text_length": by_length,
        "errors": {**kinds, "confusions": [{"truth": a, "read": b, "count": n} for (a, b), n in top]},
    }


def calibration_error(confidence: np.ndarray, correct: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error: the sample-weighted mean |accuracy - confidence| over ``bins`` equal bins."""
    confidence = np.asarray(confidence, np.float64)
    correct = np.asarray(correct, np.float64)
    idx = np.minimum((confidence * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        sel = idx == b
        if sel.any():
            total += sel.sum() * abs(correct[sel].mean() - confidence[sel].mean())
    return float(total / max(len(confidence), 1))


def heldout_data(seed: int, samples: int, *, look: Look | None = None, workers: int = 2) -> OcrData:
    """Held-out crops ``HELDOUT_SEED_BASE + seed * 1_000_000 + k`` for ``k < samples``.

    Args:
        seed: which block of held-out seeds.
        samples: number of crops.
        look: see :class:`~seedcam_tools.ocr.data.Look`; None: :data:`ACCEPTANCE_LOOK`.
        workers: rendering processes.

    Raises:
        ValueError: ``seed`` < 0 or ``samples`` outside 1..1_000_000.
    """
    if seed < 0 or not 1 <= samples <= 1_000_000:
        raise ValueError("seed must be >= 0 and samples within 1..1_000_000")
    first = HELDOUT_SEED_BASE + seed * 1_000_000
    return generate(first, samples, workers=workers, look=look or ACCEPTANCE_LOOK)


def evaluate_ocr_on(model_path: str | Path, data: OcrData, *, num_threads: int = 1) -> dict[str, Any]:
    """Line accuracy, CER and median invoke time of one ``.tflite`` of a bundle on ``data``.

    Args:
        model_path: ``ocr_int8.tflite`` or ``ocr_f32.tflite`` in a bundle folder
            (its ``manifest.json`` must sit beside it; the decoder settings come from it).
        data: crops made by :mod:`seedcam_tools.ocr.data`.
        num_threads: interpreter threads.

    Raises:
        ValueError: the file is not listed in the manifest next to it.
        BundleError: the manifest is invalid or the file's sha256 differs.
    """
    path = Path(model_path)
    manifest = manifest_for_file(path)
    dec = manifest.decoder
    model = Model(manifest.file, input_shape=manifest.input_shape, outputs=manifest.outputs, num_threads=num_threads)
    x = normalise(data.x, manifest.input)
    readings, raw, times = [], [], []
    for i in range(len(x)):
        t0 = time.perf_counter()
        out = model.invoke(x[i : i + 1])
        times.append(time.perf_counter() - t0)
        reading = greedy_decode(out["probs"][0], dec["alphabet"], int(dec["blank_index"]))
        readings.append(reading.text)
        raw.append(reading.confidence)
    truth = data.texts
    report: dict[str, Any] = {"model": path.name, "precision": manifest.precision}
    report.update(line_metrics(readings, truth))
    correct = np.array([r == t for r, t in zip(readings, truth, strict=True)])
    report["raw_confidence_ece"] = calibration_error(np.array(raw), correct)
    calibration = ctc_layout(manifest).calibration
    if calibration is not None:
        report["confidence_ece"] = calibration_error(np.array([calibration(c) for c in raw]), correct)
    report["invoke_ms_median"] = 1000.0 * float(np.median(times))
    report["errors"] = [f"{t} -> {r}" for r, t in zip(readings, truth, strict=True) if r != t][:12]
    return report


def evaluate_ocr(
    model_path: str | Path, *, seed: int = 0, samples: int = 1000, look: Look | None = None, num_threads: int = 1
) -> dict[str, Any]:
    """Accuracy of one ``.tflite`` of a bundle on freshly rendered held-out crops.

    Args:
        model_path: see :func:`evaluate_ocr_on`.
        seed: which block of held-out seeds (see :func:`heldout_data`).
        samples: number of crops.
        look: see :class:`~seedcam_tools.ocr.data.Look`; None: :data:`ACCEPTANCE_LOOK`.
        num_threads: interpreter threads.
    """
    look = look or ACCEPTANCE_LOOK
    data = heldout_data(seed, samples, look=look)
    report = evaluate_ocr_on(model_path, data, num_threads=num_threads)
    report.update({"seed": seed, "seed_base": HELDOUT_SEED_BASE + seed * 1_000_000, "look": asdict(look)})
    return report

"""Ship a trained OCR model: export both precisions, self-check, evaluate, write metrics.json.

The evaluation (held-out crops through the firmware path) is :mod:`seedcam_tools.ocr.evaluate`'s;
the INT8 file's confidence calibration is fitted here and written into the manifest.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from seedcam_firmware.inference.ctc import greedy_decode
from seedcam_firmware.inference.manifest import load_manifest
from seedcam_firmware.inference.preprocess import normalise
from seedcam_firmware.inference.runtime import Model
from seedcam_firmware.scene import DEFAULT_CAMERA

from ..export import bundle_id, bundle_reference, write_bundle, write_metrics
from . import OCR_VERSION
from .data import (
    ALPHABET,
    BLANK_INDEX,
    HELDOUT_SEED_BASE,
    OCR_INPUT,
    OCR_OUTPUTS,
    TIME_STEPS,
    VAL_SEED_BASE,
    Look,
    OcrData,
    generate,
    make_sample,
)
from .evaluate import ACCEPTANCE_LOOK, evaluate_ocr_on, heldout_data

__all__ = [
    "ACCEPTANCE",
    "MIN_PLATE_WIDTH_PX",
    "ocr_manifest",
    "fit_confidence_calibration",
    "invoke_speed",
    "ship_ocr_bundle",
]

log = logging.getLogger(__name__)

#: acceptance bar of the shipped model: INT8 exact-line accuracy on held-out crops of ACCEPTANCE_LOOK
ACCEPTANCE = {"int8_line_accuracy": 0.97, "max_forward_m": ACCEPTANCE_LOOK.max_forward_m}

#: plates narrower than this (frame pixels) are not read: the smallest the training world draws legibly
MIN_PLATE_WIDTH_PX = 40.0


def ocr_manifest(version: str = OCR_VERSION) -> dict[str, Any]:
    """The task-specific manifest keys of the OCR bundle of ``version`` (``ocr-v<major>``)."""
    return {
        "id": bundle_id("ocr", version),
        "name": "seedcam plate OCR (conv CRNN 1.5x wide, residual stages, 5 context blocks, CTC; randomized world)",
        "version": version,
        "task": "ocr",
        "decoder": {
            "type": "ctc",
            "alphabet": ALPHABET,
            "blank_index": BLANK_INDEX,
            "time_steps": TIME_STEPS,
            "min_plate_width_px": MIN_PLATE_WIDTH_PX,
        },
        "camera": DEFAULT_CAMERA.to_dict(),
    }


def fit_confidence_calibration(raw: np.ndarray, correct: np.ndarray) -> tuple[float, float]:
    """Platt scaling on the log: ``(a, b)`` of ``P(correct) = sigmoid(a * ln(raw) + b)``, by Newton's method.

    ``raw``: readings' raw confidences (product of character maxima), ``correct``: whether each
    reading was right. A tiny ridge keeps it finite when the data separate perfectly.
    """
    x = np.log(np.clip(np.asarray(raw, np.float64), 1e-12, 1.0))
    y = np.asarray(correct, np.float64)
    design = np.stack([x, np.ones_like(x)], axis=1)
    w = np.array([1.0, 0.0])
    ridge = 1e-3 * np.eye(2)
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(design @ w)))
        grad = design.T @ (p - y) + ridge @ w
        hess = (design * (p * (1 - p))[:, None]).T @ design + ridge
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    a, b = float(w[0]), float(w[1])
    return (a, b) if a > 1e-6 else (1e-6, b)


def _cpu_note() -> str:
    """The machine and whether it has int8 dot-product instructions (what INT8 speed-ups hinge on)."""
    import platform

    from ..cpu import cpu_flags

    flags = cpu_flags()
    dot = sorted(flags & {"avx512_vnni", "avx_vnni", "amx_int8", "asimddp"})
    simd = sorted(flags & {"avx2", "avx512f", "asimd", "neon"})
    return f"{platform.machine()}; SIMD {', '.join(simd) or 'unknown'}; int8 dot product: {', '.join(dot) or 'none'}"


def invoke_speed(bundle_dir: Path, pixels: np.ndarray, *, rounds: int = 30, per_round: int = 10) -> dict[str, Any]:
    """Median single-thread invoke time of both precisions, measured interleaved (fair under load).

    Args:
        bundle_dir: the bundle folder.
        pixels: uint8 model pixels (N x H x W x 3) cycled through as inputs.
        rounds, per_round: ``rounds`` alternations of ``per_round`` invokes per precision.
    """
    models = {}
    for prec in ("float32", "int8"):
        m = load_manifest(bundle_dir, precision=prec)
        models[prec] = Model(m.file, input_shape=m.input_shape, outputs=m.outputs, num_threads=1)
    x = normalise(pixels, OCR_INPUT)
    times: dict[str, list[float]] = {k: [] for k in models}
    for r in range(rounds):
        for prec, model in models.items():
            for i in range(per_round):
                xi = x[(r * per_round + i) % len(x)][None]
                t0 = time.perf_counter()
                model.invoke(xi)
                times[prec].append(time.perf_counter() - t0)
    ms = {k: 1000.0 * float(np.median(v)) for k, v in times.items()}
    return {
        "cpu": _cpu_note(),
        "threads": 1,
        "float32_ms": ms["float32"],
        "int8_ms": ms["int8"],
        "int8_speedup": ms["float32"] / ms["int8"],
        "invokes_each": rounds * per_round,
    }


#: validation seeds the confidence calibration is fitted on (apart from training, its validation and held-out seeds)
CONFIDENCE_SEED_BASE = VAL_SEED_BASE + 500_000


def _calibrate_confidence(out_dir: Path, data: OcrData) -> dict[str, Any]:
    """Fit the INT8 file's confidence calibration on ``data`` and write it into the bundle's manifest."""
    import json

    manifest = load_manifest(out_dir, precision="int8")
    dec = manifest.decoder
    model = Model(manifest.file, input_shape=manifest.input_shape, outputs=manifest.outputs, num_threads=1)
    x = normalise(data.x, manifest.input)
    raw, correct = [], []
    for i, truth in enumerate(data.texts):
        reading = greedy_decode(model.invoke(x[i : i + 1])["probs"][0], dec["alphabet"], int(dec["blank_index"]))
        raw.append(reading.confidence)
        correct.append(reading.text == truth)
    a, b = fit_confidence_calibration(np.array(raw), np.array(correct))
    path = out_dir / "manifest.json"
    doc = json.loads(path.read_text())
    fitted_on = f"{len(raw)} validation crops from seed {int(data.seeds[0])} (INT8 readings)"
    doc["decoder"]["confidence_calibration"] = {"method": "platt_log", "a": a, "b": b, "fitted_on": fitted_on}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(path)
    return {"a": a, "b": b, "fitted_on": fitted_on, "validation_accuracy": float(np.mean(correct))}


def ship_ocr_bundle(
    keras_path: Path,
    out_dir: Path,
    *,
    eval_samples: int = 1000,
    eval_seed: int = 0,
    calibration_samples: int = 500,
    train_info: dict[str, Any] | None = None,
    random_fraction: float = 0.0,
    confidence_samples: int = 2000,
    version: str = OCR_VERSION,
) -> dict[str, Any]:
    """Export ``keras_path`` into the bundle folder ``out_dir`` and record its metrics.

    Representative (INT8 calibration) data come from training seeds
    ``[0, calibration_samples)`` (at least 100), the float-check inputs are the
    first 100 of them; the golden input is validation crop
    ``VAL_SEED_BASE``; evaluation uses held-out seeds (see :func:`heldout_data`):
    ``eval_samples`` crops of :data:`ACCEPTANCE_LOOK` (the acceptance and the
    ``summary``), and half as many of the training look (plates to 0.7 m) and of
    that with random_scene's full blur (reported, not part of the acceptance).
    ``random_fraction`` of the representative crops come from the randomized world, as
    in training. The INT8 file's confidence calibration is fitted on ``confidence_samples``
    validation crops from :data:`CONFIDENCE_SEED_BASE` and written into the manifest. ``version``
    names the bundle (``ocr-v<major>``).

    Raises:
        RuntimeError: the float TFLite deviates from Keras (see :func:`write_bundle`).
    """
    import keras

    from .train import ctc_loss

    model = keras.models.load_model(keras_path, custom_objects={"ctc_loss": ctc_loss}, compile=False)
    rep = generate(0, max(100, calibration_samples), random_fraction=random_fraction)
    golden = make_sample(VAL_SEED_BASE)[0]
    out_dir = Path(out_dir)
    facts = write_bundle(
        out_dir,
        model,
        stem="ocr",
        input_spec=OCR_INPUT,
        outputs=OCR_OUTPUTS,
        representative=rep.x,
        check_pixels=rep.x[:100],
        golden_pixels=golden,
        manifest=ocr_manifest(version),
    )
    conf = _calibrate_confidence(
        out_dir, generate(CONFIDENCE_SEED_BASE, confidence_samples, random_fraction=random_fraction)
    )
    looks = {
        "heldout": (ACCEPTANCE_LOOK, eval_samples, "the acceptance set: plates 0.28-0.55 m, training blur"),
        "heldout_full_range": (Look(), eval_samples // 2, "plates 0.28-0.7 m (the training look)"),
        "heldout_full_blur": (Look(full_blur=True), eval_samples // 2, "plates 0.28-0.7 m, random_scene's full blur"),
    }
    sections: dict[str, Any] = {}
    speed_pixels = None
    for key, (look, n, note) in looks.items():
        data = heldout_data(eval_seed, max(1, n), look=look)
        speed_pixels = data.x[:64] if speed_pixels is None else speed_pixels
        sec: dict[str, Any] = {"seed_base": HELDOUT_SEED_BASE, "eval_seed": eval_seed, "look": asdict(look)}
        sec["note"] = note
        for prec, name in (("float32", "ocr_f32.tflite"), ("int8", "ocr_int8.tflite")):
            sec[prec] = evaluate_ocr_on(out_dir / name, data)
            log.info("%s %s: %s", key, prec, sec[prec])
        sections[key] = sec
    assert speed_pixels is not None
    speed = invoke_speed(out_dir, speed_pixels)
    summary = {
        "metric": f"line accuracy (plates <= {ACCEPTANCE_LOOK.max_forward_m} m)",
        "float32": sections["heldout"]["float32"]["line_accuracy"],
        "int8": sections["heldout"]["int8"]["line_accuracy"],
    }
    metrics = {
        "model_params": int(model.count_params()),
        "export": facts,
        **sections,
        "summary": summary,
        "acceptance": {**ACCEPTANCE, "passes": summary["int8"] >= ACCEPTANCE["int8_line_accuracy"]},
        "confidence_calibration": conf,
        "speed": speed,
        "training": train_info or {},
        "reproduce": f"seedcam-tools eval-ocr --model {bundle_reference(out_dir)} --precision int8 "
        f"--samples {eval_samples} --seed {eval_seed} --max-forward {ACCEPTANCE_LOOK.max_forward_m}",
    }
    write_metrics(out_dir, metrics)
    return metrics

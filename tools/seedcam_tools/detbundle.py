"""Ship a trained detector: export both precisions, self-check, evaluate mAP on held-out scenes, write metrics."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from seedcam_firmware.inference.manifest import load_manifest
from seedcam_firmware.inference.preprocess import normalise
from seedcam_firmware.inference.runtime import Model
from seedcam_firmware.scene import DEFAULT_CAMERA

from .detdata import DETECT_INPUT, HELDOUT_SEED_BASE, VAL_SEED_BASE, DetectionData, generate, make_sample
from .detmetrics import decode_predictions, mean_average_precision
from .detmodel import DETECT_OUTPUTS, detector_decoder_config
from .export import write_bundle, write_metrics

__all__ = ["ACCEPTANCE", "evaluate_detector", "heldout_block", "ship_detector_bundle"]

log = logging.getLogger(__name__)

#: acceptance bars on held-out scenes (mAP@0.5)
ACCEPTANCE = {"float32": 0.95, "int8": 0.94}


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
    """mAP@0.5 of a bundle's TFLite model on held-out scenes (``data``, else :func:`heldout_block`).

    The model runs through the firmware's runtime and its manifest-chosen decoder,
    exactly as on the sensor.
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
    if data is None:
        data = heldout_block(samples, seed)
    boxes, scores = [], []
    for i in range(len(data.x)):
        out = model.invoke(normalise(data.x[i : i + 1], DETECT_INPUT))
        boxes.append(out["boxes"])
        scores.append(out["scores"])
    preds = decode_predictions(np.concatenate(boxes), np.concatenate(scores), decoder)
    result = mean_average_precision(preds, data.boxes, data.classes)
    return {"precision": precision, "samples": len(data.x), "seed": seed, **result}


def ship_detector_bundle(
    keras_path: Path,
    out_dir: Path,
    *,
    eval_samples: int = 1000,
    eval_seed: int = 0,
    train_info: dict[str, Any] | None = None,
    random_fraction: float | None = None,
) -> dict[str, Any]:
    """Export ``keras_path`` into the bundle folder ``out_dir`` and record its metrics.

    INT8 calibration and the float check use training seeds ``[0, 500)``, from the
    randomized world in the share the training used (``random_fraction``, else
    ``train_info["random_world_fraction"]``); the golden input is validation scene
    ``VAL_SEED_BASE + 1``; evaluation uses held-out seeds.
    """
    import keras

    from .train_detect import CUSTOM_OBJECTS

    model = keras.models.load_model(keras_path, custom_objects=CUSTOM_OBJECTS, compile=False)
    if random_fraction is None:
        random_fraction = float((train_info or {}).get("random_world_fraction", 0.0))
    rep = generate(0, 500, random_fraction=random_fraction)
    golden = make_sample(VAL_SEED_BASE + 1)[0]
    facts = write_bundle(
        out_dir,
        model,
        stem="detect",
        input_spec=DETECT_INPUT,
        outputs=DETECT_OUTPUTS,
        representative=rep.x,
        check_pixels=rep.x[:100],
        golden_pixels=golden,
        manifest={
            "id": "detect-v4",
            "name": "seedcam road signs and plates (SSD with residual blocks; trained on the randomized world)",
            "version": "4.0.0",
            "task": "detect",
            "decoder": detector_decoder_config(),
            "camera": DEFAULT_CAMERA.to_dict(),
        },
    )
    results = {}
    heldout = heldout_block(eval_samples, eval_seed)
    for precision in ("float32", "int8"):
        r = evaluate_detector(out_dir, precision=precision, seed=eval_seed, data=heldout)
        r["passes_acceptance"] = bool(r["map50"] >= ACCEPTANCE[precision])
        results[precision] = r
        log.info("%s: mAP@0.5 %.4f", precision, r["map50"])
    metrics = {
        "model_params": int(model.count_params()),
        "export": facts,
        "heldout": {"seed_base": HELDOUT_SEED_BASE, "eval_seed": eval_seed, **results},
        "summary": {"metric": "mAP@0.5", "float32": results["float32"]["map50"], "int8": results["int8"]["map50"]},
        "acceptance": ACCEPTANCE,
        "training": train_info or {},
        "reproduce": f"seedcam-tools eval-detector --model {out_dir} --precision int8 --samples {eval_samples}",
    }
    write_metrics(out_dir, metrics)
    return metrics

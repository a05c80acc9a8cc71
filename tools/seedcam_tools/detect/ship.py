"""Ship a trained detector: export both precisions, self-check, evaluate mAP on held-out scenes, write metrics."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from seedcam_firmware.inference.preprocess import normalise
from seedcam_firmware.scene import DEFAULT_CAMERA

from ..export import bundle_id, bundle_reference, write_bundle, write_metrics
from . import DETECT_VERSION
from .data import DETECT_INPUT, HELDOUT_SEED_BASE, VAL_SEED_BASE, generate, make_sample
from .evaluate import evaluate_detector, heldout_block
from .model import DETECT_OUTPUTS, detector_decoder_config, fold_dead_branches

__all__ = ["ACCEPTANCE", "ship_detector_bundle"]

log = logging.getLogger(__name__)

#: acceptance bars on held-out scenes (mAP@0.5)
ACCEPTANCE = {"float32": 0.95, "int8": 0.94}


def ship_detector_bundle(
    keras_path: Path,
    out_dir: Path,
    *,
    eval_samples: int = 1000,
    eval_seed: int = 0,
    train_info: dict[str, Any] | None = None,
    random_fraction: float | None = None,
    version: str = DETECT_VERSION,
) -> dict[str, Any]:
    """Export ``keras_path`` into the bundle folder ``out_dir`` and record its metrics.

    INT8 calibration and the float check use training seeds ``[0, 500)``, from the
    randomized world in the share the training used (``random_fraction``, else
    ``train_info["random_world_fraction"]``); the golden input is validation scene
    ``VAL_SEED_BASE + 1``; evaluation uses held-out seeds. ``version`` names the bundle
    (``detect-v<major>``). Residual branches that are dead on the
    calibration scenes are folded first (:func:`~.model.fold_dead_branches`), so that the INT8 file runs.
    """
    import keras

    from .train import CUSTOM_OBJECTS

    model = keras.models.load_model(keras_path, custom_objects=CUSTOM_OBJECTS, compile=False)
    if random_fraction is None:
        random_fraction = float((train_info or {}).get("random_world_fraction", 0.0))
    rep = generate(0, 500, random_fraction=random_fraction)
    folded = fold_dead_branches(model, normalise(rep.x, DETECT_INPUT))
    if folded:
        log.info("folded dead residual branches before export: %s", ", ".join(folded))
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
            "id": bundle_id("detect", version),
            "name": "seedcam road signs and plates (SSD with residual blocks; trained on the randomized world)",
            "version": version,
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
        "export": {**facts, "dead_branches_folded": folded},
        "heldout": {"seed_base": HELDOUT_SEED_BASE, "eval_seed": eval_seed, **results},
        "summary": {"metric": "mAP@0.5", "float32": results["float32"]["map50"], "int8": results["int8"]["map50"]},
        "acceptance": ACCEPTANCE,
        "training": train_info or {},
        "reproduce": f"seedcam-tools eval-detector --model {bundle_reference(out_dir)} --precision int8 "
        f"--samples {eval_samples}",
    }
    write_metrics(out_dir, metrics)
    return metrics

"""Ship a trained lane model: export both precisions, self-check, evaluate, write metrics.json.

:func:`write_lane_bundle` writes the lane bundle through :func:`~seedcam_tools.export.write_bundle`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from seedcam_firmware.scene import DEFAULT_CAMERA

from ..export import bundle_id, write_bundle, write_metrics
from . import LANE_VERSION
from .data import HELDOUT_SEED_BASE, LANE_INPUT, MASK_SIZE, SCALES, generate, make_sample
from .evaluate import evaluate_lane
from .train import VAL_SEED_BASE

__all__ = ["ACCEPTANCE", "LANE_OUTPUTS", "ship_lane_bundle", "write_lane_bundle"]

log = logging.getLogger(__name__)

#: acceptance bars for the shipped models on held-out scenes with both lines visible
ACCEPTANCE = {"offset_mae_m": 0.015, "heading_mae_deg": 1.5}

LANE_OUTPUTS = {"mask": (1, *MASK_SIZE, 2), "lane_state": (1, 4), "presence": (1, 2)}


def write_lane_bundle(
    out_dir: Path,
    model: Any,
    representative: np.ndarray,
    check_pixels: np.ndarray,
    golden_pixels: np.ndarray,
    *,
    version: str = "1.0.0",
) -> dict[str, Any]:
    """Write the lane bundle (``lane_f32``/``lane_int8.tflite``, goldens, manifest); see :func:`write_bundle`."""
    return write_bundle(
        out_dir,
        model,
        stem="lane",
        input_spec=LANE_INPUT,
        outputs=LANE_OUTPUTS,
        representative=representative,
        check_pixels=check_pixels,
        golden_pixels=golden_pixels,
        manifest={
            "id": bundle_id("lane", version),
            "name": "seedcam lane state (synthetic-trained CNN)",
            "version": version,
            "task": "lane",
            "decoder": {
                "state_order": ["offset_m", "heading_rad", "curvature_per_m", "lane_width_m"],
                "state_centre": list(SCALES["centre"]),
                "state_scale": list(SCALES["scale"]),
                "presence_threshold": 0.5,
                "mask_channels": ["left_line", "right_line"],
                "reference": "floor point directly below the camera; REP-103 (+y left)",
            },
            "camera": DEFAULT_CAMERA.to_dict(),
        },
    )


def ship_lane_bundle(
    keras_path: Path,
    out_dir: Path,
    *,
    eval_samples: int = 1000,
    eval_seed: int = 0,
    train_info: dict[str, Any] | None = None,
    random_fraction: float = 0.0,
    version: str = LANE_VERSION,
) -> dict[str, Any]:
    """Export ``keras_path`` into the bundle folder ``out_dir`` and record its metrics.

    Representative (INT8 calibration) data and the float-check inputs come from
    training seeds ``[0, 500)`` (``random_fraction`` of them from the randomized world,
    as in training); the golden input is validation scene ``VAL_SEED_BASE``;
    evaluation uses held-out seeds (see :func:`evaluate_lane`).
    """
    import keras

    from .train import _presence_loss, _state_loss

    model = keras.models.load_model(
        keras_path, custom_objects={"_state_loss": _state_loss, "_presence_loss": _presence_loss}, compile=False
    )
    rep = generate(0, 500, random_fraction=random_fraction)
    golden = make_sample(VAL_SEED_BASE)[0]
    facts = write_lane_bundle(out_dir, model, rep.x, rep.x[:100], golden, version=version)
    results = {}
    for prec, name in (("float32", "lane_f32.tflite"), ("int8", "lane_int8.tflite")):
        r = evaluate_lane(out_dir / name, seed=eval_seed, samples=eval_samples)
        r["passes_acceptance"] = bool(
            r["offset_mae_m"] <= ACCEPTANCE["offset_mae_m"] and r["heading_mae_deg"] <= ACCEPTANCE["heading_mae_deg"]
        )
        results[prec] = r
        log.info("%s: %s", prec, r)
    metrics = {
        "model_params": int(model.count_params()),
        "export": facts,
        "heldout": {"seed_base": HELDOUT_SEED_BASE, "eval_seed": eval_seed, **results},
        "acceptance": ACCEPTANCE,
        "training": train_info or {},
        "reproduce": (
            'python -c "from seedcam_tools.lane.evaluate import evaluate_lane; '
            f"print(evaluate_lane('models/lane/lane_int8.tflite', seed={eval_seed}, samples={eval_samples}))\""
        ),
    }
    write_metrics(out_dir, metrics)
    return metrics

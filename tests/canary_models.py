"""A lane model that is exact on its golden input and NaN on every other input (issue 14, finding 10).

It passes the on-device self-test (golden input -> golden output, error 0) and gives NaN lane
states on real frames: ``lane_state = golden + sqrt(-sign(max |image - golden_input|))``.
Building it needs TensorFlow (the tools' stack); the file is cached per test session by the caller.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from seedcam.bundle import Bundle
from seedcam_tools.bundles import build_model_bundle, model_bundle_files

__all__ = ["nan_lane_bundle", "write_nan_lane_model"]

LANE = Path(__file__).resolve().parents[1] / "models" / "lane"


def write_nan_lane_model(path: Path) -> bytes:
    """Write the float32 ``.tflite`` to ``path``; returns its bytes."""
    import keras
    import tensorflow as tf

    from seedcam_tools.export import to_tflite
    from seedcam_tools.lane.data import LANE_INPUT
    from seedcam_tools.lane.ship import LANE_OUTPUTS

    golden_in = np.load(LANE / "golden_input.npy").astype(np.float32)
    with np.load(LANE / "golden_output_f32.npz") as ref:
        golden_out = {k: ref[k].astype(np.float32) for k in LANE_OUTPUTS}

    def constant(model: Any, name: str, value: np.ndarray) -> Any:
        init = keras.initializers.Constant(value)
        return model.add_weight(shape=value.shape, initializer=init, trainable=False, name=name, dtype="float32")

    class NanOffGolden(keras.Model):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(name="nan_off_golden")
            self.golden = constant(self, "golden_input", golden_in)
            self.outs = {k: constant(self, k, v) for k, v in golden_out.items()}

        def call(self, image: Any) -> dict[str, Any]:
            away = tf.sign(tf.reduce_max(tf.abs(image - self.golden)))  # 0 on the golden input, else 1
            zero = away * 0.0
            nan = tf.sqrt(-away)  # 0, or NaN
            return {
                "mask": self.outs["mask"] + zero,
                "lane_state": self.outs["lane_state"] + nan,
                "presence": self.outs["presence"] + zero,
            }

    model = NanOffGolden()
    model(tf.zeros(LANE_INPUT.shape))
    return to_tflite(model, path, int8=False, input_spec=LANE_INPUT, outputs=LANE_OUTPUTS)


def nan_lane_bundle(model: bytes, version: str, *, counter: int = 0) -> Bundle:
    """A float32 lane bundle of ``version`` carrying ``model`` (from :func:`write_nan_lane_model`)."""
    files = model_bundle_files(LANE, "float32")
    manifest = json.loads(files[0][2])
    manifest["files"]["float32"]["sha256"] = hashlib.sha256(model).hexdigest()
    files = [
        (
            name,
            role,
            json.dumps(manifest, indent=2).encode() if role == "manifest" else model if role == "model" else data,
        )
        for name, role, data in files
    ]
    return build_model_bundle(LANE, precision="float32", version=version, security_counter=counter, files=files)

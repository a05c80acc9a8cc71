"""Convert trained Keras models to float32 and full-integer INT8 TFLite bundles.

Every model we ship goes through :func:`write_bundle`: float32 export, the
float-vs-Keras conversion check, full-INT8 export with a representative dataset,
golden input/outputs, and ``manifest.json``. :func:`manifest_for_file` finds the
manifest entry of one ``.tflite`` of such a bundle folder (where the evaluators start).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from seedcam_firmware import __version__ as FIRMWARE_VERSION
from seedcam_firmware.inference.manifest import ModelManifest, load_manifest, sha256_file
from seedcam_firmware.inference.preprocess import InputSpec, normalise
from seedcam_firmware.inference.runtime import Model

Outputs = dict[str, tuple[int, ...]]

__all__ = [
    "bundle_id",
    "bundle_reference",
    "check_float_conversion",
    "manifest_for_file",
    "to_tflite",
    "write_bundle",
    "write_metrics",
]

log = logging.getLogger(__name__)


def _converter(model: Any, workdir: Path, input_spec: InputSpec, outputs: Outputs) -> Any:
    """A converter for a SavedModel with one static-batch-1 ``serving_default`` endpoint."""
    import keras
    import tensorflow as tf

    archive = keras.export.ExportArchive()
    archive.track(model)

    def serve(image: Any) -> dict[str, Any]:
        out = model(image, training=False)
        return {k: out[k] for k in outputs}

    archive.add_endpoint(
        "serving_default", serve, input_signature=[tf.TensorSpec(input_spec.shape, tf.float32, name="image")]
    )
    saved = workdir / "saved_model"
    archive.write_out(str(saved), verbose=False)
    return tf.lite.TFLiteConverter.from_saved_model(str(saved), signature_keys=["serving_default"])


def to_tflite(
    model: Any,
    out_path: Path,
    *,
    int8: bool,
    representative: np.ndarray | None = None,
    input_spec: InputSpec,
    outputs: Outputs,
) -> bytes:
    """Convert with static batch 1; INT8 is full-integer (uint8 input, int8 outputs).

    Args:
        model: the Keras model (a dict of named outputs, a superset of ``outputs``).
        input_spec: the model input (shape and normalisation).
        outputs: output name -> shape, exported in this order.
        out_path: where to write the ``.tflite``.
        int8: quantize fully to integers.
        representative: uint8 model pixels (N x H x W x 3) from TRAINING scenes,
            required for ``int8``.
    """
    import tempfile

    import tensorflow as tf

    tmp = tempfile.TemporaryDirectory(prefix="seedcam-export-")
    conv = _converter(model, Path(tmp.name), input_spec, outputs)
    if int8:
        if representative is None:
            raise ValueError("int8 conversion needs representative data")
        rep = normalise(representative, input_spec)

        def gen() -> Iterator[list[np.ndarray]]:
            for i in range(len(rep)):
                yield [rep[i : i + 1]]

        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = gen
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = tf.uint8
        conv.inference_output_type = tf.int8
    try:
        blob = conv.convert()
    finally:
        tmp.cleanup()
    Path(out_path).write_bytes(blob)
    return blob


#: largest max |tflite - keras| / max |keras| a float32 export may show. A wrong op or layout
#: shows up as 1e-2 and more; summation order alone (TensorFlow's kernels vs XNNPACK) gave up
#: to 3.5e-6 on v1 bundles and 1.5e-5 on the sharper softmax of ocr-v2, hence 5e-5.
FLOAT_CONVERSION_TOLERANCE = 5e-5


def check_float_conversion(
    model: Any,
    tflite_path: Path,
    pixels: np.ndarray,
    *,
    input_spec: InputSpec,
    outputs: Outputs,
) -> float:
    """Max |tflite - keras| / max |keras| over all outputs and the given inputs."""
    tfl = Model(tflite_path, input_shape=input_spec.shape, outputs=outputs, num_threads=1)
    x = normalise(pixels, input_spec)
    ref = model.predict(x, batch_size=len(x), verbose=0)
    worst_diff, worst_ref = 0.0, 0.0
    for i in range(len(x)):
        got = tfl.invoke(x[i : i + 1])
        for k in outputs:
            worst_diff = max(worst_diff, float(np.abs(got[k] - ref[k][i : i + 1]).max()))
            worst_ref = max(worst_ref, float(np.abs(ref[k][i]).max()))
    return worst_diff / max(worst_ref, 1e-12)


def write_bundle(
    out_dir: Path,
    model: Any,
    *,
    stem: str,
    input_spec: InputSpec,
    outputs: Outputs,
    representative: np.ndarray,
    check_pixels: np.ndarray,
    golden_pixels: np.ndarray,
    manifest: dict[str, Any],
) -> dict[str, Any]:
    """Write ``<stem>_f32.tflite``, ``<stem>_int8.tflite``, goldens and ``manifest.json``.

    Args:
        out_dir: the bundle folder (created).
        model: the trained Keras model.
        stem: file name stem of the two ``.tflite`` files.
        input_spec: preprocessing and input shape.
        outputs: output name -> shape.
        representative: uint8 model pixels from TRAINING data (INT8 calibration).
        check_pixels: uint8 model pixels for the float conversion check (use 100).
        golden_pixels: one uint8 model input (H x W x 3) for the self-test.
        manifest: task-specific manifest keys (``id``, ``name``, ``version``,
            ``task``, ``decoder`` ...); files, hashes, input and outputs are added here.

    Returns:
        Export facts (sizes, float conversion check) for ``metrics.json``.

    Raises:
        RuntimeError: the float TFLite deviates from Keras by more than :data:`FLOAT_CONVERSION_TOLERANCE`.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    f32, i8 = out_dir / f"{stem}_f32.tflite", out_dir / f"{stem}_int8.tflite"
    to_tflite(model, f32, int8=False, input_spec=input_spec, outputs=outputs)
    rel = check_float_conversion(model, f32, check_pixels, input_spec=input_spec, outputs=outputs)
    if rel > FLOAT_CONVERSION_TOLERANCE:
        raise RuntimeError(f"float TFLite deviates from Keras: max rel diff {rel:.3g} > {FLOAT_CONVERSION_TOLERANCE:g}")
    to_tflite(model, i8, int8=True, representative=representative, input_spec=input_spec, outputs=outputs)
    golden = normalise(golden_pixels[None], input_spec)
    np.save(out_dir / "golden_input.npy", golden)
    for tag, path in (("f32", f32), ("int8", i8)):
        out = Model(path, input_shape=input_spec.shape, outputs=outputs, num_threads=1).invoke(golden)
        # no pickles: the self-test loads it with allow_pickle=False
        np.savez(out_dir / f"golden_output_{tag}.npz", allow_pickle=False, **out)
    full = {
        "schema": 1,
        "min_firmware_version": FIRMWARE_VERSION,
        "default_precision": "int8",
        **manifest,
        "files": {
            "int8": {"file": i8.name, "sha256": sha256_file(i8), "golden_output": "golden_output_int8.npz"},
            "float32": {"file": f32.name, "sha256": sha256_file(f32), "golden_output": "golden_output_f32.npz"},
        },
        "golden_input": "golden_input.npy",
        "input": {**input_spec.to_dict(), "dtype": "float32", "note": "int8 file takes uint8 = round(x * 255)"},
        "outputs": {k: list(v) for k, v in outputs.items()},
    }
    (out_dir / "manifest.json").write_text(json.dumps(full, indent=2) + "\n")
    return {
        "float_conversion_max_rel_diff": rel,
        "float_conversion_inputs": len(check_pixels),
        "size_bytes": {"float32": f32.stat().st_size, "int8": i8.stat().st_size},
    }


def bundle_id(family: str, version: str) -> str:
    """A bundle's model id: its family and the major number of its version (``lane``, ``3.1.0`` -> ``lane-v3``)."""
    return f"{family}-v{version.split('.')[0]}"


def bundle_reference(out_dir: Path) -> str:
    """How a ``metrics.json``'s commands name their bundle: its path from the working folder when it lies
    within it (``models/ocr``), else a placeholder, so that no machine's own paths are written into a bundle."""
    folder = Path(out_dir).resolve()
    here = Path.cwd().resolve()
    return str(folder.relative_to(here)) if folder.is_relative_to(here) else "<bundle folder>"


def write_metrics(out_dir: Path, metrics: dict[str, Any]) -> None:
    """Write a bundle's ``metrics.json`` (numpy scalars as numbers, anything else unknown as text)."""
    text = json.dumps(metrics, indent=2, default=lambda o: float(o) if isinstance(o, np.floating) else str(o))
    (Path(out_dir) / "metrics.json").write_text(text + "\n")


def manifest_for_file(model_path: Path) -> ModelManifest:
    """The manifest entry (int8 or float32) of the bundle file ``model_path``, beside its ``manifest.json``.

    Raises:
        ValueError: the manifest lists no such file.
        BundleError: the manifest is invalid or the file fails its sha256.
    """
    man_json = model_path.parent / "manifest.json"
    for prec in ("int8", "float32"):
        m = load_manifest(man_json, precision=prec)
        if m.file.name == model_path.name:
            return m
    raise ValueError(f"{model_path.name} is not listed in {man_json}")

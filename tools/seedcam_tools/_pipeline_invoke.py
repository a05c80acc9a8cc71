"""The pipeline benchmark's model side: the lane int8 bundle loaded with the firmware's runtime, timed bare."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from seedcam.errors import BundleError
from seedcam_firmware.camera.synthetic import SyntheticCamera
from seedcam_firmware.errors import FirmwareError
from seedcam_firmware.inference import Model, ModelManifest, load_manifest, preprocess
from seedcam_tools.bench_errors import LaneModelMissing

__all__ = ["load_lane_model", "model_input", "time_bare_invokes", "time_runtime_invokes"]


def load_lane_model(models_dir: Path, num_threads: int) -> tuple[ModelManifest, Model]:
    """Load the lane int8 bundle with the firmware's runtime: (manifest, Model).

    Raises:
        LaneModelMissing: no bundle, a broken bundle, or a model that does not load.
    """
    manifest_path = models_dir / "lane" / "manifest.json"
    if not manifest_path.is_file():
        raise LaneModelMissing(
            f"the pipeline benchmark needs the shipped lane int8 model, but {manifest_path} does not exist "
            "(train and export the lane model first, or pass the folder holding lane/manifest.json)"
        )
    try:
        manifest = load_manifest(manifest_path, precision="int8")
        model = Model(
            manifest.file,
            input_shape=manifest.input_shape,
            outputs=manifest.outputs,
            num_threads=num_threads,
        )
    except (BundleError, FirmwareError) as exc:
        raise LaneModelMissing(f"lane int8 model bundle in {manifest_path.parent} is not usable: {exc}") from exc
    return manifest, model


def model_input(manifest: ModelManifest, model: Model) -> tuple[Any, Any]:
    """A synthetic camera frame, preprocessed: (float input, input quantized to the tensor's dtype)."""
    camera = SyntheticCamera(seed=0)
    try:
        frame = camera.read(timeout=5.0)
    finally:
        camera.close()
    x = preprocess(frame.image, manifest.input)
    xq = model.quantize_input(x)
    return x, xq


def time_bare_invokes(interp: Any, xq: Any, count: int) -> list[float]:
    """``count`` bare interpreter invokes (``set_tensor`` + ``invoke``); seconds each.

    ``interp`` comes from :func:`seedcam_firmware.inference.load_interpreter` (the
    firmware's one place that creates interpreters), without a signature runner.
    """
    index = interp.get_input_details()[0]["index"]
    interp.set_tensor(index, xq)
    interp.invoke()  # warm-up: the first invoke primes the kernels' caches
    samples: list[float] = []
    for _ in range(count):
        start = time.perf_counter()
        interp.set_tensor(index, xq)
        interp.invoke()
        samples.append(time.perf_counter() - start)
    return samples


def time_runtime_invokes(model: Model, x: Any, count: int) -> list[float]:
    """``count`` calls of ``Model.invoke`` with the float input, as the lane task makes them."""
    model.invoke(x)
    samples: list[float] = []
    for _ in range(count):
        start = time.perf_counter()
        model.invoke(x)
        samples.append(time.perf_counter() - start)
    return samples

"""The pipeline benchmark's model side: the default tasks' int8 bundles timed bare with the firmware's runtime."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from seedcam.errors import BundleError
from seedcam_firmware.camera.synthetic import SyntheticCamera
from seedcam_firmware.errors import FirmwareError
from seedcam_firmware.inference import Model, ModelManifest, load_interpreter, load_manifest, preprocess
from seedcam_tools.bench_errors import ModelMissing

__all__ = [
    "BENCH_TASKS",
    "TaskModel",
    "load_task_models",
    "time_bare_invokes",
    "time_paced_invokes",
    "time_runtime_invokes",
]

#: the default tasks, in the order the firmware runs them
BENCH_TASKS = ("lane", "detect", "ocr")
#: tasks whose model reads the camera frame (the others read crops of it)
_FRAME_TASKS = frozenset({"lane", "detect"})


@dataclass
class TaskModel:
    """One task's int8 model: its manifest, the firmware's Model, a bare interpreter and an input for each."""

    task: str
    manifest: ModelManifest
    model: Model
    interpreter: Any
    x: Any  #: float input, as the task hands it to ``Model.invoke``
    xq: Any  #: the same, quantized to the tensor's dtype (what a bare ``set_tensor`` takes)


def _load(models_dir: Path, task: str, num_threads: int, frame: np.ndarray) -> TaskModel:
    manifest_path = models_dir / task / "manifest.json"
    if not manifest_path.is_file():
        raise ModelMissing(
            f"the pipeline benchmark needs the shipped {task} int8 model, but {manifest_path} does not exist "
            f"(train and export it first, or pass the folder holding {task}/manifest.json)"
        )
    try:
        manifest = load_manifest(manifest_path, precision="int8")
        model = Model(
            manifest.file, input_shape=manifest.input_shape, outputs=manifest.outputs, num_threads=num_threads
        )
        interpreter = load_interpreter(manifest.file, num_threads=num_threads)
    except (BundleError, FirmwareError) as exc:
        raise ModelMissing(f"{task} int8 model bundle in {manifest_path.parent} is not usable: {exc}") from exc
    if task in _FRAME_TASKS:
        x = preprocess(frame, manifest.input)
    else:  # a crop's content does not change the invoke's time; its shape does
        x = np.zeros(manifest.input_shape, np.float32)
    return TaskModel(task, manifest, model, interpreter, x, model.quantize_input(x))


def load_task_models(models_dir: Path, num_threads: int, tasks: tuple[str, ...] = BENCH_TASKS) -> list[TaskModel]:
    """Load the int8 bundle of each task with the firmware's runtime.

    Raises:
        ModelMissing: a bundle is missing, broken, or its model does not load.
    """
    camera = SyntheticCamera(seed=0)
    try:
        frame = camera.read(timeout=5.0).image
    finally:
        camera.close()
    return [_load(models_dir, task, num_threads, frame) for task in tasks]


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
    """``count`` calls of ``Model.invoke`` with the float input, as the tasks make them."""
    model.invoke(x)
    samples: list[float] = []
    for _ in range(count):
        start = time.perf_counter()
        model.invoke(x)
        samples.append(time.perf_counter() - start)
    return samples


def time_paced_invokes(models: list[TaskModel], frames: int, period_s: float) -> dict[str, list[float]]:
    """Bare invokes at the camera's pace: once per ``period_s``, each model once, in task order; seconds each.

    This is how the firmware meets its models: one frame's invokes, then the CPU
    idles until the next frame, and caches and clocks are no longer what a tight
    loop of invokes (:func:`time_bare_invokes`) leaves them.
    """
    indices = {m.task: m.interpreter.get_input_details()[0]["index"] for m in models}
    samples: dict[str, list[float]] = {m.task: [] for m in models}
    next_frame = time.perf_counter()
    for _ in range(frames):
        delay = next_frame - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        next_frame += period_s
        for m in models:
            start = time.perf_counter()
            m.interpreter.set_tensor(indices[m.task], m.xq)
            m.interpreter.invoke()
            samples[m.task].append(time.perf_counter() - start)
    return samples

"""The task interface, the shared bundle loading, and the runner that turns a frame into one Result.

A task may read what other tasks found in the same frame (the OCR task reads
the detector's plates): it names them in ``requires`` and the runner then runs
them first and hands their outputs to ``run(image, prior)``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol

import numpy as np

from seedcam.errors import BundleError
from seedcam.types import Classification, Detection, LaneState, ModelInfo, Result, TextLine
from seedcam_firmware import __version__
from seedcam_firmware.camera.base import Frame
from seedcam_firmware.errors import ConfigError, TaskUnavailable
from seedcam_firmware.inference.manifest import ModelManifest, load_manifest
from seedcam_firmware.inference.preprocess import InputSpec, crop_resize, normalise
from seedcam_firmware.inference.runtime import Model

if TYPE_CHECKING:
    from seedcam_firmware.config import FirmwareConfig

__all__ = [
    "ModelTask",
    "Task",
    "TaskOutput",
    "TaskRunner",
    "TaskUnavailable",
    "elapsed_us",
    "load_task_manifest",
    "model_info",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TaskOutput:
    """What one task found in a frame; the runner merges outputs into a Result.

    Attributes:
        model_ids: models the task ran besides its own (the OCR task running the
            detector itself), reported in ``Result.model_ids``.
    """

    lane: LaneState | None = None
    detections: tuple[Detection, ...] = ()
    text_lines: tuple[TextLine, ...] = ()
    classifications: tuple[Classification, ...] = ()
    timings_us: Mapping[str, int] = field(default_factory=dict)
    model_ids: tuple[str, ...] = ()


class Task(Protocol):
    """A perception task: a model plus its pre- and post-processing.

    Two members are optional and looked up with defaults by the runner:
    ``requires`` (default ``()``): names of tasks whose outputs for the same
    frame ``run`` reads; when it is not empty the runner calls
    ``run(image, prior)`` with ``prior`` mapping each of those tasks that is
    enabled to its output (a required task that is not enabled is absent).
    ``configure(config)`` (default: nothing to configure): take the live keys
    of a new :class:`~seedcam_firmware.config.FirmwareConfig`; raises
    :class:`ConfigError` for a value the task cannot use, keeping its old ones.
    """

    name: str
    model: ModelInfo

    def run(self, image: np.ndarray) -> TaskOutput:
        """Process one BGR uint8 frame (see the class docstring for ``prior``)."""
        ...

    def close(self) -> None:
        """Release the interpreter."""
        ...


def elapsed_us(start: float) -> int:
    """Microseconds since a ``time.perf_counter()`` reading."""
    return int((time.perf_counter() - start) * 1e6)


# ---- bundles ------------------------------------------------------------------------------


def load_task_manifest(config: FirmwareConfig, task: str) -> ModelManifest:
    """Read and check the bundle named by ``models.<task>`` at ``models.<task>_precision``.

    Raises:
        BundleError: the manifest is missing or invalid, the file's sha256 differs,
            the bundle needs a newer firmware, or it is a model for another task.
    """
    manifest = load_manifest(config.models.manifest_path(task), precision=config.models.precision(task))
    manifest.check_firmware(__version__)
    if manifest.task != task:
        raise BundleError(
            f"models.{task} names {manifest.bundle_dir / 'manifest.json'}, a {manifest.task!r} model, "
            f"not a {task!r} model"
        )
    return manifest


def model_info(manifest: ModelManifest) -> ModelInfo:
    """The :class:`ModelInfo` the host sees for a loaded bundle (``active`` set by the runner)."""
    return ModelInfo(
        id=f"{manifest.id}-{manifest.precision}",
        name=manifest.name,
        version=manifest.version,
        task=manifest.task,
        precision=manifest.precision,
        sha256=manifest.sha256,
        active=False,
        input_shape=tuple(manifest.input_shape),
        size_bytes=manifest.file.stat().st_size,
    )


class ModelTask:
    """The part every model-backed task shares: the interpreter, its ModelInfo, preprocessing.

    Args:
        manifest: the bundle (one precision).
        num_threads: interpreter threads.
        delegate: external delegate library, or None.

    Raises:
        ModelError: the file is not TFLite, or its input/outputs disagree with the manifest.
    """

    name = "model"
    requires: tuple[str, ...] = ()

    def __init__(self, manifest: ModelManifest, *, num_threads: int = 2, delegate: str | None = None) -> None:
        self.manifest = manifest
        self._model = Model(
            manifest.file,
            input_shape=manifest.input_shape,
            outputs=manifest.outputs,
            num_threads=num_threads,
            delegate=delegate,
        )
        spec = manifest.input
        self._raw_pixels = self._model.takes_raw_pixels(spec.mean, spec.std)
        self.model = model_info(manifest)

    def input_tensor(self, pixels: np.ndarray) -> np.ndarray:
        """Model-size pixels (H x W x 3 uint8, in the model's channel order) to the input tensor.

        Full-INT8 models calibrated on ``pixels / 255`` take the pixels themselves.
        """
        batch = pixels[None]
        return batch if self._raw_pixels else normalise(batch, self.manifest.input)

    def frame_tensor(self, image: np.ndarray) -> np.ndarray:
        """A BGR camera frame, cropped and resized by the manifest's InputSpec, to the input tensor."""
        return self.input_tensor(crop_resize(image, self.manifest.input))

    @property
    def input_spec(self) -> InputSpec:
        """The manifest's preprocessing."""
        return self.manifest.input

    def configure(self, config: FirmwareConfig) -> None:
        """Nothing to configure by default."""

    def close(self) -> None:
        """Nothing to release beyond what garbage collection frees."""


# ---- the runner ---------------------------------------------------------------------------


def _requires(task: Task) -> tuple[str, ...]:
    return tuple(getattr(task, "requires", ()))


class TaskRunner:
    """Holds the loaded tasks and which of them are enabled (switchable at run time).

    Enabled tasks run in the order chosen, except that a task runs after the
    enabled tasks it ``requires``. A task that raises on a frame loses its part
    of that frame's Result; the others still report (the first failure of a
    run of failures is logged).

    Args:
        tasks: the loaded tasks.
        enabled: names to enable (each must be loaded).
        unavailable: task name -> why its model did not load; asking for one of
            them raises :class:`TaskUnavailable` with that reason.

    Raises:
        ConfigError: see :meth:`select`.
    """

    def __init__(
        self, tasks: Iterable[Task], enabled: Iterable[str], *, unavailable: Mapping[str, str] | None = None
    ) -> None:
        self._tasks = {task.name: task for task in tasks}
        self._unavailable = dict(unavailable or {})
        self._lock = threading.Lock()
        self._enabled: tuple[str, ...] = ()
        self._order: tuple[Task, ...] = ()
        self._failing: set[str] = set()
        self.select(enabled)

    @property
    def available(self) -> tuple[str, ...]:
        """The loaded tasks (those that can be enabled)."""
        return tuple(self._tasks)

    @property
    def tasks(self) -> Mapping[str, Task]:
        """The loaded tasks by name (read-only)."""
        return MappingProxyType(self._tasks)

    @property
    def unavailable(self) -> dict[str, str]:
        """Tasks whose model did not load -> the reason."""
        return dict(self._unavailable)

    @property
    def enabled(self) -> tuple[str, ...]:
        return self._enabled

    @property
    def models(self) -> tuple[ModelInfo, ...]:
        """The models of the loaded tasks, ``active`` when their task is enabled."""
        return tuple(replace(t.model, active=t.name in self._enabled) for t in self._tasks.values())

    def select(self, names: Iterable[str]) -> tuple[str, ...]:
        """Enable exactly ``names`` (in the order given, duplicates removed).

        Raises:
            TaskUnavailable: a name is a task whose model did not load (the message says why).
            ConfigError: a name is not a known task.
        """
        chosen = tuple(dict.fromkeys(names))
        broken = [n for n in chosen if n in self._unavailable]
        if broken:
            raise TaskUnavailable(
                "; ".join(f"task {n} is unavailable: its model did not load: {self._unavailable[n]}" for n in broken)
            )
        unknown = [n for n in chosen if n not in self._tasks]
        if unknown:
            raise ConfigError(
                f"unknown or unloaded task(s) {', '.join(unknown)}; available: {', '.join(self._tasks) or 'none'}"
            )
        order = self._run_order(chosen)
        with self._lock:
            self._enabled = chosen
            self._order = order
        return chosen

    def _run_order(self, chosen: tuple[str, ...]) -> tuple[Task, ...]:
        """``chosen`` with every task placed after the chosen tasks it requires."""
        order: list[str] = []
        visiting: set[str] = set()

        def visit(name: str) -> None:
            if name in order or name in visiting:
                return  # done, or a cycle: keep the order given
            visiting.add(name)
            for needed in _requires(self._tasks[name]):
                if needed in chosen:
                    visit(needed)
            visiting.discard(name)
            order.append(name)

        for name in chosen:
            visit(name)
        return tuple(self._tasks[name] for name in order)

    def replace(self, task: Task) -> Task | None:
        """Swap in a loaded task (a new model for it) from the next frame on; returns the one it replaces.

        The replaced task is not closed: a frame in flight may still be using it.
        """
        with self._lock:
            old = self._tasks.get(task.name)
            self._tasks[task.name] = task
            self._unavailable.pop(task.name, None)
            self._order = self._run_order(self._enabled)
        return old

    def configure(self, config: FirmwareConfig, *, previous: FirmwareConfig | None = None) -> None:
        """Hand the live keys of ``config`` to every loaded task.

        Args:
            config: the new configuration.
            previous: the configuration in force; when a task refuses ``config``,
                the tasks already changed are given this one back.

        Raises:
            ConfigError: a task cannot use a value (the message names the key).
        """
        done: list[Callable[[FirmwareConfig], None]] = []
        for task in self._tasks.values():
            configure = getattr(task, "configure", None)
            if configure is None:
                continue
            try:
                configure(config)
            except ConfigError:
                if previous is not None:
                    for undo in done:
                        undo(previous)
                raise
            done.append(configure)

    def process(self, frame: Frame) -> Result:
        """Run every enabled task on ``frame``; an empty Result when none is enabled."""
        order = self._order
        timings: dict[str, int] = {}
        outputs: dict[str, TaskOutput] = {}
        model_ids: dict[str, None] = {}
        lane = None
        detections: list[Detection] = []
        text_lines: list[TextLine] = []
        classifications: list[Classification] = []
        for task in order:
            start = time.perf_counter()
            output = self._run_one(task, frame, outputs)
            timings[f"task:{task.name}"] = elapsed_us(start)
            if output is None:
                continue
            outputs[task.name] = output
            model_ids[task.model.id] = None
            model_ids.update(dict.fromkeys(output.model_ids))
            timings.update(output.timings_us)
            lane = output.lane if output.lane is not None else lane
            detections.extend(output.detections)
            text_lines.extend(output.text_lines)
            classifications.extend(output.classifications)
        height, width = frame.image.shape[:2]
        timings["capture_to_result"] = max(0, time.monotonic_ns() // 1000 - frame.timestamp_us)
        return Result(
            frame_id=frame.frame_id,
            capture_timestamp_us=frame.timestamp_us,
            timings_us=timings,
            model_ids=tuple(model_ids),
            lane=lane,
            detections=tuple(detections),
            text_lines=tuple(text_lines),
            classifications=tuple(classifications),
            frame_width=width,
            frame_height=height,
        )

    def _run_one(self, task: Task, frame: Frame, outputs: Mapping[str, TaskOutput]) -> TaskOutput | None:
        """One task on one frame; None (logged once per run of failures) when it raises."""
        requires = _requires(task)
        try:
            if requires:
                prior = MappingProxyType({name: outputs[name] for name in requires if name in outputs})
                output = task.run(frame.image, prior)  # type: ignore[call-arg]
            else:
                output = task.run(frame.image)
        except Exception:  # one task's failure must not cost the other tasks their results
            if task.name not in self._failing:
                self._failing.add(task.name)
                log.exception(
                    "task %s failed on frame %d (not logged again until it recovers)", task.name, frame.frame_id
                )
            return None
        if task.name in self._failing:
            self._failing.discard(task.name)
            log.warning("task %s recovered on frame %d", task.name, frame.frame_id)
        return output

    def close(self) -> None:
        for task in self._tasks.values():
            task.close()

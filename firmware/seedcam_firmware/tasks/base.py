"""The task interface, the shared bundle loading, and the runner that turns a frame into one Result.

A task may read what other tasks found in the same frame (the OCR task reads
the detector's plates): it names them in ``requires`` and the runner then runs
them first and hands their outputs to ``run(image, prior)``.

The runner wraps each frame in one :class:`~seedcam_firmware.inference.prepared.PreparedFrame`
and hands it to every task (:meth:`Task.run_prepared`): the model inputs are
made once per frame and shared by the tasks whose models take the same input.
A task that implements only ``run(image, prior)`` gets the image, as before.

The runner merges what the tasks found into the frame's Result field by field:
every finding of :class:`TaskOutput` is the Result field of the same name, a
tuple field concatenated over the tasks in run order, a single value
(``lane``) taken from the last task that reported one.
"""

from __future__ import annotations

import abc
import dataclasses
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from seedcam.errors import BundleError
from seedcam.types import Classification, Detection, LaneState, ModelInfo, Result, TextLine
from seedcam_firmware import __version__
from seedcam_firmware.camera.base import Frame
from seedcam_firmware.errors import ConfigError, TaskUnavailable
from seedcam_firmware.inference.manifest import ModelManifest, load_manifest
from seedcam_firmware.inference.prepared import PreparedFrame, as_prepared
from seedcam_firmware.inference.preprocess import InputSpec, PixelEncoding, encode_pixels
from seedcam_firmware.inference.runtime import Model

if TYPE_CHECKING:
    from seedcam_firmware.config import FirmwareConfig

__all__ = [
    "FINDINGS",
    "NO_PRIOR",
    "ModelTask",
    "Task",
    "TaskOutput",
    "TaskRunner",
    "TaskUnavailable",
    "all_finite",
    "announced_labels",
    "elapsed_us",
    "load_task_manifest",
    "merge_findings",
    "model_info",
]

#: called with a task's name when its output on a frame was not finite (NaN or infinite)
InvalidOutputHook = Callable[[str], None]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TaskOutput:
    """What one task found in a frame; the runner merges outputs into a Result.

    Every field but ``timings_us`` and ``model_ids`` is a finding (:data:`FINDINGS`)
    and has the name and type of a :class:`~seedcam.types.Result` field; a new kind
    of finding is a field here, with a default of ``()`` (merged by concatenation)
    or None (the last task's wins).

    Attributes:
        timings_us: the task's own stages (``"lane:invoke"``), microseconds.
        model_ids: models the task ran besides its own (the OCR task running the
            detector itself), reported in ``Result.model_ids``.
    """

    lane: LaneState | None = None
    detections: tuple[Detection, ...] = ()
    text_lines: tuple[TextLine, ...] = ()
    classifications: tuple[Classification, ...] = ()
    timings_us: Mapping[str, int] = field(default_factory=dict)
    model_ids: tuple[str, ...] = ()


#: The fields of TaskOutput that are findings, merged into the Result field of the same name.
FINDINGS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(TaskOutput) if f.name not in ("timings_us", "model_ids")
)
#: ``prior`` of a task that requires nothing, or run on its own.
NO_PRIOR: Mapping[str, TaskOutput] = MappingProxyType({})


class Task(abc.ABC):
    """A perception task: a model plus its pre- and post-processing.

    A subclass sets ``name`` (its catalog name) and ``model`` (what the host
    sees of its model) and implements :meth:`run`; it may override
    ``requires``, :meth:`run_prepared`, :meth:`configure` and :meth:`close`.

    Attributes:
        name: the task's name in the catalog.
        model: its model, as listed to the host (``active`` is set by the runner).
        requires: names of tasks whose outputs for the same frame :meth:`run`
            reads; the runner runs those of them that are enabled first.
    """

    name: str
    model: ModelInfo
    requires: tuple[str, ...] = ()

    @abc.abstractmethod
    def run(self, image: np.ndarray, prior: Mapping[str, TaskOutput] = NO_PRIOR) -> TaskOutput:
        """Process one frame.

        Args:
            image: the BGR uint8 camera frame at full resolution.
            prior: each task of ``requires`` that is enabled → its output for this
                frame (a required task that is not enabled is absent).
        """

    def run_prepared(self, frame: PreparedFrame, prior: Mapping[str, TaskOutput] = NO_PRIOR) -> TaskOutput:
        """Process one frame handed over by the runner with the model inputs it shares between tasks.

        The runner calls this, not :meth:`run`. The default runs :meth:`run` on
        ``frame.image``; a task that brings the frame to a model input overrides
        it and takes the input from ``frame`` (``frame.tensor(spec, encoding)``),
        so the tasks of a frame whose models take the same input make it once.

        Args:
            frame: the camera frame and its shared model inputs.
            prior: as for :meth:`run`.
        """
        return self.run(frame.image, prior)

    def configure(self, config: FirmwareConfig) -> None:  # noqa: B027 - most tasks have nothing to configure
        """Take the live keys of a new configuration (default: nothing to take).

        Raises:
            ConfigError: a value the task cannot use; the task keeps its old ones.
        """

    def close(self) -> None:  # noqa: B027 - most tasks hold nothing garbage collection does not free
        """Release what the task holds (default: nothing)."""


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


#: the most UTF-8 bytes of class names a ModelInfo carries (it travels in every Hello)
MAX_LABEL_BYTES = 4096


def announced_labels(manifest: ModelManifest) -> tuple[str, ...]:
    """The class names by class id a ModelInfo carries: the decoder's ``labels`` (detect, classify).

    Empty for a model without labels and for one whose names exceed :data:`MAX_LABEL_BYTES`
    (the host then knows only the labels its results name).
    """
    labels = manifest.decoder.get("labels")
    if not isinstance(labels, (list, tuple)) or not all(isinstance(x, str) for x in labels):
        return ()
    if sum(len(x.encode()) + 2 for x in labels) > MAX_LABEL_BYTES:
        log.warning("model %s: %d labels are too long for the link; the host gets none", manifest.id, len(labels))
        return ()
    return tuple(labels)


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
        labels=announced_labels(manifest),
    )


class ModelTask(Task):
    """The part every model-backed task shares: the interpreter, its ModelInfo, preprocessing.

    A subclass implements :meth:`run_prepared`, taking its input from the
    frame with :meth:`frame_tensor` (then :meth:`run` on an image of its own
    does the same, sharing nothing), or only :meth:`run`, as tasks written
    before the runner shared inputs do.

    Args:
        manifest: the bundle (one precision).
        num_threads: interpreter threads.
        delegate: external delegate library, or None.

    Raises:
        ModelError: the file is not TFLite, or its input/outputs disagree with the manifest.
    """

    name = "model"

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
        #: how the model takes its pixels (uint8 models calibrated on ``pixels / 255``: unchanged)
        self.input_encoding: PixelEncoding = self._model.pixel_encoding(spec.mean, spec.std)
        self.model = model_info(manifest)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.run is ModelTask.run and cls.run_prepared is Task.run_prepared:
            raise TypeError(f"{cls.__name__} must implement run_prepared (or run)")

    def run(self, image: np.ndarray, prior: Mapping[str, TaskOutput] = NO_PRIOR) -> TaskOutput:
        """Process one frame on its own: :meth:`run_prepared` on a PreparedFrame of ``image`` alone."""
        return self.run_prepared(PreparedFrame(image), prior)

    def input_tensor(self, pixels: np.ndarray) -> np.ndarray:
        """Model-size pixels (H x W x 3 uint8, in the model's channel order) to the input tensor.

        A quantised model whose quantisation is a shift of the pixels takes them
        shifted (uint8 models calibrated on ``pixels / 255``: the pixels themselves,
        not copied); others take the float ``(pixels - mean) / std``.
        """
        return encode_pixels(pixels, self.manifest.input, self.input_encoding)

    def frame_tensor(self, frame: PreparedFrame | np.ndarray) -> np.ndarray:
        """A camera frame, cropped and resized by the manifest's InputSpec, as the input tensor.

        Given the runner's PreparedFrame, the tensor is the one the frame's other
        tasks with the same input share (read-only; the first task to ask pays for
        it, see :class:`~seedcam_firmware.inference.prepared.PreparedFrame`); given
        a BGR image, it is made for this call alone.
        """
        return as_prepared(frame).tensor(self.manifest.input, self.input_encoding)

    @property
    def input_spec(self) -> InputSpec:
        """The manifest's preprocessing."""
        return self.manifest.input


# ---- the runner ---------------------------------------------------------------------------


def all_finite(value: object) -> bool:
    """True when every float in ``value`` (a finding: dataclasses, tuples, numbers) is finite."""
    if isinstance(value, (float, np.floating)):
        return math.isfinite(value)
    if isinstance(value, (tuple, list)):
        return all(all_finite(item) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return all(all_finite(getattr(value, f.name)) for f in dataclasses.fields(value))
    return True


def merge_findings(outputs: Iterable[TaskOutput]) -> dict[str, Any]:
    """The findings of ``outputs`` (in run order) as Result fields.

    A tuple finding is concatenated over the outputs; any other is the last one
    that is not None. Timings and model ids are the runner's to merge.
    """
    merged: dict[str, Any] = {}
    for output in outputs:
        for name in FINDINGS:
            value = getattr(output, name)
            if isinstance(value, tuple):
                merged[name] = merged.get(name, ()) + value
            elif value is not None:
                merged[name] = value
    return merged


class TaskRunner:
    """Holds the loaded tasks and which of them are enabled (switchable at run time).

    Enabled tasks run in the order chosen, except that a task runs after the
    enabled tasks it ``requires``. A task that raises on a frame loses its part
    of that frame's Result; the others still report (the first failure of a
    run of failures is logged).

    The in-service canary: a task whose findings on a frame hold a NaN or an
    infinite number loses its part of that frame's Result too (the findings are
    invalid, and a task requiring it does not see them); it is counted per task
    (:attr:`invalid_outputs`) and ``on_invalid`` is called with its name.

    Args:
        tasks: the loaded tasks.
        enabled: names to enable (each must be loaded).
        unavailable: task name -> why its model did not load; asking for one of
            them raises :class:`TaskUnavailable` with that reason.
        on_invalid: called (on the inference thread) with a task's name for each
            frame on which its outputs were not finite.

    Raises:
        ConfigError: see :meth:`select`.
    """

    def __init__(
        self,
        tasks: Iterable[Task],
        enabled: Iterable[str],
        *,
        unavailable: Mapping[str, str] | None = None,
        on_invalid: InvalidOutputHook | None = None,
    ) -> None:
        self._tasks = {task.name: task for task in tasks}
        self._unavailable = dict(unavailable or {})
        self._on_invalid = on_invalid
        self._invalid: dict[str, int] = {}
        self._invalid_run: set[str] = set()
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
    def invalid_outputs(self) -> dict[str, int]:
        """Task name -> frames since start whose outputs were NaN or infinite (their findings dropped)."""
        with self._lock:
            return dict(self._invalid)

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
            for needed in self._tasks[name].requires:
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
            try:
                task.configure(config)
            except ConfigError:
                if previous is not None:
                    for undo in done:
                        undo(previous)
                raise
            done.append(task.configure)

    def process(self, frame: Frame) -> Result:
        """Run every enabled task on ``frame``; an empty Result when none is enabled.

        The tasks share one :class:`~seedcam_firmware.inference.prepared.PreparedFrame`
        of the frame: a model input is made by the first task that needs it (its
        ``<task>:preprocess`` timing pays for it) and reused by the others. The
        Result's timings start with the stages the camera timed (``camera:render``),
        which came before the capture timestamp and are not in ``capture_to_result``.
        """
        order = self._order
        timings: dict[str, int] = dict(frame.timings_us)
        outputs: dict[str, TaskOutput] = {}
        model_ids: dict[str, None] = {}
        prepared = PreparedFrame(frame.image)
        for task in order:
            start = time.perf_counter()
            output = self._run_one(task, frame, prepared, outputs)
            timings[f"task:{task.name}"] = elapsed_us(start)
            if output is None:
                continue
            outputs[task.name] = output
            model_ids[task.model.id] = None
            model_ids.update(dict.fromkeys(output.model_ids))
            timings.update(output.timings_us)
        height, width = frame.image.shape[:2]
        timings["capture_to_result"] = max(0, time.monotonic_ns() // 1000 - frame.timestamp_us)
        return Result(
            frame_id=frame.frame_id,
            capture_timestamp_us=frame.timestamp_us,
            timings_us=timings,
            model_ids=tuple(model_ids),
            frame_width=width,
            frame_height=height,
            **merge_findings(outputs.values()),
        )

    def _run_one(
        self, task: Task, frame: Frame, prepared: PreparedFrame, outputs: Mapping[str, TaskOutput]
    ) -> TaskOutput | None:
        """One task on one frame; None (logged once per run of failures) when it raises."""
        prior = MappingProxyType({name: outputs[name] for name in task.requires if name in outputs})
        try:
            output = task.run_prepared(prepared, prior)
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
        if not all(all_finite(getattr(output, name)) for name in FINDINGS):
            self._count_invalid(task, frame)
            return None
        if task.name in self._invalid_run:
            self._invalid_run.discard(task.name)
            log.warning("task %s: outputs finite again on frame %d", task.name, frame.frame_id)
        return output

    def _count_invalid(self, task: Task, frame: Frame) -> None:
        with self._lock:
            self._invalid[task.name] = self._invalid.get(task.name, 0) + 1
        if task.name not in self._invalid_run:
            self._invalid_run.add(task.name)
            log.error(
                "task %s (model %s): NaN or infinite outputs on frame %d; its findings are dropped "
                "(not logged again until they are finite)",
                task.name,
                task.model.id,
                frame.frame_id,
            )
        if self._on_invalid is not None:
            self._on_invalid(task.name)

    def close(self) -> None:
        for task in self._tasks.values():
            task.close()

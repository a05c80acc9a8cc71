"""The task interface and the shared bundle loading (the runner is :mod:`.runner`).

A task may read what other tasks found in the same frame (the OCR task reads
the detector's plates): it names them in ``requires`` and the runner then runs
them first and hands their outputs to ``run(image, prior)``.

The runner hands every task one :class:`~seedcam_firmware.inference.prepared.PreparedFrame`
of the frame (:meth:`Task.run_prepared`): the model inputs are made once per
frame and shared by the tasks whose models take the same input. A task that
implements only ``run(image, prior)`` gets the image.
"""

from __future__ import annotations

import abc
import dataclasses
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from seedcam.errors import BundleError
from seedcam.types import Classification, Detection, LaneState, ModelInfo, TextLine
from seedcam_firmware import __version__
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
    "announced_labels",
    "elapsed_us",
    "load_task_manifest",
    "model_info",
]

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
        candidates: detections scoring under the reporting threshold that a later task
            asked for (the OCR task reads plates from ``ocr.plate_min_score`` up); never
            reported themselves.
    """

    lane: LaneState | None = None
    detections: tuple[Detection, ...] = ()
    text_lines: tuple[TextLine, ...] = ()
    classifications: tuple[Classification, ...] = ()
    timings_us: Mapping[str, int] = field(default_factory=dict)
    model_ids: tuple[str, ...] = ()
    candidates: tuple[Detection, ...] = ()


#: The fields of TaskOutput that are findings, merged into the Result field of the same name.
FINDINGS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(TaskOutput) if f.name not in ("timings_us", "model_ids", "candidates")
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

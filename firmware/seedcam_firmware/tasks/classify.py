"""The classification task: preprocess → classifier → the top-k classes of the frame."""

from __future__ import annotations

import time
from collections.abc import Mapping

from seedcam.types import Classification
from seedcam_firmware.config import FirmwareConfig
from seedcam_firmware.inference.classify import top_k
from seedcam_firmware.inference.manifest import ModelManifest
from seedcam_firmware.inference.prepared import PreparedFrame
from seedcam_firmware.inference.validate import classifier_layout
from seedcam_firmware.task_sections import ClassifyConfig
from seedcam_firmware.tasks.base import NO_PRIOR, ModelTask, Task, TaskOutput, elapsed_us, load_task_manifest

__all__ = ["ClassifyTask", "load_classify_task"]


class ClassifyTask(ModelTask):
    """Runs a classifier bundle on frames; reports ``classify.top_k`` classes, best first (live).

    Args:
        manifest: the classifier bundle: decoder ``{"type": "softmax", "labels", "top_k"}``
            (optionally ``activation`` for a model that outputs logits), output ``[1, C]``.
        num_threads, delegate: interpreter settings.

    Raises (constructor):
        ModelError: the model file is not TFLite or disagrees with its manifest.
        BundleError: the decoder section disagrees with the output.
    """

    name = "classify"

    def __init__(self, manifest: ModelManifest, *, num_threads: int = 2, delegate: str | None = None) -> None:
        super().__init__(manifest, num_threads=num_threads, delegate=delegate)
        self.layout = classifier_layout(manifest)
        self.top_k = self.layout.top_k

    def configure(self, config: FirmwareConfig) -> None:
        """Take ``classify.top_k`` (next frame on)."""
        self.top_k = config.section(ClassifyConfig).top_k

    def run_prepared(self, frame: PreparedFrame, prior: Mapping[str, TaskOutput] = NO_PRIOR) -> TaskOutput:
        k = self.top_k
        start = time.perf_counter()
        tensor = self.frame_tensor(frame)  # shared with the frame's other tasks of this input
        preprocess_us = elapsed_us(start)
        invoked = time.perf_counter()
        scores = self._model.invoke(tensor, (self.layout.output,))[self.layout.output]
        invoke_us = elapsed_us(invoked)
        decoded = time.perf_counter()
        best = top_k(scores, self.layout.labels, k, activation=self.layout.activation)
        classes = tuple(Classification(class_id, label, score) for class_id, label, score in best)
        return TaskOutput(
            classifications=classes,
            timings_us={
                "classify:preprocess": preprocess_us,
                "classify:invoke": invoke_us,
                "classify:decode": elapsed_us(decoded),
            },
        )


def load_classify_task(config: FirmwareConfig, loaded: Mapping[str, Task] | None = None) -> ClassifyTask:
    """Load the classifier bundle named by ``models.classify`` at ``models.classify_precision``.

    Args:
        config: the firmware configuration (also the initial ``classify.top_k``).
        loaded: tasks loaded before this one (unused).

    Raises:
        BundleError: the manifest is missing or invalid, the file's sha256 differs,
            the bundle is not a classifier, or its decoder disagrees with its output.
        ModelError: the model does not load or disagrees with its manifest.
    """
    manifest = load_task_manifest(config, "classify")
    task = ClassifyTask(manifest, num_threads=config.runtime.num_threads, delegate=config.runtime.delegate or None)
    task.configure(config)
    return task

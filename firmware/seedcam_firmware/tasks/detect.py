"""The detection task: preprocess → detector → layout decoder → boxes in the camera frame.

The detector sees the rows ``[crop_top, 1 - crop_bottom)`` of the frame (its
manifest's InputSpec), resized to its input. Its decoder gives boxes
normalised to that input; :func:`box_to_frame` maps them back to the frame
(0..1 of the frame's width and height, clipped), which is what the host gets.

Thresholds come from the ``[detect]`` config section and change live: the next
frame after a ``config set detect.score_threshold 0.6`` uses it. A bundle's own
recommended thresholds (its manifest's decoder section) are logged at load
when they differ, but the config decides.

A later task may ask for candidates (:meth:`DetectTask.request_candidates`): detections of
some labels that score under ``detect.score_threshold`` but at least its own floor. The OCR
task reads plates that way; candidates are handed to it, never reported.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from seedcam.types import Box, Detection
from seedcam_firmware.config import FirmwareConfig
from seedcam_firmware.inference.detection import DetectionParams, RawDetection, make_detection_decoder
from seedcam_firmware.inference.manifest import ModelManifest
from seedcam_firmware.inference.prepared import PreparedFrame, as_prepared
from seedcam_firmware.inference.preprocess import crop_rows
from seedcam_firmware.task_sections import DetectConfig
from seedcam_firmware.tasks.base import NO_PRIOR, ModelTask, Task, TaskOutput, elapsed_us, load_task_manifest

__all__ = ["DetectTask", "box_to_frame", "load_detect_task"]

log = logging.getLogger(__name__)


def box_to_frame(box: tuple[float, float, float, float], rows: tuple[int, int], frame_height: int) -> Box | None:
    """Map a box normalised to the model input into the camera frame.

    The model input spans every column of the frame and its rows
    ``[rows[0], rows[1])`` (see :func:`~seedcam_firmware.inference.preprocess.crop_rows`).

    Args:
        box: ``(x_min, y_min, x_max, y_max)``, 0..1 of the model input.
        rows: the frame rows the model saw, ``[top, bottom)``.
        frame_height: the frame height in pixels.

    Returns:
        The box normalised to the frame and clipped to it, or None when nothing
        of it is left inside the frame.
    """
    top, bottom = rows
    x0, y0, x1, y1 = (float(v) for v in box)
    x0, x1 = min(max(x0, 0.0), 1.0), min(max(x1, 0.0), 1.0)
    y0 = min(max((top + y0 * (bottom - top)) / frame_height, 0.0), 1.0)
    y1 = min(max((top + y1 * (bottom - top)) / frame_height, 0.0), 1.0)
    if x1 <= x0 or y1 <= y0:
        return None
    return Box(x0, y0, x1, y1)


class DetectTask(ModelTask):
    """Runs an object detector bundle on frames.

    Args:
        manifest: the detector bundle; its ``decoder`` section names the output
            layout (``ssd_anchors``, ``tflite_postprocess``, ``yolov5``, ``yolov8``) and labels.
        num_threads, delegate: interpreter settings.
        params: the thresholds until :meth:`configure` is called (default: DetectionParams()).

    Raises (constructor):
        ModelError: the model file is not TFLite or disagrees with its manifest.
        BundleError: the decoder section disagrees with the outputs.
    """

    name = "detect"

    def __init__(
        self,
        manifest: ModelManifest,
        *,
        num_threads: int = 2,
        delegate: str | None = None,
        params: DetectionParams | None = None,
    ) -> None:
        super().__init__(manifest, num_threads=num_threads, delegate=delegate)
        spec = manifest.input
        self._decoder = make_detection_decoder(
            manifest.decoder,
            input_width=spec.width,
            input_height=spec.height,
            outputs=manifest.outputs,
            bundle_dir=manifest.bundle_dir,
        )
        self.labels: tuple[str, ...] = tuple(self._decoder.labels)
        self.recommended = DetectionParams.from_manifest(manifest.decoder)
        self.params = params or DetectionParams()
        self._candidates: tuple[frozenset[str], float] | None = None

    def request_candidates(self, labels: frozenset[str], min_score: float) -> None:
        """Also find detections of ``labels`` scoring from ``min_score`` up to the score threshold (next frame on).

        They come back apart from the detections (:meth:`detect`), for a task that reads them
        (the OCR task's plates); ``min_score`` at or above the score threshold asks for none.
        """
        self._candidates = (labels, min_score)  # one attribute swap, as for params

    def configure(self, config: FirmwareConfig) -> None:
        """Take ``detect.score_threshold``, ``iou_threshold`` and ``max_detections`` (next frame on)."""
        section = config.section(DetectConfig)
        params = DetectionParams(section.score_threshold, section.iou_threshold, section.max_detections)
        self.params = params  # one attribute swap: the inference thread sees the old or the new, never a mix

    def detect(
        self, frame: PreparedFrame | np.ndarray
    ) -> tuple[tuple[Detection, ...], tuple[Detection, ...], dict[str, int]]:
        """Detections in a frame (boxes normalised to the frame), the candidates asked for
        (:meth:`request_candidates`), and the stage timings.

        Args:
            frame: the runner's PreparedFrame (its input shared with the frame's
                other tasks), or a BGR image.
        """
        params = self.params
        wanted = self._candidates
        floor = params.score_threshold
        if wanted is not None and wanted[1] < floor:
            params = replace(params, score_threshold=wanted[1])
        start = time.perf_counter()
        prepared = as_prepared(frame)
        tensor = self.frame_tensor(prepared)
        preprocess_us = elapsed_us(start)
        invoked = time.perf_counter()
        outputs = self._model.invoke(tensor, self._decoder.output_names)
        invoke_us = elapsed_us(invoked)
        decoded = time.perf_counter()
        raw = self._decoder.decode(outputs, params)
        found = self._to_frame(raw, prepared.image.shape[0])
        detections: tuple[Detection, ...] = found
        candidates: tuple[Detection, ...] = ()
        if params.score_threshold < floor and wanted is not None:
            detections = tuple(d for d in found if d.score >= floor)
            candidates = tuple(d for d in found if d.score < floor and d.label in wanted[0])
        timings = {
            "detect:preprocess": preprocess_us,
            "detect:invoke": invoke_us,
            "detect:decode": elapsed_us(decoded),
        }
        return detections, candidates, timings

    def _to_frame(self, raw: list[RawDetection], frame_height: int) -> tuple[Detection, ...]:
        rows = crop_rows(frame_height, self.manifest.input)
        out = []
        for det in raw:
            box = box_to_frame(det.box, rows, frame_height)
            if box is None:
                continue
            label = self.labels[det.class_id] if 0 <= det.class_id < len(self.labels) else f"class_{det.class_id}"
            out.append(Detection(class_id=det.class_id, label=label, score=float(det.score), box=box))
        return tuple(out)

    def run_prepared(self, frame: PreparedFrame, prior: Mapping[str, TaskOutput] = NO_PRIOR) -> TaskOutput:
        detections, candidates, timings = self.detect(frame)
        return TaskOutput(detections=detections, timings_us=timings, candidates=candidates)


def load_detect_task(config: FirmwareConfig, loaded: Mapping[str, Task] | None = None) -> DetectTask:
    """Load the detector bundle named by ``models.detect`` at ``models.detect_precision``.

    Args:
        config: the firmware configuration (also the initial thresholds).
        loaded: tasks loaded before this one (unused).

    Raises:
        BundleError: the manifest is missing or invalid, the file's sha256 differs,
            the bundle is not a detector, or its decoder disagrees with its outputs.
        ModelError: the model does not load or disagrees with its manifest.
    """
    manifest = load_task_manifest(config, "detect")
    task = DetectTask(manifest, num_threads=config.runtime.num_threads, delegate=config.runtime.delegate or None)
    task.configure(config)
    if task.params != task.recommended:
        log.info(
            "detector %s recommends %s; running with the config's %s", task.model.id, task.recommended, task.params
        )
    return task

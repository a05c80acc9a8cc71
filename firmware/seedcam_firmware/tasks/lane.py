"""The lane task: preprocess → lane model → metric lane state."""

from __future__ import annotations

import time

import numpy as np

from seedcam.types import LaneState, LaneStatus, ModelInfo
from seedcam_firmware import __version__
from seedcam_firmware.config import FirmwareConfig
from seedcam_firmware.inference.lane import decode_lane
from seedcam_firmware.inference.manifest import ModelManifest, load_manifest
from seedcam_firmware.inference.preprocess import crop_resize, normalise
from seedcam_firmware.inference.runtime import Model
from seedcam_firmware.tasks.base import TaskOutput, elapsed_us

__all__ = ["LaneTask", "load_lane_task"]

#: the outputs the lane decoder reads (the segmentation mask is a training aid)
_DECODED_OUTPUTS = ("lane_state", "presence")
_STATUS = {"ok": LaneStatus.OK, "one_line": LaneStatus.ONE_LINE, "lost": LaneStatus.LOST}


class LaneTask:
    """Runs a lane bundle on frames.

    Raises (constructor):
        ModelError: the model file is missing, not TFLite, or disagrees with its manifest.
    """

    name = "lane"

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
        self.model = ModelInfo(
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

    def run(self, image: np.ndarray) -> TaskOutput:
        start = time.perf_counter()
        spec = self.manifest.input
        pixels = crop_resize(image, spec)[None]
        tensor = pixels if self._raw_pixels else normalise(pixels, spec)
        preprocess_us = elapsed_us(start)
        invoked = time.perf_counter()
        outputs = self._model.invoke(tensor, _DECODED_OUTPUTS)
        invoke_us = elapsed_us(invoked)
        decoded = time.perf_counter()
        estimate = decode_lane(outputs, self.manifest)
        lane = LaneState(
            status=_STATUS[estimate.status],
            offset_m=estimate.offset_m,
            heading_rad=estimate.heading_rad,
            curvature_per_m=estimate.curvature_per_m,
            offset_confidence=estimate.offset_confidence,
            heading_confidence=estimate.heading_confidence,
            curvature_confidence=estimate.curvature_confidence,
            lane_width_m=estimate.lane_width_m,
            reference_forward_m=0.0,
        )
        return TaskOutput(
            lane=lane,
            timings_us={
                "lane:preprocess": preprocess_us,
                "lane:invoke": invoke_us,
                "lane:decode": elapsed_us(decoded),
            },
        )

    def close(self) -> None:
        """Nothing to release beyond what garbage collection frees."""


def load_lane_task(config: FirmwareConfig) -> LaneTask:
    """Load the lane bundle named by ``models.lane`` at ``models.lane_precision``.

    Raises:
        BundleError: the manifest is missing or invalid, or the file's sha256 differs.
        ModelError: the model does not load or disagrees with its manifest.
    """
    manifest = load_manifest(config.models.manifest_path("lane"), precision=config.models.lane_precision)
    manifest.check_firmware(__version__)
    return LaneTask(manifest, num_threads=config.runtime.num_threads, delegate=config.runtime.delegate or None)

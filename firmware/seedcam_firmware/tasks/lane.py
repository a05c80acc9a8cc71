"""The lane task: preprocess → lane model → metric lane state."""

from __future__ import annotations

import time
from collections.abc import Mapping

from seedcam.types import LaneState, LaneStatus
from seedcam_firmware.config import FirmwareConfig
from seedcam_firmware.inference.lane import decode_lane
from seedcam_firmware.inference.prepared import PreparedFrame
from seedcam_firmware.tasks.base import NO_PRIOR, ModelTask, Task, TaskOutput, elapsed_us, load_task_manifest

__all__ = ["LaneTask", "load_lane_task"]

#: the outputs the lane decoder reads (the segmentation mask is a training aid)
_DECODED_OUTPUTS = ("lane_state", "presence")
_STATUS = {"ok": LaneStatus.OK, "one_line": LaneStatus.ONE_LINE, "lost": LaneStatus.LOST}


class LaneTask(ModelTask):
    """Runs a lane bundle on frames.

    Raises (constructor):
        ModelError: the model file is missing, not TFLite, or disagrees with its manifest.
    """

    name = "lane"

    def run_prepared(self, frame: PreparedFrame, prior: Mapping[str, TaskOutput] = NO_PRIOR) -> TaskOutput:
        start = time.perf_counter()
        tensor = self.frame_tensor(frame)  # shared with the frame's other tasks of this input
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


def load_lane_task(config: FirmwareConfig, loaded: Mapping[str, Task] | None = None) -> LaneTask:
    """Load the lane bundle named by ``models.lane`` at ``models.lane_precision``.

    Args:
        config: the firmware configuration.
        loaded: tasks loaded before this one (unused: the lane task stands alone).

    Raises:
        BundleError: the manifest is missing or invalid, the file's sha256 differs,
            or the bundle is not a lane model.
        ModelError: the model does not load or disagrees with its manifest.
    """
    manifest = load_task_manifest(config, "lane")
    return LaneTask(manifest, num_threads=config.runtime.num_threads, delegate=config.runtime.delegate or None)

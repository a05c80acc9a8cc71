"""Capture → inference → encode+send, pipelined with bounded latest-wins queues.

Each stage runs in its own thread, so a slow model never stalls capture and a
slow link never stalls the model: the queues between them keep only the newest
items and count what they drop. A Result goes out for every processed frame,
even when no task found anything.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from seedcam.types import Result
from seedcam_firmware.camera.base import CameraSource, Frame
from seedcam_firmware.errors import CameraError
from seedcam_firmware.latest_queue import LatestQueue

__all__ = ["Pipeline", "PipelineStats", "FrameProcessor"]

log = logging.getLogger(__name__)

#: turns a frame into a Result (runs the enabled tasks)
FrameProcessor = Callable[[Frame], Result]
#: hands a finished Result to the link
ResultSink = Callable[[Result], None]
#: told of each frame whose Result the sink took (the preview stream picks its JPEGs from these)
SentHook = Callable[[Frame, Result], None]

_POLL_S = 0.1
_CAMERA_TIMEOUT_S = 2.0
_CAMERA_RETRY_S = 0.5
_FPS_WINDOW_S = 1.0


@dataclass(frozen=True)
class PipelineStats:
    """Counters of the pipeline (they only grow, except fps)."""

    frames_captured: int
    frames_processed: int
    frames_dropped: int
    camera_errors: int
    fps: float


class Pipeline:
    """Runs the three stages until :meth:`stop`.

    Args:
        camera: the frame source.
        process: the inference stage.
        sink: the encode+send stage.
        queue_depth: capacity of each latest-wins queue.
        on_sent: called on the send thread with each frame and its Result once the sink took it.
    """

    def __init__(
        self,
        camera: CameraSource,
        process: FrameProcessor,
        sink: ResultSink,
        *,
        queue_depth: int = 2,
        on_sent: SentHook | None = None,
    ) -> None:
        self._camera = camera
        self._process = process
        self._sink = sink
        self._on_sent = on_sent
        self._frames: LatestQueue[Frame] = LatestQueue(queue_depth)
        self._results: LatestQueue[tuple[Frame, Result]] = LatestQueue(queue_depth)
        self._stop = threading.Event()
        self._latest_frame: Frame | None = None
        self._captured = 0
        self._processed = 0
        self._failed = 0
        self._camera_errors = 0
        self._processed_times: collections.deque[float] = collections.deque()
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._capture_loop, name="seedcam-capture", daemon=True),
            threading.Thread(target=self._inference_loop, name="seedcam-inference", daemon=True),
            threading.Thread(target=self._send_loop, name="seedcam-send", daemon=True),
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def request_stop(self) -> None:
        """Tell every stage to stop; returns at once (see :meth:`stop`)."""
        self._stop.set()
        self._frames.close()
        self._results.close()

    def stop(self, timeout: float = 3.0) -> None:
        """Stop all stages and wait for them (bounded by ``timeout``)."""
        self.request_stop()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            if thread.is_alive():
                thread.join(max(0.0, deadline - time.monotonic()))

    @property
    def latest_frame(self) -> Frame | None:
        """The most recently captured frame (for snapshots)."""
        return self._latest_frame

    @property
    def stats(self) -> PipelineStats:
        with self._lock:
            self._forget_old(time.monotonic())
            return PipelineStats(
                frames_captured=self._captured,
                frames_processed=self._processed,
                frames_dropped=self._frames.dropped + self._results.dropped + self._failed,
                camera_errors=self._camera_errors,
                fps=len(self._processed_times) / _FPS_WINDOW_S,
            )

    def _capture_loop(self) -> None:
        while not self._stop.is_set():
            try:
                frame = self._camera.read(timeout=_CAMERA_TIMEOUT_S)
            except CameraError as exc:
                self._camera_errors += 1
                log.warning("camera: %s", exc)
                self._stop.wait(_CAMERA_RETRY_S)
                continue
            self._latest_frame = frame
            self._captured += 1
            self._frames.put(frame)

    def _inference_loop(self) -> None:
        while not self._stop.is_set():
            frame = self._frames.get(_POLL_S)
            if frame is None:
                continue
            try:
                result = self._process(frame)
            except Exception:  # one bad frame must not stop the sensor
                with self._lock:
                    self._failed += 1
                log.exception("processing frame %d failed", frame.frame_id)
                continue
            self._results.put((frame, result))

    def _send_loop(self) -> None:
        while not self._stop.is_set():
            item = self._results.get(_POLL_S)
            if item is None:
                continue
            frame, result = item
            try:
                self._sink(result)
            except Exception:
                with self._lock:
                    self._failed += 1
                log.exception("sending result %d failed", result.frame_id)
                continue
            if self._on_sent is not None:
                try:  # the result went out: what follows it (preview, black box) does not make it a failed send
                    self._on_sent(frame, result)
                except Exception:
                    log.exception("after sending result %d", result.frame_id)
            with self._lock:
                self._processed += 1
                now = time.monotonic()
                self._processed_times.append(now)
                self._forget_old(now)

    def _forget_old(self, now: float) -> None:
        while self._processed_times and now - self._processed_times[0] > _FPS_WINDOW_S:
            self._processed_times.popleft()

"""Play a video file as a camera, paced to its frame rate."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import cv2
import numpy as np

from seedcam_firmware.camera._frames import PacedPlayback, Pacer, rotated_size
from seedcam_firmware.errors import CameraError

__all__ = ["VideoFileCamera"]

_log = logging.getLogger(__name__)
_FALLBACK_FPS = 30.0


class VideoFileCamera(PacedPlayback):
    """Frames from a video file (anything OpenCV's FFmpeg backend decodes).

    Frames are released at ``fps`` on the monotonic clock; a reader that falls
    behind gets every frame anyway (nothing is skipped), just later. Timestamps
    are the monotonic time each frame was decoded, in microseconds.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        fps: float | None = None,
        loop: bool = True,
        size: tuple[int, int] | None = None,
        rotation: int = 0,
    ) -> None:
        """Open the file and decode its first frame.

        Args:
            path: the video file.
            fps: playback rate; None uses the file's own rate (30 if unknown).
            loop: restart at the end instead of raising.
            size: (width, height) to resize to; None keeps the file's size.
            rotation: clockwise degrees applied after resizing (0/90/180/270).

        Raises:
            CameraError: the file does not exist, cannot be decoded or is empty.
            ValueError: fps <= 0 or a bad rotation.
        """
        super().__init__()
        self._path = Path(path)
        self._what = f"video {self._path}"
        if not self._path.is_file():
            raise CameraError(f"video file {self._path} does not exist")
        self._loop = loop
        self._rotation = rotation
        if fps is not None:
            self._pacer = Pacer(fps)  # checks fps before opening anything
        self._cap = self._open()
        if fps is None:
            native = self._cap.get(cv2.CAP_PROP_FPS)
            if math.isfinite(native) and native > 0:
                self._pacer = Pacer(native)
            else:
                _log.warning(
                    "%s does not state its frame rate; playing at %g fps",
                    path,
                    _FALLBACK_FPS,
                )
                self._pacer = Pacer(_FALLBACK_FPS)
        first = self._decode()
        if first is None:
            self._cap.release()
            raise CameraError(f"video file {self._path} has no readable frames")
        self._pending: np.ndarray | None = first
        self._size = size if size is not None else (first.shape[1], first.shape[0])
        self.size = rotated_size(self._size, rotation)

    def _open(self) -> cv2.VideoCapture:
        cap = cv2.VideoCapture(str(self._path))
        if not cap.isOpened():
            cap.release()
            raise CameraError(f"cannot decode video file {self._path}")
        return cap

    def _decode(self) -> np.ndarray | None:
        ok, image = self._cap.read()
        return image if ok and image is not None else None

    def _next_image(self) -> np.ndarray:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            return pending
        image = self._decode()
        if image is not None:
            return image
        if not self._loop:
            raise CameraError(f"end of video {self._path} after {self._next_id} frames")
        _log.debug("looping %s", self._path)
        self._cap.release()
        self._cap = self._open()
        image = self._decode()
        if image is None:
            raise CameraError(f"video file {self._path} has no readable frames")
        return image

    def close(self) -> None:
        """Release the file. Idempotent."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._cap.release()

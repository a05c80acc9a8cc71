"""Frame helpers every capture backend shares: size, rotation, pacing, and the paced-playback base."""

from __future__ import annotations

import abc
import dataclasses
import threading
import time

import cv2
import numpy as np

from seedcam_firmware.camera.base import CameraSource, Frame
from seedcam_firmware.errors import CameraError

__all__ = ["Pacer", "PacedPlayback", "RotatedCamera", "fit_image", "rotated_size"]

_ROTATE_CODES = {
    90: cv2.ROTATE_90_CLOCKWISE,
    180: cv2.ROTATE_180,
    270: cv2.ROTATE_90_COUNTERCLOCKWISE,
}


def _check_rotation(rotation: int) -> None:
    if rotation not in (0, 90, 180, 270):
        raise ValueError(f"rotation must be 0, 90, 180 or 270, got {rotation!r}")


def rotated_size(size: tuple[int, int], rotation: int) -> tuple[int, int]:
    """Return the (width, height) of a ``size`` frame after ``rotation`` degrees.

    Raises:
        ValueError: rotation is not 0, 90, 180 or 270.
    """
    _check_rotation(rotation)
    return (size[1], size[0]) if rotation in (90, 270) else (size[0], size[1])


def fit_image(image: np.ndarray, size: tuple[int, int] | None, rotation: int = 0) -> np.ndarray:
    """Resize ``image`` to ``size`` (if it differs), then rotate it clockwise.

    Args:
        image: H x W x 3 BGR image.
        size: target (width, height) before rotation; None keeps the image's size.
        rotation: clockwise degrees, one of 0, 90, 180, 270.

    Returns:
        The fitted image (the input itself when nothing changes).

    Raises:
        ValueError: bad rotation.
    """
    _check_rotation(rotation)
    h, w = image.shape[:2]
    if size is not None and (w, h) != tuple(size):
        shrinking = size[0] * size[1] < w * h
        interp = cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR
        image = cv2.resize(image, tuple(size), interpolation=interp)
    if rotation:
        image = cv2.rotate(image, _ROTATE_CODES[rotation])
    return image


class Pacer:
    """Release frames at ``fps`` on the monotonic clock, never blocking past a deadline.

    A consumer that falls behind gets the next frame at once, and the schedule
    restarts from there: there is no burst of catch-up frames.
    """

    def __init__(self, fps: float) -> None:
        """Create a pacer.

        Args:
            fps: frames per second, > 0.

        Raises:
            ValueError: fps is not positive.
        """
        if not fps > 0:
            raise ValueError(f"fps must be > 0, got {fps!r}")
        self.fps = float(fps)
        self._period = 1.0 / self.fps
        self._due: float | None = None

    def wait(self, deadline: float) -> bool:
        """Sleep until the next frame is due, or until ``deadline`` if that is sooner.

        Args:
            deadline: a ``time.monotonic()`` instant.

        Returns:
            True when the frame is due now; False when the deadline came first.
        """
        now = time.monotonic()
        due = now if self._due is None else self._due
        if due > deadline:
            time.sleep(max(0.0, deadline - now))
            return False
        if due > now:
            time.sleep(due - now)
        return True

    def advance(self) -> None:
        """Record that a frame was delivered; schedule the next one."""
        now = time.monotonic()
        due = now if self._due is None else self._due
        self._due = max(due + self._period, now)


class RotatedCamera(CameraSource):
    """Wrap a source whose backend cannot rotate, rotating each image (truth untouched)."""

    def __init__(self, inner: CameraSource, rotation: int) -> None:
        """Wrap ``inner``.

        Raises:
            ValueError: bad rotation.
        """
        self.size = rotated_size(inner.size, rotation)
        self._inner = inner
        self._rotation = rotation

    def read(self, timeout: float) -> Frame:
        """Read from the wrapped source and rotate.

        Raises:
            CameraError: as the wrapped source.
        """
        frame = self._inner.read(timeout)
        return dataclasses.replace(frame, image=fit_image(frame.image, None, self._rotation))

    def close(self) -> None:
        """Close the wrapped source."""
        self._inner.close()


class PacedPlayback(CameraSource):
    """A file-backed source that releases every frame at a fixed rate (video file, image folder).

    Subclasses set ``size``, ``_size`` (before rotation), ``_rotation``, ``_pacer`` and
    ``_what`` (e.g. ``"video /x.avi"``), and implement :meth:`_next_image`.
    """

    _size: tuple[int, int] | None
    _rotation: int
    _pacer: Pacer
    _what: str

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closed = False
        self._next_id = 0

    @abc.abstractmethod
    def _next_image(self) -> np.ndarray:
        """Decode the next image (called with the lock held).

        Raises:
            CameraError: the end was reached (no loop) or nothing is readable.
        """

    def read(self, timeout: float) -> Frame:
        """Return the next frame once it is due.

        Raises:
            CameraError: closed, the end (no loop), nothing readable, or the next
                frame is not due within ``timeout``.
        """
        deadline = time.monotonic() + max(0.0, timeout)
        with self._lock:
            if self._closed:
                raise CameraError(f"{self._what} is closed")
            if not self._pacer.wait(deadline):
                raise CameraError(f"no frame from {self._what} within {timeout} s")
            image = self._next_image()
            stamp_us = time.monotonic_ns() // 1000
            self._pacer.advance()
            frame = Frame(self._next_id, stamp_us, fit_image(image, self._size, self._rotation))
            self._next_id += 1
            return frame

"""A Video4Linux2 camera (USB UVC webcams, CSI cameras with a V4L2 driver)."""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass

import cv2
import numpy as np

from seedcam_firmware.camera._frames import fit_image, rotated_size
from seedcam_firmware.camera.base import CameraSource, Frame
from seedcam_firmware.errors import CameraError

__all__ = ["CaptureMode", "V4L2Camera"]

_log = logging.getLogger(__name__)

_REOPEN_INTERVAL_S = 1.0


@dataclass(frozen=True)
class CaptureMode:
    """The mode a V4L2 driver actually applied (it may differ from the one asked for)."""

    width: int
    height: int
    fps: float  #: the driver's frame rate (0: it does not say)
    pixel_format: str  #: FourCC, e.g. "YUYV"


def _fourcc_text(code: float) -> str:
    value = int(code)
    return "".join(chr((value >> (8 * i)) & 0xFF) for i in range(4)).rstrip("\x00 ")


class V4L2Camera(CameraSource):
    """Frames from a V4L2 device through OpenCV's V4L2 backend.

    A capture thread reads the device continuously and keeps only the latest
    frame, so :meth:`read` returns the newest image and never blocks past its
    timeout even when the driver hangs. Frame ids count captured frames from 0;
    a gap means frames were replaced before the reader took them. Timestamps are
    the monotonic time at grab, in microseconds. :attr:`mode` is what the driver
    applied (size, rate, pixel format); frames are resized to the size asked for.

    A device that disappears (cable pulled, driver reset) makes :meth:`read` raise
    :class:`CameraError` while it is gone; the capture thread reopens it every
    second, with the same mode, and frames flow again once it is back.
    """

    def __init__(
        self,
        device: str | int,
        width: int = 320,
        height: int = 240,
        fps: float = 30.0,
        *,
        rotation: int = 0,
        open_timeout: float = 5.0,
        pixel_format: str = "",
    ) -> None:
        """Open the device, ask for a mode and wait for the first frame.

        Args:
            device: a path such as ``/dev/video0`` or an index (``0``).
            width: requested width; frames are resized to it if the driver differs.
            height: requested height; as width.
            fps: requested rate; 0 leaves the driver's default.
            rotation: clockwise degrees applied after resizing (0/90/180/270).
            open_timeout: seconds to wait for the first frame.
            pixel_format: the FourCC to capture in (``"YUYV"``, ``"MJPG"``, ...); empty = the
                driver's default. OpenCV converts every format it knows to BGR.

        Raises:
            CameraError: the device does not exist, cannot be opened, refuses
                ``pixel_format``, or gives no frame within ``open_timeout``.
            ValueError: a bad rotation or a pixel format that is not 4 characters.
        """
        if pixel_format and len(pixel_format) != 4:
            raise ValueError(f"pixel_format must be a FourCC of 4 characters, not {pixel_format!r}")
        self.path = f"/dev/video{device}" if isinstance(device, int) else str(device)
        self._size = (int(width), int(height))
        self.size = rotated_size(self._size, rotation)
        self._rotation = rotation
        self._fps = fps
        self._pixel_format = pixel_format
        self._cap = self._open_device()
        self.mode = self._applied_mode(self._cap)
        self._cond = threading.Condition()
        self._latest: tuple[int, int, np.ndarray] | None = None
        self._error: str | None = None
        self._next_seq = 0
        self._closed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._capture_loop, name=f"v4l2-{self.path}", daemon=True)
        self._thread.start()
        with self._cond:
            self._cond.wait_for(lambda: self._latest is not None or self._error, open_timeout)
            problem = self._error if self._latest is None else None
            if self._latest is None and problem is None:
                problem = f"camera {self.path} gave no frame within {open_timeout} s"
        if problem:
            self.close()
            raise CameraError(problem)
        _log.info(
            "opened camera %s: %dx%d %s at %g fps",
            self.path,
            self.mode.width,
            self.mode.height,
            self.mode.pixel_format,
            self.mode.fps,
        )

    def _open_device(self) -> cv2.VideoCapture:
        """Open the device and ask for the configured mode.

        Raises:
            CameraError: the device does not exist or cannot be opened.
        """
        if not os.path.exists(self.path):
            raise CameraError(f"camera {self.path} does not exist")
        cap = cv2.VideoCapture(self.path, cv2.CAP_V4L2)
        if not cap.isOpened():
            cap.release()
            raise CameraError(f"cannot open camera {self.path} (not a capture device, busy, or no permission)")
        if self._pixel_format:
            cap.set(cv2.CAP_PROP_FOURCC, cv2.VideoWriter.fourcc(*self._pixel_format))
            applied = _fourcc_text(cap.get(cv2.CAP_PROP_FOURCC))
            if applied != self._pixel_format:
                cap.release()
                raise CameraError(
                    f"camera {self.path} does not capture in {self._pixel_format} (the driver chose {applied or '?'})"
                )
        cap.set(cv2.CAP_PROP_FRAME_WIDTH, self._size[0])
        cap.set(cv2.CAP_PROP_FRAME_HEIGHT, self._size[1])
        if self._fps > 0:
            cap.set(cv2.CAP_PROP_FPS, self._fps)
        cap.set(cv2.CAP_PROP_BUFFERSIZE, 1)
        return cap

    @staticmethod
    def _applied_mode(cap: cv2.VideoCapture) -> CaptureMode:
        return CaptureMode(
            width=int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)),
            height=int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT)),
            fps=float(cap.get(cv2.CAP_PROP_FPS)),
            pixel_format=_fourcc_text(cap.get(cv2.CAP_PROP_FOURCC)),
        )

    def _capture_loop(self) -> None:
        seq = 0
        try:
            while not self._stop.is_set():
                ok = self._cap.grab()
                ts = time.monotonic_ns() // 1000
                image = None
                if ok:
                    ok, image = self._cap.retrieve()
                if not ok or image is None:
                    with self._cond:
                        if not self._stop.is_set():
                            self._error = f"camera {self.path}: frame read failed"
                        self._cond.notify_all()
                    if self._latest is None or not self._reopen():
                        return  # never worked, or closed while waiting
                    continue
                with self._cond:
                    self._latest = (seq, ts, image)
                    self._error = None
                    self._cond.notify_all()
                seq += 1
        finally:
            self._cap.release()

    def _reopen(self) -> bool:
        """After a failure (cable pulled, driver reset) reopen the device until it is back or we close."""
        self._cap.release()
        while not self._stop.wait(_REOPEN_INTERVAL_S):
            try:
                self._cap = self._open_device()
            except CameraError as exc:
                _log.debug("reopening camera: %s", exc)
                continue
            _log.warning("camera %s is back", self.path)
            return True
        return False

    def read(self, timeout: float) -> Frame:
        """Return the newest frame not yet returned.

        Args:
            timeout: seconds to wait at most.

        Raises:
            CameraError: closed, the device failed, or no new frame within ``timeout``.
        """
        deadline = time.monotonic() + max(0.0, timeout)
        with self._cond:
            while True:
                if self._closed:
                    raise CameraError(f"camera {self.path} is closed")
                latest = self._latest
                if latest is not None and latest[0] >= self._next_seq:
                    break
                if self._error:
                    raise CameraError(self._error)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise CameraError(f"no frame from camera {self.path} within {timeout} s")
                self._cond.wait(remaining)
            seq, ts, image = latest
            self._next_seq = seq + 1
        return Frame(seq, ts, fit_image(image, self._size, self._rotation))

    def close(self) -> None:
        """Stop the capture thread and release the device. Idempotent."""
        with self._cond:
            self._closed = True
            self._stop.set()
            self._cond.notify_all()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)
            if self._thread.is_alive():
                _log.warning(
                    "camera %s capture thread did not stop; it will release on exit",
                    self.path,
                )

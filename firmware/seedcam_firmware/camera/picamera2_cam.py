"""A Raspberry Pi CSI camera through libcamera's Python binding, picamera2.

picamera2 needs the system's libcamera Python binding, so it comes from Raspberry
Pi OS (``sudo apt install python3-picamera2``), not pip, and the firmware's venv must see the
system packages (``python3 -m venv --system-site-packages``). It is imported when
the source opens, so nothing else in the firmware needs it.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import numpy as np

from seedcam_firmware.camera._frames import fit_image, rotated_size
from seedcam_firmware.camera.base import CameraSource, Frame
from seedcam_firmware.errors import CameraError

__all__ = ["Picamera2Camera", "INSTALL_HINT"]

_log = logging.getLogger(__name__)

#: The fix for a missing picamera2, in the CameraError a board without it gets.
INSTALL_HINT = (
    "picamera2 is not installed: on Raspberry Pi OS `sudo apt install python3-picamera2` "
    "and create the venv with --system-site-packages"
)
#: A SensorTimestamp further than this from the monotonic clock is not on it (see :meth:`read`).
_STAMP_SLACK_NS = 5_000_000_000


def _import_picamera2() -> Any:
    """Return the ``picamera2.Picamera2`` class.

    Raises:
        CameraError: picamera2 (or libcamera under it) cannot be imported.
    """
    try:
        from picamera2 import Picamera2
    except ImportError as exc:
        raise CameraError(f"{INSTALL_HINT} ({exc})") from exc
    except Exception as exc:  # a broken libcamera binding raises anything at import
        raise CameraError(f"picamera2 cannot be imported: {exc}") from exc
    return Picamera2


class Picamera2Camera(CameraSource):
    """Frames from a libcamera camera (Camera Module 2/3, HQ, ...) through picamera2.

    The camera runs a video configuration of ``width`` x ``height`` in picamera2's
    ``RGB888`` format, whose arrays are in B, G, R byte order: OpenCV's BGR, no
    conversion. Each :meth:`read` copies the next completed frame out of the
    camera (``capture_arrays``, which returns the frame's metadata with it) and
    gives the buffer straight back, so a reader that times out holds nothing.

    Timestamps are the frame's ``SensorTimestamp`` (when its first row was read
    out, i.e. the end of its exposure) in microseconds. picamera2 itself compares
    that stamp with ``time.monotonic_ns()``: it is on the firmware's monotonic
    clock, so capture-to-result latency includes the ISP and any frame picamera2
    had queued. A stamp that is missing or not on that clock falls back to the
    monotonic time the frame was taken. Frame ids count delivered frames from 0.
    """

    def __init__(
        self,
        width: int = 320,
        height: int = 240,
        fps: float = 30.0,
        *,
        camera_num: int = 0,
        rotation: int = 0,
        open_timeout: float = 5.0,
    ) -> None:
        """Open camera ``camera_num``, configure and start it, and wait for the first frame.

        Args:
            width: requested width; frames are resized to it if the ISP gives another.
            height: requested height; as width.
            fps: requested rate (a fixed frame duration); 0 leaves libcamera's default.
            camera_num: which of the cameras libcamera lists (``rpicam-hello --list-cameras``).
            rotation: clockwise degrees applied after resizing (0/90/180/270).
            open_timeout: seconds to wait for the first frame.

        Raises:
            CameraError: picamera2 is not installed, there is no such camera, it
                cannot be configured or started, or it gives no frame within
                ``open_timeout``.
            ValueError: a bad rotation or a negative fps.
        """
        if fps < 0:
            raise ValueError(f"fps must be >= 0, got {fps!r}")
        self._size = (int(width), int(height))
        self.size = rotated_size(self._size, rotation)
        self._rotation = rotation
        self._what = f"picamera2 camera {camera_num}"
        self._lock = threading.Lock()
        self._closed = False
        self._next_id = 0
        self._warned_stamp = False
        picamera2_cls = _import_picamera2()
        try:
            cameras = picamera2_cls.global_camera_info()
        except Exception as exc:
            raise CameraError(f"picamera2 cannot list cameras: {exc}") from exc
        if not 0 <= camera_num < len(cameras):
            found = ", ".join(str(c.get("Model", "?")) for c in cameras) or "none"
            raise CameraError(
                f"no {self._what}: libcamera found {len(cameras)} camera(s) ({found}); "
                "check the ribbon cable and `rpicam-hello --list-cameras`"
            )
        try:
            self._cam = picamera2_cls(camera_num)
        except Exception as exc:
            raise CameraError(f"cannot open {self._what} (busy in another process?): {exc}") from exc
        try:
            controls: dict[str, Any] = {}
            if fps > 0:
                frame_us = max(1, round(1_000_000 / fps))
                controls["FrameDurationLimits"] = (frame_us, frame_us)
            config = self._cam.create_video_configuration(
                main={"size": self._size, "format": "RGB888"},
                controls=controls,
            )
            self._cam.configure(config)
            self._cam.start()
        except Exception as exc:
            self.close()
            raise CameraError(f"cannot start {self._what} at {width}x{height} ({fps:g} fps): {exc}") from exc
        try:
            self._capture(open_timeout)  # fail at start, not on the first read
        except CameraError:
            self.close()
            raise
        _log.info("opened %s (%s)", self._what, cameras[camera_num].get("Model", "unknown model"))

    def _capture(self, timeout: float) -> tuple[np.ndarray, int]:
        """Copy out the next frame; return it and its monotonic stamp in microseconds.

        Raises:
            CameraError: picamera2 failed or gave no frame within ``timeout``.
        """
        try:
            job = self._cam.capture_arrays(["main"], wait=False)
            arrays, metadata = self._cam.wait(job, timeout=max(0.0, timeout))
        except TimeoutError as exc:
            raise CameraError(f"no frame from {self._what} within {timeout} s") from exc
        except Exception as exc:
            raise CameraError(f"{self._what}: capture failed: {exc}") from exc
        now_ns = time.monotonic_ns()
        image = np.asarray(arrays[0])
        if image.ndim != 3 or image.shape[2] < 3:
            raise CameraError(f"{self._what}: expected an H x W x 3 frame, got shape {image.shape}")
        if image.shape[2] > 3:
            image = image[:, :, :3]  # an X channel (XRGB8888)
        return image, self._stamp_us(metadata, now_ns)

    def _stamp_us(self, metadata: Any, now_ns: int) -> int:
        stamp = metadata.get("SensorTimestamp") if isinstance(metadata, dict) else None
        if isinstance(stamp, int) and now_ns - _STAMP_SLACK_NS <= stamp <= now_ns:
            return stamp // 1000
        if not self._warned_stamp:
            self._warned_stamp = True
            _log.warning(
                "%s: SensorTimestamp %r is not on the monotonic clock (now %d ns); stamping frames on delivery",
                self._what,
                stamp,
                now_ns,
            )
        return now_ns // 1000

    def read(self, timeout: float) -> Frame:
        """Return the next frame.

        Args:
            timeout: seconds to wait at most.

        Raises:
            CameraError: closed, picamera2 failed, or no frame within ``timeout``.
        """
        with self._lock:
            if self._closed:
                raise CameraError(f"{self._what} is closed")
            image, stamp_us = self._capture(timeout)
            frame = Frame(self._next_id, stamp_us, fit_image(image, self._size, self._rotation))
            self._next_id += 1
            return frame

    def close(self) -> None:
        """Stop the camera and release it to other processes. Idempotent."""
        if self._closed:
            return
        self._closed = True
        cam = getattr(self, "_cam", None)
        if cam is None:
            return
        for step in (cam.stop, cam.close):
            try:
                step()
            except Exception as exc:  # closing must not fail; libcamera says why in its log
                _log.warning("%s: %s failed on close: %s", self._what, step.__name__, exc)

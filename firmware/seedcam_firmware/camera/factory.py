"""Open the camera source a :class:`CameraConfig` asks for.

Also holds the small frame helpers every capture backend shares: fitting an
image to the configured size and rotation, and pacing playback to a frame rate
on the monotonic clock.
"""

from __future__ import annotations

import dataclasses
import logging
import time

import cv2
import numpy as np

from seedcam_firmware.camera.base import CameraSource, Frame
from seedcam_firmware.config import CameraConfig
from seedcam_firmware.errors import ConfigError

__all__ = ["Pacer", "RotatedCamera", "fit_image", "open_camera", "rotated_size"]

_log = logging.getLogger(__name__)

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


def fit_image(
    image: np.ndarray, size: tuple[int, int] | None, rotation: int = 0
) -> np.ndarray:
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
        return dataclasses.replace(
            frame, image=fit_image(frame.image, None, self._rotation)
        )

    def close(self) -> None:
        """Close the wrapped source."""
        self._inner.close()


def open_camera(cfg: CameraConfig) -> CameraSource:
    """Open the backend named by ``cfg.source``; backends are imported lazily.

    ``cfg.fps == 0`` lets the backend pick its own rate (a video file's rate,
    10 fps for a folder, the synthetic default, the driver's default).

    Args:
        cfg: the camera section of the firmware config.

    Returns:
        An open camera source; close it (or use ``with``) when done.

    Raises:
        ConfigError: ``camera.path`` is empty for a video or folder source.
        CameraError: the backend cannot open its device or file.
    """
    size = (cfg.width, cfg.height)
    _log.info("opening %s camera (%dx%d, rotation %d)", cfg.source, *size, cfg.rotation)
    if cfg.source == "synthetic":
        from seedcam_firmware.camera.synthetic import SyntheticCamera

        kwargs: dict[str, object] = {"seed": cfg.seed, "size": size}
        if cfg.scene:
            from seedcam_firmware.scene.scripted import load_scene_file

            kwargs["scripted"] = load_scene_file(cfg.scene)
        if cfg.fps > 0:
            kwargs["fps"] = cfg.fps
        cam: CameraSource = SyntheticCamera(**kwargs)  # type: ignore[arg-type]
        return RotatedCamera(cam, cfg.rotation) if cfg.rotation else cam
    if cfg.source == "v4l2":
        from seedcam_firmware.camera.v4l2 import V4L2Camera

        return V4L2Camera(
            cfg.device, cfg.width, cfg.height, cfg.fps, rotation=cfg.rotation
        )
    if not cfg.path:
        raise ConfigError(
            f"camera.path must be set when camera.source is {cfg.source!r}"
        )
    if cfg.source == "video":
        from seedcam_firmware.camera.video_file import VideoFileCamera

        return VideoFileCamera(
            cfg.path,
            fps=cfg.fps or None,
            loop=cfg.loop,
            size=size,
            rotation=cfg.rotation,
        )
    if cfg.source == "folder":
        from seedcam_firmware.camera.image_folder import ImageFolderCamera

        return ImageFolderCamera(
            cfg.path,
            fps=cfg.fps or 10.0,
            loop=cfg.loop,
            size=size,
            rotation=cfg.rotation,
        )
    raise ConfigError(f"no camera backend for {cfg.source!r}")  # pragma: no cover

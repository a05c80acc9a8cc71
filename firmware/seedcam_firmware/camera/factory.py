"""Open the camera source a :class:`CameraConfig` asks for."""

from __future__ import annotations

import logging

from seedcam_firmware.camera._frames import RotatedCamera
from seedcam_firmware.camera.base import CameraSource
from seedcam_firmware.config import CameraConfig
from seedcam_firmware.errors import ConfigError

__all__ = ["open_camera"]

_log = logging.getLogger(__name__)


def open_camera(cfg: CameraConfig) -> CameraSource:
    """Open the backend named by ``cfg.source``; backends are imported lazily.

    ``cfg.fps == 0`` lets the backend pick its own rate (a video file's rate,
    10 fps for a folder, the synthetic default, the driver's or libcamera's default).

    Args:
        cfg: the camera section of the firmware config.

    Returns:
        An open camera source; close it (or use ``with``) when done.

    Raises:
        ConfigError: ``camera.path`` is empty for a video, folder or sim source.
        CameraError: the backend cannot open its device or file.
    """
    size = (cfg.width, cfg.height)
    _log.info("opening %s camera (%dx%d, rotation %d)", cfg.source, *size, cfg.rotation)
    if cfg.source == "synthetic":
        from seedcam_firmware.camera.synthetic import SyntheticCamera

        kwargs: dict[str, object] = {"seed": cfg.seed, "size": size}
        if cfg.scene:
            from seedcam_firmware.scene.scripted import load_scene_script

            script = load_scene_script(cfg.scene)
            kwargs["scripted"] = script.steps[0][1] if len(script.steps) == 1 else script
        if cfg.fps > 0:
            kwargs["fps"] = cfg.fps
        cam: CameraSource = SyntheticCamera(**kwargs)  # type: ignore[arg-type]
        return RotatedCamera(cam, cfg.rotation) if cfg.rotation else cam
    if cfg.source == "sim":  # scenes published by a closed-loop simulator (seedcam_firmware.agv_sim)
        if not cfg.path:
            raise ConfigError("camera.path must name the simulator's socket when camera.source is 'sim'")
        from seedcam_firmware.camera.sim import SimCamera

        sim = SimCamera(cfg.path, fps=cfg.fps or 30.0, seed=cfg.seed, size=size)
        return RotatedCamera(sim, cfg.rotation) if cfg.rotation else sim
    if cfg.source == "v4l2":
        from seedcam_firmware.camera.v4l2 import V4L2Camera

        return V4L2Camera(
            cfg.device, cfg.width, cfg.height, cfg.fps, rotation=cfg.rotation, pixel_format=cfg.pixel_format
        )
    if cfg.source == "picamera2":  # a Raspberry Pi CSI camera through libcamera
        from seedcam_firmware.camera.picamera2_cam import Picamera2Camera

        camera_num = cfg.device if isinstance(cfg.device, int) else 0  # a device path means the first camera
        return Picamera2Camera(cfg.width, cfg.height, cfg.fps, camera_num=camera_num, rotation=cfg.rotation)
    if not cfg.path:
        raise ConfigError(f"camera.path must be set when camera.source is {cfg.source!r}")
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

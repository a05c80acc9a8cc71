"""The ``sim`` camera: renders the scene a simulator publishes, so a closed-loop simulation
runs through the real firmware (models, framing, link) instead of around it.

The simulator owns the world and the car. At its own rate it sends the lane
pose and the objects as the camera sees them, one JSON datagram at a time, to
a Unix datagram socket the camera binds at ``camera.path``::

    {"scene": {"offset_m": 0.01, "heading_rad": -0.02, "curvature_per_m": 0.8,
               "lane_width_m": 0.45, "dash_phase_m": 3.2, "left_style": "none",
               "objects": [{"kind": "stop", "forward_m": 1.2, "left_m": -0.37, "yaw_rad": 0.1}]}}

Keys are :class:`~seedcam_firmware.scene.SceneSpec` fields; they override a
look (floor, lines, lighting) drawn once from ``camera.seed``. Each frame
renders the newest scene received; datagrams are small and a newer one simply
replaces an older one, so the simulator never waits for the camera.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import socket
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..errors import CameraError
from ..scene import SceneSpec, random_scene
from ..scene.scripted import scene_from_dict
from .synthetic import RenderedCamera

__all__ = ["SimCamera", "sim_look"]

log = logging.getLogger(__name__)

_MAX_DATAGRAM = 65536


def sim_look(seed: int) -> SceneSpec:
    """The look of a simulated track for ``seed``: a random floor, line paint and lighting, with both
    lines clearly painted, no shadows (they would ride along with the car) and no motion blur."""
    base = random_scene(np.random.default_rng(seed))
    return replace(
        base,
        left_style="solid" if base.left_style == "none" else base.left_style,
        right_style="solid" if base.right_style == "none" else base.right_style,
        left_contrast=max(base.left_contrast, 0.6),
        right_contrast=max(base.right_contrast, 0.6),
        shadows=(),
        objects=(),
        occluders=(),
        motion_blur_px=0.0,
        defocus_sigma_px=min(base.defocus_sigma_px, 0.8),
        gain=float(np.clip(base.gain, 0.8, 1.3)),
    )


class SimCamera(RenderedCamera):
    """Frames of the scene a simulator publishes on a Unix datagram socket, paced to ``fps``.

    Args:
        socket_path: where to bind the socket (a stale socket file there is replaced).
        fps: frame rate.
        seed: seed of the look and of the sensor noise.
        size: (width, height) in pixels.

    Raises:
        CameraError: the socket cannot be bound.
    """

    kind = "sim"

    def __init__(
        self, socket_path: str | Path, *, fps: float = 30.0, seed: int = 0, size: tuple[int, int] = (320, 240)
    ) -> None:
        super().__init__(fps=fps, seed=seed, size=size)
        self.path = str(socket_path)
        self._look = sim_look(seed)
        self._scene: SceneSpec | None = None
        self.bad_messages = 0  #: datagrams that were not a valid scene
        with contextlib.suppress(FileNotFoundError):
            if Path(self.path).is_socket():
                os.unlink(self.path)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            self._sock.bind(self.path)
        except OSError as exc:
            self._sock.close()
            raise CameraError(f"sim camera cannot bind {self.path}: {exc}") from exc
        self._sock.setblocking(False)

    def _take(self, data: bytes) -> None:
        try:
            message = json.loads(data)
            scene = message["scene"]
            if not isinstance(scene, dict):
                raise TypeError("scene must be an object")
            pose = scene_from_dict(scene, "sim scene")  # validates every key and value
            fields = {key: getattr(pose, key) for key in scene if key != "objects"}
            self._scene = replace(self._look, objects=pose.objects, **fields)
        except (ValueError, KeyError, TypeError) as exc:  # ConfigError is a ValueError
            self.bad_messages += 1
            log.warning("sim camera: ignored a bad scene message: %s", exc)

    def _drain(self) -> None:
        while True:
            try:
                data = self._sock.recv(_MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                raise CameraError(f"sim camera socket failed: {exc}") from exc
            self._take(data)

    def _next_scene(self, deadline: float) -> SceneSpec:
        """The newest scene received; before the first one, wait for it until ``deadline``."""
        self._drain()
        while self._scene is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._closed.is_set():
                raise CameraError(f"no scene from the simulator on {self.path} yet")
            select.select([self._sock], [], [], min(remaining, 0.1))
            self._drain()
        return self._scene

    def close(self) -> None:
        """Stop the camera and remove its socket; later reads raise :class:`CameraError`. Idempotent."""
        if self._closed.is_set():
            return
        super().close()
        self._sock.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)

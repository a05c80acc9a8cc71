"""A camera that renders synthetic road scenes: a smooth drive, or one scripted scene."""

from __future__ import annotations

import logging
import threading
import time

import numpy as np

from ..errors import CameraError
from ..scene import CameraModel, CleanRender, SceneSpec, SyntheticDrive, expose, render_clean
from ..scene.scripted import SceneScript
from .base import CameraSource, Frame

__all__ = ["RENDER_STAGE", "RenderedCamera", "SyntheticCamera"]

#: the stage of a rendered frame's ``timings_us`` that holds its render time
RENDER_STAGE = "camera:render"

log = logging.getLogger(__name__)


class RenderedCamera(CameraSource):
    """Frames rendered from a scene by the firmware's renderer, paced to ``fps``.

    Subclasses say where each frame's scene comes from (:meth:`_next_scene`).
    The schedule never runs ahead of a slow reader by more than one frame.

    Args:
        fps: frame rate; ``read`` sleeps until the next frame time.
        seed: seed of the sensor noise (``seed + 0x5EED``).
        size: (width, height) in pixels.
    """

    #: how errors name this camera
    kind = "rendered"

    def __init__(self, *, fps: float = 30.0, seed: int = 0, size: tuple[int, int] = (320, 240)) -> None:
        if fps <= 0:
            raise ValueError("fps must be > 0")
        self.size = (int(size[0]), int(size[1]))
        self._camera = CameraModel(width=self.size[0], height=self.size[1])
        self._period_ns = round(1e9 / fps)
        self._noise = np.random.default_rng(seed + 0x5EED)
        self._next_ns: int | None = None
        self._frame_id = 0
        self._closed = threading.Event()
        self._clean: CleanRender | None = None

    def _next_scene(self, deadline: float) -> SceneSpec:
        """The scene of the frame about to be rendered (``deadline``: monotonic seconds to give up at).

        Raises:
            CameraError: no scene by ``deadline``.
        """
        raise NotImplementedError

    def read(self, timeout: float) -> Frame:
        """Wait for the next frame time (at most ``timeout`` s) and render the frame.

        The frame is stamped when rendering has finished (a real camera stamps
        the end of its readout), and the render time is its ``timings_us``
        entry ``"camera:render"``: the renderer stands in for the scene, not
        for the sensor, so the capture-to-result latency leaves it out. A scene
        that has not changed since the last frame is not drawn again: only its
        sensor noise is fresh (the same pixels as drawing it again), so a still
        scene costs the emulated board's CPUs little beside the tasks, as a real
        camera's frames do.

        Raises:
            CameraError: the camera is closed, the next frame is due later than
                ``timeout`` from now, or its scene did not come within ``timeout``.
        """
        if self._closed.is_set():
            raise CameraError(f"{self.kind} camera is closed")
        deadline = time.monotonic() + timeout
        now = time.monotonic_ns()
        if self._next_ns is None:
            self._next_ns = now
        wait_s = (self._next_ns - now) / 1e9
        if wait_s > timeout:
            raise CameraError(f"no frame within {timeout:.3f} s (next frame in {wait_s:.3f} s)")
        if wait_s > 0 and self._closed.wait(wait_s):
            raise CameraError(f"{self.kind} camera is closed")
        spec = self._next_scene(deadline)
        self._next_ns = max(self._next_ns + self._period_ns, time.monotonic_ns())
        started_ns = time.monotonic_ns()
        if self._clean is None or self._clean.spec != spec:
            self._clean = render_clean(spec, self._camera)
        image, truth = expose(self._clean, self._noise), self._clean.truth
        ready_ns = time.monotonic_ns()  # stamped when ready, as a camera stamps the end of readout
        render_us = (ready_ns - started_ns) // 1000
        frame = Frame(self._frame_id, ready_ns // 1000, image, truth, {RENDER_STAGE: render_us})
        self._frame_id += 1
        return frame

    def close(self) -> None:
        """Stop the camera; later reads raise :class:`CameraError`. Idempotent."""
        self._closed.set()


class SyntheticCamera(RenderedCamera):
    """Frames of a :class:`~seedcam_firmware.scene.SyntheticDrive`, paced to ``fps``.

    Each frame's ``truth`` is the :class:`~seedcam_firmware.scene.SceneTruth`.
    The drive advances by ``1 / fps`` per frame (simulated time), so the scene
    sequence is deterministic given ``seed`` whatever the reader's timing.

    Args:
        fps: frame rate; ``read`` sleeps until the next frame time.
        seed: seed of the drive (and of the sensor noise).
        size: (width, height) in pixels.
        scripted: when given, every frame renders this scene (fresh noise each frame), or
            a :class:`~seedcam_firmware.scene.scripted.SceneScript`'s scene of that frame.
    """

    kind = "synthetic"

    def __init__(
        self,
        *,
        fps: float = 30.0,
        seed: int = 0,
        size: tuple[int, int] = (320, 240),
        scripted: SceneSpec | SceneScript | None = None,
    ) -> None:
        super().__init__(fps=fps, seed=seed, size=size)
        self._drive = SyntheticDrive(seed)
        self._scripted = scripted

    def _next_scene(self, deadline: float) -> SceneSpec:
        if isinstance(self._scripted, SceneScript):
            return self._scripted.at(self._frame_id)
        return self._scripted if self._scripted is not None else self._drive.step(self._period_ns / 1e9)

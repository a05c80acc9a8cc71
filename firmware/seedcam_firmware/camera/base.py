"""The camera-source interface every capture backend implements."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import numpy as np

__all__ = ["Frame", "CameraSource"]


@dataclass(frozen=True)
class Frame:
    """One captured image.

    Attributes:
        frame_id: monotonically increasing per source, starting at 0.
        timestamp_us: capture time on the sensor's monotonic clock, microseconds:
            when the image was ready, as a real camera stamps the end of exposure
            and readout (a rendered camera: when rendering finished), so that the
            capture-to-result latency counts the sensor's work and not the source's.
        image: H x W x 3 uint8 image in BGR order (OpenCV's convention).
        truth: ground truth when the source knows it (synthetic scenes), else None.
        timings_us: stages the source timed before ``timestamp_us`` (``"camera:render"``),
            microseconds; the task runner adds them to the Result's timings.
    """

    frame_id: int
    timestamp_us: int
    image: np.ndarray
    truth: Any = None
    timings_us: Mapping[str, int] = field(default_factory=dict)


class CameraSource(abc.ABC):
    """A source of frames. Backends implement :meth:`read` and :meth:`close`."""

    #: nominal frame size (width, height) in pixels
    size: tuple[int, int]

    @abc.abstractmethod
    def read(self, timeout: float) -> Frame:
        """Return the next frame.

        Raises:
            CameraError: the source failed, ended or gave no frame within ``timeout``.
        """

    @abc.abstractmethod
    def close(self) -> None:
        """Release the device or file. Idempotent."""

    def __enter__(self) -> CameraSource:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

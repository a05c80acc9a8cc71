"""Play a folder of still images as a camera."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import cv2
import numpy as np

from seedcam_firmware.camera._frames import PacedPlayback, Pacer, rotated_size
from seedcam_firmware.errors import CameraError

__all__ = ["IMAGE_SUFFIXES", "ImageFolderCamera"]

_log = logging.getLogger(__name__)

#: File suffixes (lower case) taken as images.
IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp"})


def _natural_key(path: Path) -> list[object]:
    """Sort ``frame2.png`` before ``frame10.png``."""
    return [int(p) if p.isdigit() else p.lower() for p in re.split(r"(\d+)", path.name)]


def _load(path: Path) -> np.ndarray | None:
    try:
        data = np.fromfile(path, dtype=np.uint8)
    except OSError:
        return None
    if data.size == 0:
        return None
    return cv2.imdecode(data, cv2.IMREAD_COLOR)


class ImageFolderCamera(PacedPlayback):
    """Frames from the images of one folder, in natural name order.

    An image that cannot be read is skipped with a warning (once; it is dropped
    from the playlist). Timestamps are the monotonic time each image was loaded.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        fps: float = 10.0,
        loop: bool = True,
        size: tuple[int, int] | None = None,
        rotation: int = 0,
    ) -> None:
        """List the folder and load its first readable image.

        Args:
            path: the folder (not searched recursively).
            fps: frames per second.
            loop: restart at the first image instead of raising at the end.
            size: (width, height) to resize to; None uses the first image's size.
            rotation: clockwise degrees applied after resizing (0/90/180/270).

        Raises:
            CameraError: not a folder, no images, or none readable.
            ValueError: fps <= 0 or a bad rotation.
        """
        super().__init__()
        self._folder = Path(path)
        self._what = f"image folder {self._folder}"
        if not self._folder.is_dir():
            raise CameraError(f"image folder {self._folder} does not exist")
        self._files = sorted(
            (p for p in self._folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file()),
            key=_natural_key,
        )
        if not self._files:
            raise CameraError(f"no images (.jpg, .jpeg, .png, .bmp) in folder {self._folder}")
        self._pacer = Pacer(fps)
        self._loop = loop
        self._rotation = rotation
        self._index = 0
        self._pending: np.ndarray | None = None
        first = self._next_image()
        self._pending = first  # delivered as frame 0; loading it was the open check
        self._size = size if size is not None else (first.shape[1], first.shape[0])
        self.size = rotated_size(self._size, rotation)

    def _next_image(self) -> np.ndarray:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            return pending
        while True:
            if not self._files:
                raise CameraError(f"no readable images in folder {self._folder}")
            if self._index >= len(self._files):
                if not self._loop:
                    raise CameraError(f"end of image folder {self._folder}")
                self._index = 0
            path = self._files[self._index]
            image = _load(path)
            if image is not None:
                self._index += 1
                return image
            _log.warning("skipping unreadable image %s", path)
            del self._files[self._index]

    def close(self) -> None:
        """Mark the source closed. Idempotent."""
        with self._lock:
            self._closed = True

"""One camera frame and the model inputs made from it, each made once and shared by the tasks.

Every model-backed task brings the frame to its model's input the same way
(:func:`~seedcam_firmware.inference.preprocess.crop_resize`, then
:func:`~seedcam_firmware.inference.preprocess.encode_pixels`). The task runner
wraps each frame in a :class:`PreparedFrame` and hands it to every task, so
that two tasks whose models share an input geometry share one resize, and two
whose models also take the same encoding share the tensor itself. Everything
handed out is read-only: a task cannot change what another task sees.
"""

from __future__ import annotations

import numpy as np

from .preprocess import InputSpec, PixelEncoding, crop_resize, encode_pixels

__all__ = ["PreparedFrame", "as_prepared"]

#: what the resized pixels depend on: size, crop and channel order (not the normalisation)
_Geometry = tuple[int, int, float, float, str]


def _geometry(spec: InputSpec) -> _Geometry:
    return (spec.width, spec.height, spec.crop_top, spec.crop_bottom, spec.color_order)


class PreparedFrame:
    """A BGR camera frame and, made on first request, its model inputs.

    The first task to ask for an input pays for making it: its
    ``<task>:preprocess`` timing holds the crop, resize and conversion. A later
    task asking for the same input in the same frame gets the same array at
    (almost) no cost, so its preprocess timing is near zero; the cost of a
    frame's preprocessing is the sum of those timings.

    Not thread-safe: one frame is processed on one thread.

    Args:
        image: the H x W x 3 uint8 BGR frame at full resolution (not copied; not to be changed
            while the frame is processed).
    """

    def __init__(self, image: np.ndarray) -> None:
        self._image = image
        self._pixels: dict[_Geometry, np.ndarray] = {}
        self._tensors: dict[tuple[InputSpec, PixelEncoding], np.ndarray] = {}

    @property
    def image(self) -> np.ndarray:
        """The camera frame at full resolution."""
        return self._image

    def pixels(self, spec: InputSpec) -> np.ndarray:
        """The frame cropped, resized and channel-ordered by ``spec``: ``height x width x 3`` uint8, read-only.

        Made once per frame for each geometry (size, crop, channel order) asked for.

        Raises:
            ValueError: the frame is not an H x W x 3 uint8 image.
        """
        key = _geometry(spec)
        pixels = self._pixels.get(key)
        if pixels is None:
            pixels = crop_resize(self._image, spec)
            pixels.setflags(write=False)
            self._pixels[key] = pixels
        return pixels

    def tensor(self, spec: InputSpec, encoding: PixelEncoding) -> np.ndarray:
        """The ``(1, height, width, 3)`` input tensor of a model with ``spec`` and ``encoding``, read-only.

        Made once per frame for each (spec, encoding) asked for, from :meth:`pixels`;
        bit for bit what ``encode_pixels(crop_resize(image, spec), spec, encoding)`` gives.

        Raises:
            ValueError: the frame is not an H x W x 3 uint8 image.
        """
        key = (spec, encoding)
        tensor = self._tensors.get(key)
        if tensor is None:
            tensor = encode_pixels(self.pixels(spec), spec, encoding)
            tensor.setflags(write=False)
            self._tensors[key] = tensor
        return tensor


def as_prepared(frame: PreparedFrame | np.ndarray) -> PreparedFrame:
    """``frame`` itself, or a camera image wrapped in a PreparedFrame of its own (nothing shared)."""
    return frame if isinstance(frame, PreparedFrame) else PreparedFrame(frame)

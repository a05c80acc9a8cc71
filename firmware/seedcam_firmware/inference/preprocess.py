"""Model input preprocessing, shared by training-data generation and the firmware.

Both sides call these functions with the same :class:`InputSpec` (stored in the
model manifest), so a model always sees exactly the pixels it was trained on.

A frame becomes a model input in two steps: :func:`crop_resize` (model-size
uint8 pixels, which depend only on the spec's geometry and channel order),
then :func:`encode_pixels` (those pixels in the input tensor's type). A
quantised model whose quantisation of ``(pixel - mean) / std`` is the pixel
plus a constant takes the pixels shifted by that integer, with no float
arithmetic (:func:`pixel_encoding` finds out); any other model takes the
float32 ``(pixel - mean) / std``, which the runtime quantises if it must.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import cv2
import numpy as np

__all__ = [
    "FLOAT_INPUT",
    "InputSpec",
    "PixelEncoding",
    "crop_resize",
    "crop_rows",
    "encode_pixels",
    "normalise",
    "pixel_encoding",
    "preprocess",
    "quantize",
]

#: every value a pixel channel can take
_ALL_VALUES = np.arange(256, dtype=np.uint8)


@dataclass(frozen=True)
class InputSpec:
    """How a camera frame becomes a model input.

    Steps: crop rows ``[crop_top * H, (1 - crop_bottom) * H)`` of the frame (e.g.
    drop the sky above the horizon), resize to ``width x height`` with area interpolation, reorder the
    channels from BGR to ``color_order``, then ``(pixel - mean) / std``.

    Attributes:
        width, height: model input size in pixels.
        crop_top: fraction of the frame height cut off at the top (0..1).
        crop_bottom: fraction of the frame height cut off at the bottom (0..1).
        color_order: ``"RGB"`` or ``"BGR"``.
        mean, std: normalisation, applied to 0..255 pixel values.
    """

    width: int = 128
    height: int = 64
    crop_top: float = 1.0 / 3.0
    color_order: str = "RGB"
    mean: float = 0.0
    std: float = 255.0
    crop_bottom: float = 0.0

    def __post_init__(self) -> None:
        if self.color_order not in ("RGB", "BGR"):
            raise ValueError("color_order must be 'RGB' or 'BGR'")
        if not 0.0 <= self.crop_top < 1.0 or not 0.0 <= self.crop_bottom < 1.0:
            raise ValueError("crop_top and crop_bottom must be within [0, 1)")
        if self.crop_top + self.crop_bottom >= 1.0:
            raise ValueError("crop_top + crop_bottom must leave some rows")
        if self.width <= 0 or self.height <= 0 or self.std == 0:
            raise ValueError("width, height must be > 0 and std != 0")

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """The model input shape ``(1, height, width, 3)``."""
        return (1, self.height, self.width, 3)

    def to_dict(self) -> dict[str, object]:
        """JSON-friendly form (as stored in manifests)."""
        return {
            "shape": list(self.shape),
            "crop_top": self.crop_top,
            "crop_bottom": self.crop_bottom,
            "color_order": self.color_order,
            "mean": self.mean,
            "std": self.std,
        }


def crop_rows(frame_height: int, spec: InputSpec) -> tuple[int, int]:
    """The frame rows ``[top, bottom)`` that ``spec`` keeps."""
    return round(spec.crop_top * frame_height), frame_height - round(spec.crop_bottom * frame_height)


def crop_resize(image_bgr: np.ndarray, spec: InputSpec) -> np.ndarray:
    """Crop, resize and reorder channels: returns ``height x width x 3`` uint8."""
    if image_bgr.ndim != 3 or image_bgr.shape[2] != 3 or image_bgr.dtype != np.uint8:
        raise ValueError(f"expected an H x W x 3 uint8 BGR image, got {image_bgr.shape} {image_bgr.dtype}")
    top, bottom = crop_rows(image_bgr.shape[0], spec)
    roi = image_bgr[top:bottom]
    out = cv2.resize(roi, (spec.width, spec.height), interpolation=cv2.INTER_AREA)
    if spec.color_order == "RGB":
        return cv2.cvtColor(out, cv2.COLOR_BGR2RGB)  # a channel swap, 5x faster than copying a reversed view
    return np.ascontiguousarray(out)


def normalise(pixels: np.ndarray, spec: InputSpec) -> np.ndarray:
    """``(pixels - mean) / std`` as float32 (any leading batch dims are kept)."""
    return _normalise(pixels, spec.mean, spec.std)


def _normalise(pixels: np.ndarray, mean: float, std: float) -> np.ndarray:
    return ((pixels.astype(np.float32) - np.float32(mean)) / np.float32(std)).astype(np.float32)


def quantize(x: np.ndarray, dtype: np.dtype[Any], scale: float, zero_point: int) -> np.ndarray:
    """``round(x / scale + zero_point)`` (in float32, half to even), clipped to ``dtype``'s range.

    How the runtime quantises a float input for a quantised model.
    """
    info = np.iinfo(dtype)
    q = np.round(x.astype(np.float32) / np.float32(scale) + zero_point)
    return np.clip(q, info.min, info.max).astype(dtype)


@dataclass(frozen=True)
class PixelEncoding:
    """How model-size uint8 pixels become one model's input tensor.

    Attributes:
        dtype: ``"float32"``: the input is ``(pixel - mean) / std`` (:func:`normalise`);
            ``"uint8"`` or ``"int8"``: the input is already quantised, ``pixel + offset``
            clipped to the type's range.
        offset: what is added to each pixel of a quantised input (0 for float32).
    """

    dtype: str = "float32"
    offset: int = 0

    def __post_init__(self) -> None:
        if self.dtype not in ("float32", "uint8", "int8"):
            raise ValueError(f"dtype must be float32, uint8 or int8, got {self.dtype!r}")
        if self.dtype == "float32" and self.offset:
            raise ValueError("a float32 input has no pixel offset")


#: the encoding of a float model, and of a quantised one whose quantisation is no pixel shift
FLOAT_INPUT = PixelEncoding()


def pixel_encoding(mean: float, std: float, dtype: np.dtype[Any], quantization: tuple[float, int]) -> PixelEncoding:
    """The cheapest encoding that gives a model exactly the input the float path gives it.

    The float path quantises ``x = (pixel - mean) / std`` to ``round(x / scale + zero)``
    (:func:`quantize`). When ``std * scale`` is 1 and ``zero - mean / (std * scale)``
    an integer ``k``, that is ``pixel + k`` (clipped): for a model calibrated on
    ``pixels / 255`` with a uint8 input (zero point 0), the pixels themselves;
    with an int8 input (zero point -128), ``pixel - 128``. A pixel has only 256
    values, so the shift is checked against the float path on every one of them
    and taken only when the two agree on all: it is exact by construction.

    Args:
        mean, std: the InputSpec's normalisation.
        dtype: the input tensor's type.
        quantization: the input tensor's ``(scale, zero_point)`` (scale 0: not quantised).

    Returns:
        An integer encoding when a shift gives the float path's integers, else :data:`FLOAT_INPUT`.
    """
    scale, zero = quantization
    if dtype not in (np.uint8, np.int8) or not scale:
        return FLOAT_INPUT
    shift = zero - mean / std / scale
    if not abs(shift) < 512:  # no pixel would escape the clipping (or the parameters are not finite)
        return FLOAT_INPUT
    offset = round(shift)
    info = np.iinfo(dtype)
    shifted = np.clip(_ALL_VALUES.astype(np.int32) + offset, info.min, info.max).astype(dtype)
    if not np.array_equal(shifted, quantize(_normalise(_ALL_VALUES, mean, std), dtype, scale, zero)):
        return FLOAT_INPUT
    return PixelEncoding(np.dtype(dtype).name, offset)


def encode_pixels(pixels: np.ndarray, spec: InputSpec, encoding: PixelEncoding) -> np.ndarray:
    """Model-size uint8 pixels (``height x width x 3``) to the ``(1, height, width, 3)`` input tensor.

    Pixels a model takes unchanged (uint8, offset 0) are returned as a view, not copied.
    """
    if encoding.dtype == "float32":
        return normalise(pixels, spec)[None]
    if encoding.dtype == "uint8" and encoding.offset == 0:
        return pixels[None]
    info = np.iinfo(encoding.dtype)
    shifted = pixels.astype(np.int32) + np.int32(encoding.offset)
    return np.clip(shifted, info.min, info.max).astype(encoding.dtype)[None]


class HasInput(Protocol):
    """Anything holding an :class:`InputSpec` as ``input`` (e.g. a model manifest)."""

    @property
    def input(self) -> InputSpec: ...


def preprocess(image_bgr: np.ndarray, spec: InputSpec | HasInput) -> np.ndarray:
    """A camera frame to a ``(1, height, width, 3)`` float32 model input.

    Args:
        image_bgr: H x W x 3 uint8 BGR frame.
        spec: an :class:`InputSpec`, or anything with an ``input`` attribute holding
            one (e.g. a :class:`~seedcam_firmware.inference.manifest.ModelManifest`).
    """
    ispec = spec if isinstance(spec, InputSpec) else spec.input
    return normalise(crop_resize(image_bgr, ispec), ispec)[None]

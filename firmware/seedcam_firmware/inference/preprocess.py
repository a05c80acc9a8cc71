"""Model input preprocessing, shared by training-data generation and the firmware.

Both sides call these functions with the same :class:`InputSpec` (stored in the
model manifest), so a model always sees exactly the pixels it was trained on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import cv2
import numpy as np

__all__ = ["InputSpec", "crop_resize", "crop_rows", "normalise", "preprocess"]


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
        out = out[:, :, ::-1]
    return np.ascontiguousarray(out)


def normalise(pixels: np.ndarray, spec: InputSpec) -> np.ndarray:
    """``(pixels - mean) / std`` as float32 (any leading batch dims are kept)."""
    return ((pixels.astype(np.float32) - np.float32(spec.mean)) / np.float32(spec.std)).astype(np.float32)


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

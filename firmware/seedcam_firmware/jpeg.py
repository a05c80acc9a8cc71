"""JPEGs for the link: one encode and one piece size for snapshots, the preview stream and the black box.

A JPEG (or a piece of one, or of a black-box file) goes out inside a protobuf message in one
link frame: it may hold the frame's payload less :data:`JPEG_HEADROOM`. On a line with a rate
(a UART, ``?throttle=``) a piece is also kept short enough to hold the line only briefly, so a
result waits no longer than that behind it (:func:`piece_size`).
"""

from __future__ import annotations

import cv2
import numpy as np

from seedcam._proto import seedcam_pb2 as pb
from seedcam_firmware.rpc import RequestFailed

__all__ = ["JPEG_HEADROOM", "encode_jpeg", "piece_size", "scale_to_width", "scaled_size"]

#: protobuf fields and link framing around a JPEG (or a piece of one) in one link frame
JPEG_HEADROOM = 512
_MIN_PIECE = 128  # on the slowest lines: fewer, longer pieces rather than mostly overhead
_MIN_FRAME_PIECE = 256


def scaled_size(width: int, height: int, max_width: int) -> tuple[int, int]:
    """(width, height) scaled down to ``max_width``, aspect kept (as :func:`scale_to_width` scales)."""
    if width <= max_width:
        return width, height
    return max_width, max(1, round(height * max_width / width))


def scale_to_width(image: np.ndarray, max_width: int) -> np.ndarray:
    """The image scaled down to ``max_width`` (aspect kept); the image itself when it is no wider."""
    height, width = image.shape[:2]
    size = scaled_size(width, height, max_width)
    if size == (width, height):
        return image
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA)


def encode_jpeg(image: np.ndarray, quality: int, max_width: int | None = None) -> tuple[bytes, int, int]:
    """The image, scaled down to ``max_width`` (aspect kept; None: as it is), as a JPEG: (jpeg, width, height).

    Raises:
        RequestFailed: ``INTERNAL`` when OpenCV cannot encode it.
    """
    if max_width is not None:
        image = scale_to_width(image, max_width)
    ok, encoded = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise RequestFailed(pb.STATUS_INTERNAL, "JPEG encoding failed")
    height, width = image.shape[:2]
    return encoded.tobytes(), width, height


def piece_size(max_frame_size: int, line_rate_bps: int | None, hold_s: float) -> int:
    """The most JPEG bytes one link frame of ``max_frame_size`` carries beside :data:`JPEG_HEADROOM`.

    On a line with a rate (``line_rate_bps``, 8N1; None: a fast link) also no more than holds
    the line ``hold_s``, and 128 at least.
    """
    limit = max(_MIN_FRAME_PIECE, max_frame_size - JPEG_HEADROOM)
    if line_rate_bps is None:
        return limit
    return min(limit, max(_MIN_PIECE, int(line_rate_bps / 10 * hold_s)))

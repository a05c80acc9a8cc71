"""Image files: header-only sizes, decoding (``cv2.imread``) and PNG encoding."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import BinaryIO

import cv2
import numpy as np

from ._common import DatasetFormatError

#: JPEG start-of-frame markers (all but DHT 0xC4, JPG 0xC8 and DAC 0xCC)
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def load_image(path: Path) -> np.ndarray:
    """Decode an image file.

    Args:
        path: the image file.

    Returns:
        H x W x 3 uint8 BGR pixels (EXIF orientation applied, as ``cv2.imread`` does).

    Raises:
        DatasetFormatError: the file is missing or not a readable image.
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetFormatError(f"{path}: image file not found")
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise DatasetFormatError(f"{path}: not a readable image")
    return image


def image_size(path: Path) -> tuple[int, int]:
    """Width and height of an image, read from its header (no pixel decoding for PNG, JPEG, BMP).

    JPEG EXIF orientations 5..8 swap the two, to match what :func:`load_image` returns.

    Raises:
        DatasetFormatError: the file is missing or not a readable image.
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetFormatError(f"{path}: image file not found")
    size: tuple[int, int] | None = None
    try:
        with open(path, "rb") as f:
            head = f.read(32)
            if head.startswith(b"\x89PNG\r\n\x1a\n") and head[12:16] == b"IHDR":
                size = struct.unpack(">II", head[16:24])
            elif head.startswith(b"BM") and len(head) >= 26:
                (dib,) = struct.unpack("<I", head[14:18])
                if dib == 12:
                    size = struct.unpack("<HH", head[18:22])
                else:
                    w, h = struct.unpack("<ii", head[18:26])
                    size = (w, abs(h))
            elif head.startswith(b"\xff\xd8"):
                f.seek(2)
                size = _jpeg_size(f)
    except (OSError, struct.error) as e:
        raise DatasetFormatError(f"{path}: cannot read image header: {e}") from e
    if size is None or min(size) <= 0:
        pixels = load_image(path)  # another format, or an odd header: decode it once
        return int(pixels.shape[1]), int(pixels.shape[0])
    return int(size[0]), int(size[1])


def _jpeg_size(f: BinaryIO) -> tuple[int, int] | None:
    orientation = 1
    while True:
        byte = f.read(1)
        if not byte:
            return None
        if byte != b"\xff":
            continue
        marker = f.read(1)
        while marker == b"\xff":
            marker = f.read(1)
        if not marker:
            return None
        m = marker[0]
        if m == 0x01 or 0xD0 <= m <= 0xD8:
            continue
        if m in (0xD9, 0xDA):
            return None
        raw = f.read(2)
        if len(raw) < 2:
            return None
        (length,) = struct.unpack(">H", raw)
        if length < 2:
            return None
        if m in _JPEG_SOF:
            data = f.read(5)
            if len(data) < 5:
                return None
            h, w = struct.unpack(">HH", data[1:5])
            return (h, w) if orientation >= 5 else (w, h)
        if m == 0xE1:
            orientation = _exif_orientation(f.read(length - 2)) or orientation
        else:
            f.seek(length - 2, os.SEEK_CUR)


def _exif_orientation(data: bytes) -> int | None:
    if not data.startswith(b"Exif\x00\x00"):
        return None
    tiff = data[6:]
    order = {b"II": "<", b"MM": ">"}.get(tiff[:2])
    if order is None:
        return None
    try:
        (ifd,) = struct.unpack(order + "I", tiff[4:8])
        (count,) = struct.unpack(order + "H", tiff[ifd : ifd + 2])
        for i in range(count):
            at = ifd + 2 + 12 * i
            tag, kind = struct.unpack(order + "HH", tiff[at : at + 4])
            if tag == 0x0112 and kind == 3:
                (value,) = struct.unpack(order + "H", tiff[at + 8 : at + 10])
                return value if 1 <= value <= 8 else None
    except struct.error:
        return None
    return None


def sized(image: Path, *, where: str) -> tuple[int, int]:
    """:func:`image_size`, with ``where`` (file:line) prefixed to any error."""
    try:
        return image_size(image)
    except DatasetFormatError as e:
        raise DatasetFormatError(f"{where}: {e}") from None


def encode_png(image: object, *, where: str) -> tuple[bytes, int, int]:
    """PNG bytes, width and height of an H x W x 3 (or H x W) uint8 image.

    Raises:
        DatasetFormatError: not a non-empty uint8 image array.
    """
    a = np.asarray(image)
    if a.dtype != np.uint8 or not (a.ndim == 2 or (a.ndim == 3 and a.shape[2] == 3)) or 0 in a.shape:
        raise DatasetFormatError(f"{where}: image must be an H x W x 3 uint8 BGR array, got {a.dtype} {a.shape}")
    ok, buf = cv2.imencode(".png", a)
    if not ok:
        raise DatasetFormatError(f"{where}: PNG encoding failed")
    return buf.tobytes(), int(a.shape[1]), int(a.shape[0])

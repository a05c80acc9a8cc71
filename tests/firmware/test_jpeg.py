"""The one JPEG encode and piece size that snapshots, the preview stream and the black box share."""

from __future__ import annotations

import cv2
import numpy as np

from seedcam_firmware.jpeg import JPEG_HEADROOM, encode_jpeg, piece_size


def test_a_piece_holds_the_line_its_time_and_always_fits_a_frame() -> None:
    assert piece_size(65536, 115_200, 0.03) == 345  # 30 ms of a 115200-baud line (8N1)
    assert piece_size(65536, 115_200, 0.02) == 230
    assert piece_size(65536, 9600, 0.02) == 128  # not less, however slow the line
    assert piece_size(65536, None, 0.02) == 65536 - JPEG_HEADROOM  # a fast link: what fits one frame
    assert piece_size(4096, 3_000_000, 0.03) == 4096 - JPEG_HEADROOM


def test_the_encode_scales_down_to_the_width_keeping_the_aspect() -> None:
    image = np.random.default_rng(0).integers(0, 255, (480, 640, 3), dtype=np.uint8)
    jpeg, width, height = encode_jpeg(image, 80, 320)
    decoded = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert (width, height) == (320, 240) and decoded.shape == (240, 320, 3)
    assert encode_jpeg(image, 80, 1024)[1:] == (640, 480)  # never scaled up
    assert encode_jpeg(image, 80)[1:] == (640, 480)

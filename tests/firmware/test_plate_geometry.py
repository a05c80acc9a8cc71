"""The plate search's small helpers agree with the numpy functions they stand in for."""

from __future__ import annotations

import numpy as np
import pytest

from seedcam_firmware.inference.plate import _order_corners, _percentile


@pytest.mark.parametrize("seed", range(4))
def test_percentile_of_pixels_is_numpys(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(300):
        h, w = (int(v) for v in rng.integers(1, 30, 2))
        pixels = rng.integers(0, 256, (h, w)).astype(np.uint8)
        if rng.random() < 0.5:
            pixels = pixels // 32 * 32  # few distinct values: ranks fall inside runs of equal pixels
        view = pixels[:, ::2] if w > 1 else pixels  # a strided slice, as the search region is
        q = float(rng.choice([0.0, 10.0, 50.0, 90.0, 100.0]))
        assert _percentile(view, q) == float(np.percentile(view, q))


def test_order_corners_starts_top_left_and_runs_clockwise() -> None:
    corners = np.array([[10.0, 20.0], [50.0, 22.0], [52.0, 40.0], [8.0, 38.0]])  # TL, TR, BR, BL
    for shift in range(4):
        shuffled = np.roll(corners, shift, axis=0)[[0, 2, 1, 3]]
        assert _order_corners(shuffled).tolist() == corners.tolist()

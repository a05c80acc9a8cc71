"""Box overlap: the firmware's vectorised IoU and the SDK's ``Box.iou`` agree with worked examples and each other."""

from __future__ import annotations

import numpy as np
import pytest

from seedcam.types import Box
from seedcam_firmware.inference.boxes import box_iou, iou_matrix

# (a, b, IoU worked out by hand)
CASES = [
    ((0, 0, 2, 2), (0, 0, 2, 2), 1.0),
    ((0, 0, 2, 2), (1, 0, 3, 2), 2 / 6),  # half of each: intersection 2, union 4 + 4 - 2
    ((0, 0, 2, 2), (1, 1, 2, 2), 1 / 4),  # a 1x1 box inside a 2x2 one
    ((0, 0, 1, 1), (1, 0, 2, 1), 0.0),  # touching edges
    ((0, 0, 1, 1), (3, 3, 4, 4), 0.0),
    ((0, 0, 0, 0), (0, 0, 0, 0), 0.0),  # empty union: 0, not NaN
    ((2, 2, 1, 1), (0, 0, 3, 3), 0.0),  # an inverted box has no area
]


@pytest.mark.parametrize(("a", "b", "expected"), CASES)
def test_iou_of_worked_examples(a: tuple[float, ...], b: tuple[float, ...], expected: float) -> None:
    assert box_iou(a, b) == pytest.approx(expected)
    assert box_iou(b, a) == pytest.approx(expected)
    assert Box(*a).iou(Box(*b)) == pytest.approx(expected)


def test_iou_matrix_is_every_pair_and_matches_box_iou() -> None:
    rng = np.random.default_rng(3)
    corners = rng.uniform(0, 1, (12, 2, 2))
    boxes = np.concatenate([corners.min(axis=1), corners.max(axis=1)], axis=1)  # two random points: x0 y0 x1 y1
    m = iou_matrix(boxes[:5], boxes)
    assert m.shape == (5, 12)
    np.testing.assert_allclose(np.diag(m[:, :5]), 1.0)
    for i in range(5):
        for j in range(12):
            assert m[i, j] == pytest.approx(Box(*boxes[i]).iou(Box(*boxes[j])))
            assert m[i, j] == box_iou(boxes[i], boxes[j])  # the same operations: equal, not close
    assert np.all((m >= 0) & (m <= 1))

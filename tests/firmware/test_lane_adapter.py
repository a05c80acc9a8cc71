"""Lane adapter on hand-built tensors."""

from __future__ import annotations

import numpy as np
import pytest

from seedcam_firmware.inference.lane import REFERENCE, decode_lane

DECODER = {
    "state_centre": [0.0, 0.0, 0.0, 0.45],
    "state_scale": [0.15, 0.30, 1.0, 0.05],
    "presence_threshold": 0.5,
}


class _Manifest:
    decoder = DECODER


def _out(state: list[float], presence: list[float]) -> dict[str, np.ndarray]:
    return {
        "lane_state": np.asarray([state], np.float32),
        "presence": np.asarray([presence], np.float32),
        "mask": np.zeros((1, 16, 32, 2), np.float32),
    }


def test_denormalises_state_with_manifest_scales() -> None:
    est = decode_lane(_out([0.5, -0.5, 0.2, 1.0], [6.0, 6.0]), _Manifest())
    assert est.status == "ok"
    assert est.offset_m == pytest.approx(0.075)
    assert est.heading_rad == pytest.approx(-0.15)
    assert est.curvature_per_m == pytest.approx(0.2)
    assert est.lane_width_m == pytest.approx(0.50)
    assert est.reference == REFERENCE
    assert 0.99 < est.heading_confidence <= 1.0
    assert est.curvature_confidence < est.offset_confidence <= 1.0


def test_decoder_dict_is_accepted_and_scales_matter() -> None:
    other = dict(DECODER, state_scale=[0.3, 0.30, 1.0, 0.05])
    assert decode_lane(_out([0.5, 0, 0, 0], [6, 6]), other).offset_m == pytest.approx(0.15)


@pytest.mark.parametrize(
    ("presence", "status"),
    [([6.0, 6.0], "ok"), ([6.0, -6.0], "one_line"), ([-6.0, 6.0], "one_line"), ([-6.0, -6.0], "lost")],
)
def test_status_from_presence(presence: list[float], status: str) -> None:
    assert decode_lane(_out([0, 0, 0, 0], presence), DECODER).status == status


def test_confidences_fall_with_presence_curvature_fastest() -> None:
    both = decode_lane(_out([0, 0, 0, 0], [4.0, 4.0]), DECODER)
    one = decode_lane(_out([0, 0, 0, 0], [4.0, -4.0]), DECODER)
    lost = decode_lane(_out([0, 0, 0, 0], [-4.0, -4.0]), DECODER)
    assert both.offset_confidence > one.offset_confidence > lost.offset_confidence
    assert one.heading_confidence > 0.9  # one line still fixes the heading
    assert 0.4 < one.offset_confidence < 0.6
    assert one.curvature_confidence < 0.05 and lost.curvature_confidence < 0.01
    for e in (both, one, lost):
        for c in (e.offset_confidence, e.heading_confidence, e.curvature_confidence):
            assert 0.0 <= c <= 1.0


def test_extreme_logits_do_not_overflow() -> None:
    est = decode_lane(_out([0, 0, 0, 0], [1e6, -1e6]), DECODER)
    assert est.left_presence == pytest.approx(1.0) and est.right_presence == pytest.approx(0.0)


def test_missing_or_malformed_outputs() -> None:
    with pytest.raises(ValueError, match="presence"):
        decode_lane({"lane_state": np.zeros((1, 4))}, DECODER)
    with pytest.raises(ValueError):
        decode_lane({"lane_state": np.zeros((1, 3)), "presence": np.zeros((1, 2))}, DECODER)

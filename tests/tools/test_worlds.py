"""The shipped bundles on scenes they were not tuned on: the independent world and our randomized one.

Block 1 of each world's held-out frames (``metrics.json`` records block 0). The floors are
what the shipped models reach with a margin for 200-frame noise; they guard against a
regression. They are not the issue's targets (other world: detector mAP >= 0.85, OCR >= 90 %
given the box, lane offset <= 1.2 cm / heading <= 1.5 deg / status >= 95 %), which the models
do not reach yet: see models/REPORT.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from seedcam_tools.frame_eval import detector_on_frames, lane_on_frames, ocr_on_frames
from seedcam_tools.frames import heldout_frames

MODELS = Path(__file__).resolve().parents[2] / "models"
BLOCK = 1
FRAMES = 200

pytestmark = pytest.mark.slow

#: floors per world on block 1 (INT8); see the module docstring
DETECT_FLOOR = {"other": {"map50": 0.55, "false_positives_per_frame": 0.3}, "random": {"map50": 0.67}}
OCR_FLOOR = {"other": 0.30, "random": 0.45}  # exact text given the box, plates >= 44 px
LANE_FLOOR = {"other": {"offset_mae_m": 0.025, "heading_mae_deg": 5.0, "status_accuracy": 0.85}}


@pytest.mark.parametrize("world", sorted(DETECT_FLOOR))
def test_detector_on_a_world_it_was_not_tuned_on(world: str) -> None:
    r = detector_on_frames(MODELS / "detect", heldout_frames(world, BLOCK, FRAMES))
    floor = DETECT_FLOOR[world]
    assert r["objects"] > 150
    assert r["map50"] >= floor["map50"], r
    if "false_positives_per_frame" in floor:
        assert r["at_threshold"]["false_positives_per_frame"] <= floor["false_positives_per_frame"], r


@pytest.mark.parametrize("world", sorted(OCR_FLOOR))
def test_ocr_on_a_world_it_was_not_tuned_on(world: str) -> None:
    frames = heldout_frames(world, BLOCK, FRAMES if world == "other" else 120, plate_focus=world == "random")
    r = ocr_on_frames(MODELS / "ocr", frames)["given_box"]
    assert r["plates"] >= 20
    assert r["line_accuracy"] >= OCR_FLOOR[world], r
    by_width = r["breakdown"]["by_width_px"]  # every plate in one width bin, the bins' accuracy the whole's
    assert sum(b["plates"] for b in by_width) == r["plates"]
    right = sum(b["plates"] * b["line_accuracy"] for b in by_width if b["plates"])
    assert right == pytest.approx(r["line_accuracy"] * r["plates"])


def test_lane_on_the_independent_world() -> None:
    r = lane_on_frames(MODELS / "lane", heldout_frames("other", BLOCK, FRAMES))
    floor = LANE_FLOOR["other"]
    assert r["offset_mae_m"] <= floor["offset_mae_m"], r
    assert r["heading_mae_deg"] <= floor["heading_mae_deg"], r
    assert r["status_accuracy"] >= floor["status_accuracy"], r

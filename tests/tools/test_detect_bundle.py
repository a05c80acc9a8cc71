"""The shipped detector bundle: accuracy on fresh held-out scenes and its recorded export checks.

The acceptance bars are mAP@0.5 >= 0.95 (float32) and >= 0.94 (int8). metrics.json
records them on held-out block 0 (1000 scenes); these tests check them again on a
block that metrics.json did not use.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seedcam_tools.detect.data import LABELS
from seedcam_tools.detect.evaluate import evaluate_detector, heldout_block
from seedcam_tools.detect.ship import ACCEPTANCE
from seedcam_tools.export import FLOAT_CONVERSION_TOLERANCE

BUNDLE = Path(__file__).resolve().parents[2] / "models" / "detect"


@pytest.fixture(scope="module")
def heldout():  # noqa: ANN201
    return heldout_block(200, seed=3)  # seed block 0 made metrics.json


@pytest.mark.parametrize("precision", ["int8", "float32"])
def test_shipped_detector_on_fresh_heldout_scenes(precision: str, heldout) -> None:  # noqa: ANN001
    r = evaluate_detector(BUNDLE, precision=precision, seed=3, data=heldout)
    assert r["objects"] > 250
    assert r["map50"] >= ACCEPTANCE[precision], r
    for label in LABELS:
        assert r["ap50_per_class"][label] >= 0.93, (label, r)


def test_metrics_record_the_conversion_check_and_heldout_seeds() -> None:
    m = json.loads((BUNDLE / "metrics.json").read_text())
    assert m["export"]["float_conversion_inputs"] == 100
    assert m["export"]["float_conversion_max_rel_diff"] <= FLOAT_CONVERSION_TOLERANCE
    assert m["heldout"]["seed_base"] == 10_000_000
    assert abs(m["summary"]["int8"] - m["summary"]["float32"]) < 0.01  # INT8 costs almost nothing

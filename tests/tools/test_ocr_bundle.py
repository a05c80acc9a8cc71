"""The shipped OCR bundle (models/ocr): contract, self-test, and accuracy on fresh held-out crops."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from seedcam_firmware.inference.manifest import load_manifest
from seedcam_firmware.inference.runtime import Model
from seedcam_tools.export import FLOAT_CONVERSION_TOLERANCE
from seedcam_tools.ocr.data import ALPHABET, HELDOUT_SEED_BASE
from seedcam_tools.ocr.evaluate import evaluate_ocr
from seedcam_tools.ocr.ship import MIN_PLATE_WIDTH_PX

BUNDLE = Path(__file__).resolve().parents[2] / "models" / "ocr"
#: held-out seed block for this test: 11_000_000.. (metrics.json uses block 0, 10_000_000..)
TEST_SEED_BLOCK = 1


def test_shipped_int8_model_reads_heldout_plates() -> None:
    # the acceptance look: plates 0.28-0.55 m (see ocr.evaluate.ACCEPTANCE_LOOK)
    r = evaluate_ocr(BUNDLE / "ocr_int8.tflite", seed=TEST_SEED_BLOCK, samples=300)
    assert r["seed_base"] == HELDOUT_SEED_BASE + 1_000_000 and r["look"]["max_forward_m"] == 0.55
    assert r["samples"] == 300
    assert r["line_accuracy"] >= 0.97, r["errors"]
    assert r["cer"] <= 0.01


@pytest.mark.parametrize("precision", ["int8", "float32"])
def test_shipped_bundle_contract_and_self_test(precision: str) -> None:
    m = load_manifest(BUNDLE, precision=precision)  # validates and checks the sha256
    assert m.id == "ocr-v4" and m.task == "ocr"
    decoder = dict(m.decoder)
    calibration = decoder.pop("confidence_calibration")
    assert calibration["method"] == "platt_log" and calibration["a"] > 0  # fitted on validation crops
    assert decoder == {
        "type": "ctc",
        "alphabet": ALPHABET,
        "blank_index": 37,
        "time_steps": 32,
        "min_plate_width_px": MIN_PLATE_WIDTH_PX,
    }
    assert m.input_shape == (1, 32, 128, 3) and m.outputs == {"probs": (1, 32, 38)}
    assert m.input.crop_top == 0.0 and m.input.color_order == "RGB" and m.input.std == 255.0
    assert m.golden_input is not None and m.golden_output is not None
    out = Model(m.file, input_shape=m.input_shape, outputs=m.outputs, num_threads=1).invoke(np.load(m.golden_input))
    np.testing.assert_allclose(out["probs"], np.load(m.golden_output)["probs"], atol=1e-6)


def test_shipped_metrics_record_the_export_check_and_heldout_accuracy() -> None:
    m = json.loads((BUNDLE / "metrics.json").read_text())
    assert m["export"]["float_conversion_max_rel_diff"] <= FLOAT_CONVERSION_TOLERANCE
    assert m["export"]["float_conversion_inputs"] >= 100
    assert m["heldout"]["seed_base"] == HELDOUT_SEED_BASE and m["heldout"]["eval_seed"] != TEST_SEED_BLOCK
    for precision in ("float32", "int8"):
        assert m["heldout"][precision]["samples"] >= 1000
        assert m["summary"][precision] == m["heldout"][precision]["line_accuracy"]
    assert m["summary"]["int8"] >= 0.97 and m["acceptance"]["passes"]
    # farther and blurrier plates are measured and recorded too, not hidden
    for key in ("heldout_full_range", "heldout_full_blur"):
        assert m[key]["look"]["max_forward_m"] == 0.7 and m[key]["int8"]["samples"] >= 500
    assert m["training"]["samples"] < 5_000_000 and "train-ocr" in m["training"]["command"]
    assert m["speed"]["int8_speedup"] > 0

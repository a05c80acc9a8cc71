"""Lane model: shipped accuracy on held-out scenes, and a tiny train -> export smoke run."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from seedcam_tools.export import FLOAT_CONVERSION_TOLERANCE
from seedcam_tools.lane.data import (
    HELDOUT_SEED_BASE,
    LANE_INPUT,
    decode_targets,
    encode_targets,
    generate,
)
from seedcam_tools.lane.evaluate import evaluate_lane
from seedcam_tools.lane.train import VAL_SEED_BASE, train_lane

BUNDLE = Path(__file__).resolve().parents[2] / "models" / "lane"


@pytest.mark.parametrize("name", ["lane_int8.tflite", "lane_f32.tflite"])
def test_shipped_model_meets_acceptance_on_heldout_scenes(name: str) -> None:
    # held-out seed 1 is a different slice of held-out scenes than metrics.json's (seed 0)
    r = evaluate_lane(BUNDLE / name, seed=1, samples=150)
    assert r["ok_samples"] > 100
    assert r["offset_mae_m"] <= 0.015
    assert r["heading_mae_deg"] <= 1.5
    assert r["status_accuracy"] >= 0.9
    # one line in view (a worn or out-of-view line): the offset comes from one line and the lane width
    assert r["one_line_samples"] >= 10 and r["one_line_offset_mae_m"] <= 0.03
    assert r["invoke_ms_median"] < 20.0


def test_metrics_json_records_export_check_and_acceptance() -> None:
    m = json.loads((BUNDLE / "metrics.json").read_text())
    assert m["export"]["float_conversion_max_rel_diff"] <= FLOAT_CONVERSION_TOLERANCE
    assert m["export"]["float_conversion_inputs"] >= 100
    for prec in ("float32", "int8"):
        assert m["heldout"][prec]["passes_acceptance"]
    # lane-v3 is 1.77 M parameters; its INT8 file still goes over a 115200-baud UART in under 3 minutes
    assert m["model_params"] < 2_000_000
    assert m["export"]["size_bytes"]["int8"] < 2_000_000


def test_seed_ranges_are_disjoint() -> None:
    assert VAL_SEED_BASE < HELDOUT_SEED_BASE
    with pytest.raises(ValueError):
        train_lane(Path("/nonexistent"), samples=VAL_SEED_BASE + 1)
    with pytest.raises(ValueError, match="validation seeds"):  # a continued round's fresh scenes stay below them
        train_lane(Path("/nonexistent"), samples=20, first_scene=VAL_SEED_BASE - 10)


def test_targets_round_trip_and_data_is_deterministic() -> None:
    y = np.array([[0.1, -0.2, 0.5, 0.42]], np.float32)
    np.testing.assert_allclose(decode_targets(encode_targets(y)), y, atol=1e-6)
    a, b = generate(3, 4, workers=1), generate(3, 4, workers=1)
    np.testing.assert_array_equal(a.x, b.x)
    assert a.x.shape == (4, LANE_INPUT.height, LANE_INPUT.width, 3) and a.x.dtype == np.uint8
    assert a.mask.shape == (4, 16, 32, 2)
    np.testing.assert_array_equal(a.seeds, [3, 4, 5, 6])


def test_the_lane_state_loss_weighs_scenes_by_the_lines_in_view() -> None:
    """No line: no lane-state loss; one line: the --one-line-weight; both lines: 1."""
    from seedcam_tools.lane.train import _targets

    data = generate(3, 3, workers=1)
    data.present = np.array([[0, 0], [1, 0], [1, 1]], np.float32)
    for w in (1.0, 3.0):
        np.testing.assert_array_equal(_targets(data, w)["lane_state"][:, 4], [0.0, w, 1.0])


def test_tiny_training_and_float_export_match_keras(tmp_path: Path) -> None:
    from seedcam_tools.export import check_float_conversion, to_tflite
    from seedcam_tools.lane.ship import LANE_OUTPUTS
    from seedcam_tools.lane.train import train_on_data

    data = generate(0, 96, workers=1)
    model, hist = train_on_data(data, None, seed=0, epochs=1, batch_size=32)
    assert all(math.isfinite(v) for v in hist["loss"])
    path = tmp_path / "tiny.tflite"
    io = {"input_spec": LANE_INPUT, "outputs": LANE_OUTPUTS}
    to_tflite(model, path, int8=False, **io)
    assert check_float_conversion(model, path, data.x[:100], **io) <= 1e-5
    from seedcam_firmware.inference.runtime import Model

    m = Model(path, input_shape=LANE_INPUT.shape, outputs=LANE_OUTPUTS)
    assert set(m.output_details) == set(LANE_OUTPUTS)


def test_wider_and_deeper_networks_keep_the_outputs() -> None:
    from seedcam_tools.lane.model import build_lane_model

    v2 = build_lane_model()
    bigger = build_lane_model(width_mult=2.0, blocks=2)
    assert v2.count_params() == 251_864  # lane-v2's network, as shipped
    assert bigger.count_params() > 5 * v2.count_params()
    assert {k: tuple(t.shape) for k, t in bigger.output.items()} == {k: tuple(t.shape) for k, t in v2.output.items()}
    with pytest.raises(ValueError, match="blocks"):
        build_lane_model(blocks=-1)


def test_the_shipped_lane_tflite_becomes_the_same_trainable_keras_model() -> None:
    """``train-lane --init-from lane_f32.tflite``: a fresh machine continues the shipped model, in
    inference and in training mode."""
    from seedcam_firmware.inference.preprocess import normalise
    from seedcam_firmware.inference.runtime import Model
    from seedcam_tools.lane.model import build_lane_model
    from seedcam_tools.tflite_weights import TfliteWeightsError, load_tflite_weights

    shipped = BUNDLE / "lane_f32.tflite"
    x = normalise(generate(0, 24, workers=1, random_fraction=0.5).x, LANE_INPUT)  # training scenes
    model = build_lane_model(width_mult=2.0, blocks=2)
    load_tflite_weights(model, shipped, x)
    ours = model.predict(x[:3], verbose=0)
    tflite = Model(shipped, num_threads=1)
    for i in range(3):
        reference = tflite.invoke(x[i : i + 1])
        for name in ("mask", "lane_state", "presence"):
            np.testing.assert_allclose(ours[name][i], reference[name][0], atol=1e-4)
    # a training step normalises by the batch's statistics: on the calibration frames as one batch they
    # are the ones every BN was set from, so training starts from the shipped function too
    inference = model(x, training=False)
    training = model(x, training=True)
    for name in ("mask", "lane_state", "presence"):
        np.testing.assert_allclose(np.asarray(training[name]), np.asarray(inference[name]), atol=2e-3)
    with pytest.raises(TfliteWeightsError, match="not the same architecture"):
        load_tflite_weights(build_lane_model(width_mult=1.0), shipped, x)

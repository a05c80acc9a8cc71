"""Widening a trained network (Net2WiderNet): the wider copy computes the narrow one's function until trained."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from seedcam_tools.widen import WidenError, widen

MODELS = Path(__file__).resolve().parents[2] / "models"


def _lane(width: float) -> Any:
    from seedcam_tools.lane.model import build_lane_model

    return build_lane_model(width_mult=width, blocks=1)


def _ocr(width: float) -> Any:
    from seedcam_tools.ocr.model import build_ocr_model

    return build_ocr_model(width, context_blocks=4, residual_blocks=1)


def _detector(width: float) -> Any:
    from seedcam_tools.detect.model import build_detector

    return build_detector(width=width, blocks=1)


def _trained_looking(model: Any, seed: int) -> Any:
    """Batch norms that are not the identity (and residual branches that are not zero), so a lost weight shows."""
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if type(layer).__name__ == "BatchNormalization":
            gamma, beta, mean, var = layer.get_weights()
            layer.set_weights(
                [rng.uniform(0.5, 1.5, gamma.shape), rng.normal(0, 0.2, beta.shape), rng.normal(0, 0.2, mean.shape),
                 rng.uniform(0.5, 2.0, var.shape)]
            )  # fmt: skip
    return model


def _inputs(model: Any, n: int = 3) -> np.ndarray:
    return np.random.default_rng(1).random((n, *model.input.shape[1:])).astype(np.float32)


def _max_relative_difference(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> float:
    return max(float(np.abs(a[k] - b[k]).max() / np.abs(a[k]).max()) for k in a)


@pytest.mark.parametrize(
    ("build", "narrow_width", "wide_width"),
    [(_lane, 1.0, 1.5), (_ocr, 1.0, 1.5), (_detector, 1.0, 1.5)],
    ids=["lane", "ocr", "detector"],
)
def test_a_widened_network_computes_the_narrow_ones_function(
    build: Callable[[float], Any], narrow_width: float, wide_width: float
) -> None:
    """Convolutions, batch norms, dense layers after a flatten, residual adds, top-down paths and heads."""
    narrow = _trained_looking(build(narrow_width), seed=0)
    wide = build(wide_width)
    x = _inputs(narrow)
    before = wide.predict(x, verbose=0)
    widen(narrow, wide, noise=0.0)
    assert wide.count_params() > 1.5 * narrow.count_params()
    expected = narrow.predict(x, verbose=0)
    assert _max_relative_difference(expected, before) > 0.01  # a fresh wide network computes something else
    assert _max_relative_difference(expected, wide.predict(x, verbose=0)) < 1e-5


def test_noise_perturbs_only_the_added_copies_and_the_function_little() -> None:
    narrow = _trained_looking(_lane(1.0), seed=0)
    wide = _lane(1.5)
    widen(narrow, wide, noise=0.01, seed=3)
    x = _inputs(narrow)
    assert 1e-5 < _max_relative_difference(narrow.predict(x, verbose=0), wide.predict(x, verbose=0)) < 0.05
    # the first convolution reads the image (no split): its narrow channels are the narrow kernel, its copies are not
    old, new = narrow.get_layer("s1_conv").get_weights()[0], wide.get_layer("s1_conv").get_weights()[0]
    kept = old.shape[-1]
    np.testing.assert_array_equal(new[..., :kept], old)
    copies = new[..., kept:]
    nearest = np.abs(copies[..., :, None] - old[..., None, :]).max(axis=(0, 1, 2)).min(axis=1)
    assert np.all(nearest > 0) and np.all(nearest < 0.1 * np.abs(old).max())  # each a near copy of one channel


def test_copies_are_chosen_alike_for_tensors_a_residual_add_sums() -> None:
    """Two tensors of the same widths hold the same copies, whatever the seed; another seed chooses others."""
    narrow = _trained_looking(_ocr(1.0), seed=2)
    x = _inputs(narrow)
    results = []
    for seed in (0, 1):
        wide = _ocr(1.5)
        widen(narrow, wide, noise=0.0, seed=seed)
        results.append(wide.get_layer("fold_conv").get_weights()[0])
        assert _max_relative_difference(narrow.predict(x, verbose=0), wide.predict(x, verbose=0)) < 1e-5
    assert not np.array_equal(*results)


def test_widening_refuses_what_is_not_a_wider_copy() -> None:
    with pytest.raises(WidenError, match="narrows"):
        widen(_lane(1.5), _lane(1.0))
    with pytest.raises(WidenError, match="layers in the narrow network"):
        widen(_ocr(1.0), _lane(1.5))
    from seedcam_tools.lane.model import build_lane_model

    with pytest.raises(WidenError, match="layers in the narrow network"):
        widen(_lane(1.0), build_lane_model(width_mult=1.5, blocks=2))

    import keras

    def softmax_head(units: int) -> Any:
        image = keras.Input((4,))
        return keras.Model(image, keras.layers.Softmax()(keras.layers.Dense(units)(image)))

    with pytest.raises(WidenError, match="softmax over widened channels"):
        widen(softmax_head(8), softmax_head(12))


def test_the_shipped_reader_widens_from_its_float_file() -> None:
    """``train-ocr --init-from ocr_f32.tflite --init-width-mult 1.5 --width-mult 2`` reads as the shipped file does."""
    from seedcam_firmware.inference.preprocess import normalise
    from seedcam_firmware.inference.runtime import Model
    from seedcam_tools.ocr.data import OCR_INPUT, generate
    from seedcam_tools.ocr.model import ocr_from_tflite

    shipped = MODELS / "ocr" / "ocr_f32.tflite"
    x = normalise(generate(0, 64, workers=1, random_fraction=0.5).x, OCR_INPUT)
    model = ocr_from_tflite(shipped, x, width_mult=2.0, context_blocks=5, residual_blocks=1, file_width_mult=1.5)
    narrow = ocr_from_tflite(shipped, x, width_mult=1.5, context_blocks=5, residual_blocks=1)
    assert model.count_params() > 1.5 * narrow.count_params()
    ours = model.predict(x[:8], verbose=0)["probs"]
    reference = Model(shipped, num_threads=1)
    for i in range(8):
        probs = reference.invoke(x[i : i + 1])["probs"][0]
        np.testing.assert_allclose(ours[i], probs, atol=0.05)
        np.testing.assert_array_equal(ours[i].argmax(-1), probs.argmax(-1))  # the same reading


def test_lane_training_widens_the_shipped_file_it_starts_from() -> None:
    """``train-lane --init-from lane_f32.tflite --init-width-mult 2 --width-mult 2.5`` trains the widened network."""
    from seedcam_tools.lane.data import generate
    from seedcam_tools.lane.train import train_on_data
    from seedcam_tools.tflite_weights import TfliteWeightsError

    data = generate(0, 32, workers=1, random_fraction=0.5)
    shipped = MODELS / "lane" / "lane_f32.tflite"
    model, history = train_on_data(
        data, None, seed=0, epochs=1, batch_size=16, init_from=shipped, width_mult=2.5, blocks=2, init_width_mult=2.0
    )
    assert model.get_layer("s1_conv").kernel.shape[-1] == 40  # 16 x 2.5 (the shipped network: 32)
    assert all(np.isfinite(history["loss"]))
    with pytest.raises(TfliteWeightsError, match="not the same architecture"):  # the file is not of that width
        train_on_data(data, None, seed=0, epochs=1, init_from=shipped, width_mult=2.5, blocks=2, init_width_mult=1.5)


def test_detector_training_widens_the_shipped_file_it_starts_from() -> None:
    """``train-detector --init-from detect_f32.tflite --init-width 1.5 --width 2``."""
    from seedcam_tools.detect.data import generate
    from seedcam_tools.detect.train import train_on_data

    data = generate(0, 16, workers=1, random_fraction=0.5)
    model = train_on_data(
        data, seed=0, epochs=1, batch_size=8, init_from=MODELS / "detect" / "detect_f32.tflite", width=2.0,
        init_width=1.5,
    )  # fmt: skip
    first = next(layer for layer in model.layers if type(layer).__name__ == "Conv2D")
    assert first.kernel.shape[-1] == 24  # 12 x 2, rounded to 8 (the shipped network: 16)

"""Training fast on a CPU: fused batch norms train as Keras' own do, bfloat16 compute, and plain models back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from seedcam_tools.train_speed import (
    checkpoint_callback,
    inference_model,
    resolve_compute,
    training_model,
)


def _model(seed: int = 0) -> Any:
    """Conv, batch norm, ReLU twice, then a dense output: the pattern of every network the tools train."""
    import keras
    from keras import layers

    keras.utils.set_random_seed(seed)
    inp = keras.Input((12, 16, 3), name="image")
    x = inp
    for i, filters in enumerate((8, 16)):
        x = layers.Conv2D(filters, 3, strides=2, padding="same", use_bias=False, name=f"c{i}")(x)
        x = layers.BatchNormalization(name=f"bn{i}")(x)
        x = layers.ReLU(name=f"r{i}")(x)
    x = layers.GlobalAveragePooling2D(name="pool")(x)
    return keras.Model(inp, {"value": layers.Dense(2, name="value")(x)}, name="small")


def _trained_looking(model: Any, seed: int) -> Any:
    """Batch norms that are not the identity, so that a statistic or scale lost on the way shows."""
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if type(layer).__name__ == "BatchNormalization":
            n = layer.get_weights()[0].shape[0]
            layer.set_weights(
                [rng.uniform(0.5, 2.0, n), rng.normal(0, 0.5, n), rng.normal(0, 0.5, n), rng.uniform(0.2, 3.0, n)]
            )
    return model


def _images(n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0, 1, (n, 12, 16, 3)).astype(np.float32)


def test_auto_compute_is_bfloat16_only_where_the_cpu_has_it() -> None:
    assert resolve_compute("auto", frozenset({"avx2", "amx_bf16", "amx_tile"})) == "bfloat16"
    assert resolve_compute("auto", frozenset({"avx2", "avx512_bf16"})) == "float32"  # not measured to pay
    assert resolve_compute("auto", frozenset({"avx2", "avx512_vnni"})) == "float32"
    assert resolve_compute("auto", frozenset()) == "float32"
    assert resolve_compute("float32", frozenset({"amx_bf16"})) == "float32"
    assert resolve_compute("bfloat16", frozenset()) == "bfloat16"
    with pytest.raises(ValueError, match="compute must be one of auto, float32, bfloat16"):
        resolve_compute("float16")


@pytest.mark.parametrize("bfloat16", [False, True])
def test_the_training_copy_infers_as_the_model_and_comes_back_unchanged(bfloat16: bool) -> None:
    model = _trained_looking(_model(), 3)
    x = _images(8)
    expected = np.asarray(model(x, training=False)["value"])
    copy = training_model(model, bfloat16=bfloat16)
    kinds = {layer.name: type(layer).__name__ for layer in copy.layers}
    assert kinds["bn0"] == kinds["bn1"] == "FusedBatchNormalization"
    policies = {layer.name: layer.dtype_policy.name for layer in copy.layers}
    assert policies["value"] == "float32"  # the output layer: the losses see float32
    assert policies["c0"] == ("mixed_bfloat16" if bfloat16 else "float32")
    got = np.asarray(copy(x, training=False)["value"])
    if bfloat16:
        assert not np.array_equal(got, expected)  # really computed in bfloat16 ...
        np.testing.assert_allclose(got, expected, atol=0.05)  # ... to bfloat16's precision
    else:
        np.testing.assert_array_equal(got, expected)
    back = inference_model(copy)
    assert {type(layer).__name__ for layer in back.layers} == {
        "InputLayer",
        "Conv2D",
        "BatchNormalization",
        "ReLU",
        "GlobalAveragePooling2D",
        "Dense",
    }
    assert {layer.dtype_policy.name for layer in back.layers} == {"float32"}
    np.testing.assert_array_equal(np.asarray(back(x, training=False)["value"]), expected)


def test_a_fused_batch_norm_trains_as_keras_own() -> None:
    """Outputs, gradients and moving statistics of one training step match the unfused layer's."""
    import tensorflow as tf

    plain = _trained_looking(_model(), 5)
    fused = training_model(plain)
    x = tf.constant(_images(16, seed=2))

    def step(model: Any) -> tuple[np.ndarray, list[np.ndarray]]:
        with tf.GradientTape() as tape:
            out = model(x, training=True)["value"]
            loss = tf.reduce_sum(out * out)
        grads = tape.gradient(loss, model.trainable_weights)
        return out.numpy(), [g.numpy() for g in grads]

    out_plain, grads_plain = step(plain)
    out_fused, grads_fused = step(fused)
    np.testing.assert_allclose(out_fused, out_plain, rtol=1e-4, atol=1e-5)
    assert len(grads_fused) == len(grads_plain)
    for g_fused, g_plain in zip(grads_fused, grads_plain, strict=True):
        np.testing.assert_allclose(g_fused, g_plain, rtol=1e-3, atol=1e-5)
    for name in ("bn0", "bn1"):  # the moving statistics moved, and the same way (biased variance)
        a, b = plain.get_layer(name), fused.get_layer(name)
        np.testing.assert_allclose(b.moving_mean.numpy(), a.moving_mean.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b.moving_variance.numpy(), a.moving_variance.numpy(), rtol=1e-5, atol=1e-6)
    fresh = _trained_looking(_model(), 5).get_layer("bn1")
    assert not np.allclose(fused.get_layer("bn1").moving_variance.numpy(), fresh.moving_variance.numpy())


def test_training_in_bfloat16_learns_and_checkpoints_a_plain_model(tmp_path: Path) -> None:
    import keras

    keras.utils.set_random_seed(0)
    x = _images(256, seed=4)
    y = np.stack([x.mean(axis=(1, 2, 3)), x[:, :, :8].mean(axis=(1, 2, 3))], axis=1).astype(np.float32) * 4.0
    copy = training_model(_model(), bfloat16=True)
    copy.compile(optimizer=keras.optimizers.Adam(1e-2), loss={"value": "mse"})
    path = tmp_path / "model.keras"
    history = copy.fit(x, {"value": y}, batch_size=32, epochs=6, verbose=0, callbacks=[checkpoint_callback(path)])
    losses = history.history["loss"]
    assert losses[-1] < 0.5 * losses[0]
    saved = keras.models.load_model(path, compile=False)  # no custom objects needed
    assert {type(layer).__name__ for layer in saved.layers} >= {"BatchNormalization"}
    assert "FusedBatchNormalization" not in {type(layer).__name__ for layer in saved.layers}
    assert {layer.dtype_policy.name for layer in saved.layers} == {"float32"}
    np.testing.assert_array_equal(
        np.asarray(saved(x[:4], training=False)["value"]),
        np.asarray(inference_model(copy)(x[:4], training=False)["value"]),
    )


def test_a_model_compiled_with_its_own_loss_functions_comes_back_uncompiled() -> None:
    """Trainers compile with loss functions of their own, which a clone would look up by name."""

    def own_loss(y_true: Any, y_pred: Any) -> Any:
        return (y_true - y_pred) ** 2

    copy = training_model(_model())
    copy.compile(optimizer="adam", loss={"value": own_loss})
    back = inference_model(copy)
    assert not back.compiled
    assert back.name == "small"
    assert list(back.output) == ["value"]  # the output structure (a dict) is kept

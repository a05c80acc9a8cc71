"""The image-classifier network: 3x3 conv + BN + ReLU stages, global average pool, dense softmax."""

from __future__ import annotations

from typing import Any

from seedcam_firmware.inference.preprocess import InputSpec

__all__ = ["build_classifier"]


def _conv(x: Any, filters: int, stride: int, name: str) -> Any:
    from keras import layers

    x = layers.Conv2D(filters, 3, strides=stride, padding="same", use_bias=False, name=f"{name}_conv")(x)
    x = layers.BatchNormalization(momentum=0.9, name=f"{name}_bn")(x)
    return layers.ReLU(name=f"{name}_relu")(x)


def build_classifier(spec: InputSpec, num_classes: int, width_mult: float = 1.0, dropout: float = 0.2) -> Any:
    """A small CNN: 3x3 conv + BN + ReLU stages, global average pool, dense softmax ``probs`` (1 x C).

    Args:
        spec: the model input (height x width x 3, normalised floats).
        num_classes: outputs of the softmax.
        width_mult: scales every stage's channels.
        dropout: dropout rate before the classifier layer (training only).
    """
    import keras
    from keras import layers

    def c(n: int) -> int:
        return max(8, round(n * width_mult))

    inp = keras.Input((spec.height, spec.width, 3), name="image")
    x = _conv(inp, c(16), 2, "s1")
    x = _conv(x, c(32), 2, "s2")
    x = _conv(x, c(32), 1, "s2b")
    x = _conv(x, c(64), 2, "s3")
    x = _conv(x, c(64), 1, "s3b")
    x = _conv(x, c(128), 2, "s4")
    x = _conv(x, c(128), 1, "s4b")
    x = layers.GlobalAveragePooling2D(name="pool")(x)
    x = layers.Dropout(dropout, name="drop")(x)
    probs = layers.Dense(num_classes, activation="softmax", name="probs")(x)
    return keras.Model(inp, {"probs": probs}, name="classifier")

"""The lane network: a small CNN with a marking-mask head and a lane-state head."""

from __future__ import annotations

import keras
from keras import layers

from .data import LANE_INPUT, MASK_SIZE

__all__ = ["OUTPUT_NAMES", "build_lane_model"]

#: model outputs, in this order: mask (sigmoid, 1x16x32x2), lane_state (normalised
#: [offset, heading, curvature, width]), presence (logits, [left, right])
OUTPUT_NAMES = ("mask", "lane_state", "presence")


def _conv(x: keras.KerasTensor, filters: int, stride: int, name: str) -> keras.KerasTensor:
    x = layers.Conv2D(filters, 3, strides=stride, padding="same", use_bias=False, name=f"{name}_conv")(x)
    x = layers.BatchNormalization(name=f"{name}_bn")(x)
    return layers.ReLU(name=f"{name}_relu")(x)


def build_lane_model(width_mult: float = 1.0, blocks: int = 0) -> keras.Model:
    """Build the network (input: normalised float RGB ``(64, 128, 3)``).

    Args:
        width_mult: channel scale of every convolution and of the dense layer.
        blocks: extra stride-1 3x3 convolutions at each scale from 1/4 of the input down (0: lane-v2's network).
    """
    if blocks < 0:
        raise ValueError(f"blocks must be >= 0, got {blocks}")

    def c(n: int) -> int:
        return max(8, round(n * width_mult))

    def stage(x: keras.KerasTensor, filters: int, name: str) -> keras.KerasTensor:
        for i in range(blocks):
            x = _conv(x, filters, 1, f"{name}_b{i + 1}")
        return x

    inp = keras.Input((LANE_INPUT.height, LANE_INPUT.width, 3), name="image")
    x = _conv(inp, c(16), 2, "s1")  # 32 x 64
    x = stage(_conv(x, c(32), 2, "s2"), c(32), "s2")  # 16 x 32
    mask = layers.Conv2D(2, 1, activation="sigmoid", name="mask")(x)
    assert tuple(mask.shape[1:3]) == MASK_SIZE
    x = _conv(x, c(64), 2, "s3a")  # 8 x 16
    x = stage(_conv(x, c(64), 1, "s3b"), c(64), "s3")
    x = stage(_conv(x, c(96), 2, "s4"), c(96), "s4")  # 4 x 8
    x = layers.Conv2D(32, 1, activation="relu", name="squeeze")(x)
    x = layers.Flatten(name="flat")(x)
    x = layers.Dense(c(128), activation="relu", name="fc")(x)
    lane_state = layers.Dense(4, name="lane_state")(x)
    presence = layers.Dense(2, name="presence")(x)
    return keras.Model(inp, {"mask": mask, "lane_state": lane_state, "presence": presence}, name="lane")

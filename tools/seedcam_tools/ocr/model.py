"""The OCR network: a CRNN whose "recurrent" part is 1-D convolutions over time.

Everything is a static-shape 2-D convolution (NPU and XNNPACK friendly, no LSTM):

* a VGG-like stack of 3 x 3 conv + BN + ReLU blocks takes the 32 x 128 input to
  4 x 32 (two 2 x 2 and one 2 x 1 strides), then a 4 x 1 valid convolution
  folds the height to 1: one feature vector per 4-pixel column, 32 time steps;
* residual 1 x 3 convolutions over time give each step its neighbours' context
  (what a BiLSTM does in the classic CRNN);
* a 1 x 1 convolution gives the :data:`~seedcam_tools.ocr.data.NUM_CLASSES`
  logits (blank last), reshaped to ``[1, 32, 38]``; ``probs`` is their softmax.

The model returns ``{"logits": ..., "probs": ...}``; training uses the logits
(CTC loss), the exported bundle only ``probs``.
"""

from __future__ import annotations

import keras
from keras import layers

from .data import NUM_CLASSES, OCR_INPUT, OCR_OUTPUTS, TIME_STEPS

__all__ = ["OCR_OUTPUTS", "build_ocr_model"]


def _conv(
    x: keras.KerasTensor,
    filters: int,
    kernel: tuple[int, int],
    strides: tuple[int, int],
    name: str,
    padding: str = "same",
) -> keras.KerasTensor:
    x = layers.Conv2D(filters, kernel, strides=strides, padding=padding, use_bias=False, name=f"{name}_conv")(x)
    x = layers.BatchNormalization(name=f"{name}_bn")(x)
    return layers.ReLU(name=f"{name}_relu")(x)


def build_ocr_model(width_mult: float = 1.0, context_blocks: int = 3) -> keras.Model:
    """Build the network (input: normalised float RGB ``(32, 128, 3)``).

    Args:
        width_mult: scales every layer's channel count (1.0: the shipped model, ~0.22 M parameters).
        context_blocks: number of residual 1 x 3 convolutions over time.
    """

    def c(n: int) -> int:
        return max(8, round(n * width_mult))

    inp = keras.Input((OCR_INPUT.height, OCR_INPUT.width, 3), name="image")
    x = _conv(inp, c(16), (3, 3), (2, 2), "b1")  # 16 x 64
    x = _conv(x, c(32), (3, 3), (1, 1), "b2")
    x = _conv(x, c(48), (3, 3), (2, 2), "b3")  # 8 x 32
    x = _conv(x, c(48), (3, 3), (1, 1), "b4")
    x = _conv(x, c(64), (3, 3), (2, 1), "b5")  # 4 x 32
    x = _conv(x, c(64), (3, 3), (1, 1), "b6")
    x = _conv(x, c(96), (4, 1), (1, 1), "fold", padding="valid")  # 1 x 32: one vector per time step
    assert tuple(x.shape[1:3]) == (1, TIME_STEPS)
    for i in range(context_blocks):
        y = _conv(x, c(96), (1, 3), (1, 1), f"ctx{i + 1}")
        x = layers.Add(name=f"ctx{i + 1}_add")([x, y])
    x = layers.Dropout(0.1, name="drop")(x)
    logits = layers.Conv2D(NUM_CLASSES, 1, name="classes")(x)  # 1 x 32 x K
    logits = layers.Reshape((TIME_STEPS, NUM_CLASSES), name="logits")(logits)
    probs = layers.Softmax(axis=-1, name="probs")(logits)
    return keras.Model(inp, {"logits": logits, "probs": probs}, name="ocr")

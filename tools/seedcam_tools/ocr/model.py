"""The OCR network: a CRNN whose "recurrent" part is 1-D convolutions over time.

Everything is a static-shape 2-D convolution (NPU and XNNPACK friendly, no LSTM):

* a VGG-like stack of 3 x 3 conv + BN + ReLU blocks takes the 32 x 128 input to
  4 x 32 (two 2 x 2 and one 2 x 1 strides), then a 4 x 1 valid convolution
  folds the height to 1: one feature vector per 4-pixel column, 32 time steps;
* residual 1 x 3 convolutions over time give each step its neighbours' context
  (what a BiLSTM does in the classic CRNN);
* ``residual_blocks`` (two 3 x 3 convolutions each) after the 8 x 32 and the 4 x 32
  stages add depth where the glyphs are told apart; their last batch norm starts at
  zero scale, and so do the added context blocks' (:data:`BASE_CONTEXT_BLOCKS` and
  beyond), so that :func:`deepen_ocr` can put a shallower network's weights into a
  deeper one that computes the same function before training;
* a 1 x 1 convolution gives the :data:`~seedcam_tools.ocr.data.NUM_CLASSES`
  logits (blank last), reshaped to ``[1, 32, 38]``; ``probs`` is their softmax.

The model returns ``{"logits": ..., "probs": ...}``; training uses the logits
(CTC loss), the exported bundle only ``probs``.
"""

from __future__ import annotations

import logging
from pathlib import Path

import keras
import numpy as np
from keras import layers

from ..tflite_weights import TfliteWeightsError, load_tflite_weights
from ..widen import widen
from .data import NUM_CLASSES, OCR_INPUT, OCR_OUTPUTS, TIME_STEPS

__all__ = ["BASE_CONTEXT_BLOCKS", "OCR_OUTPUTS", "RESIDUAL_PREFIX", "build_ocr_model", "deepen_ocr", "ocr_from_tflite"]

#: the context blocks of ocr-v1..v3; blocks beyond these start as the identity
BASE_CONTEXT_BLOCKS = 3
#: name prefix of the residual blocks' layers
RESIDUAL_PREFIX = "residual_"


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


def _residual(x: keras.KerasTensor, name: str) -> keras.KerasTensor:
    """``relu(x + bn(conv(relu(bn(conv(x))))))`` with the last batch norm at zero scale: the identity at first."""
    filters = x.shape[-1]
    y = layers.Conv2D(filters, 3, padding="same", use_bias=False, name=f"{name}_conv1")(x)
    y = layers.ReLU(name=f"{name}_relu1")(layers.BatchNormalization(name=f"{name}_bn1")(y))
    y = layers.Conv2D(filters, 3, padding="same", use_bias=False, name=f"{name}_conv2")(y)
    y = layers.BatchNormalization(gamma_initializer="zeros", name=f"{name}_bn2")(y)
    return layers.ReLU(name=f"{name}_relu2")(layers.Add(name=f"{name}_add")([x, y]))


def build_ocr_model(
    width_mult: float = 1.0, context_blocks: int = BASE_CONTEXT_BLOCKS, residual_blocks: int = 0
) -> keras.Model:
    """Build the network (input: normalised float RGB ``(32, 128, 3)``).

    Args:
        width_mult: scales every layer's channel count (1.0: the v1 width, ~0.22 M parameters).
        context_blocks: number of residual 1 x 3 convolutions over time.
        residual_blocks: residual 3 x 3 blocks after each of the 8 x 32 and 4 x 32 stages (0 up to ocr-v3).
    """

    def c(n: int) -> int:
        return max(8, round(n * width_mult))

    inp = keras.Input((OCR_INPUT.height, OCR_INPUT.width, 3), name="image")
    x = _conv(inp, c(16), (3, 3), (2, 2), "b1")  # 16 x 64
    x = _conv(x, c(32), (3, 3), (1, 1), "b2")
    x = _conv(x, c(48), (3, 3), (2, 2), "b3")  # 8 x 32
    x = _conv(x, c(48), (3, 3), (1, 1), "b4")
    for i in range(residual_blocks):
        x = _residual(x, f"{RESIDUAL_PREFIX}s8x32_{i}")
    x = _conv(x, c(64), (3, 3), (2, 1), "b5")  # 4 x 32
    x = _conv(x, c(64), (3, 3), (1, 1), "b6")
    for i in range(residual_blocks):
        x = _residual(x, f"{RESIDUAL_PREFIX}s4x32_{i}")
    x = _conv(x, c(96), (4, 1), (1, 1), "fold", padding="valid")  # 1 x 32: one vector per time step
    assert tuple(x.shape[1:3]) == (1, TIME_STEPS)
    for i in range(context_blocks):
        name = f"ctx{i + 1}"
        y = layers.Conv2D(c(96), (1, 3), padding="same", use_bias=False, name=f"{name}_conv")(x)
        y = layers.BatchNormalization(
            gamma_initializer="ones" if i < BASE_CONTEXT_BLOCKS else "zeros", name=f"{name}_bn"
        )(y)
        y = layers.ReLU(name=f"{name}_relu")(y)
        x = layers.Add(name=f"{name}_add")([x, y])
    x = layers.Dropout(0.1, name="drop")(x)
    logits = layers.Conv2D(NUM_CLASSES, 1, name="classes")(x)  # 1 x 32 x K
    logits = layers.Reshape((TIME_STEPS, NUM_CLASSES), name="logits")(logits)
    probs = layers.Softmax(axis=-1, name="probs")(logits)
    return keras.Model(inp, {"logits": logits, "probs": probs}, name="ocr")


def deepen_ocr(shallow: keras.Model, *, width_mult: float, context_blocks: int, residual_blocks: int) -> keras.Model:
    """A network with ``context_blocks`` / ``residual_blocks`` holding ``shallow``'s weights.

    ``shallow`` has the same width and no more blocks of either kind. Its layers keep their
    weights by name; the added blocks start as the identity (zero-scale last batch norm, see
    :func:`build_ocr_model`), so the result computes what ``shallow`` computes until trained.

    Raises:
        ValueError: ``shallow`` has a layer the deeper network lacks, or one of another shape.
    """
    deep = build_ocr_model(width_mult, context_blocks=context_blocks, residual_blocks=residual_blocks)
    targets = {layer.name: layer for layer in deep.layers}
    for layer in shallow.layers:
        if not layer.weights:
            continue
        target = targets.get(layer.name)
        shapes = [tuple(w.shape) for w in layer.weights]
        if target is None or [tuple(w.shape) for w in target.weights] != shapes:
            raise ValueError(f"layer {layer.name!r} of the shallow network has no counterpart of its shape")
        target.set_weights(layer.get_weights())
    return deep


def ocr_from_tflite(
    path: str | Path,
    calibration: np.ndarray,
    *,
    width_mult: float,
    context_blocks: int,
    residual_blocks: int,
    file_width_mult: float | None = None,
) -> keras.Model:
    """A Keras network of the given width and depth holding the weights of the float32 ``.tflite`` at ``path``.

    The file holds either that architecture or ocr-v3's shallower one (then deepened). A file
    of a narrower network (``file_width_mult``, below ``width_mult``) is loaded at its own width
    and widened (:func:`~seedcam_tools.widen.widen`): the result computes about what it computes.

    Raises:
        TfliteWeightsError: the file fits neither.
        WidenError: ``file_width_mult`` is above ``width_mult``.
    """
    if file_width_mult is not None and file_width_mult != width_mult:
        narrow = ocr_from_tflite(
            path,
            calibration,
            width_mult=file_width_mult,
            context_blocks=context_blocks,
            residual_blocks=residual_blocks,
        )
        wide = build_ocr_model(width_mult, context_blocks=context_blocks, residual_blocks=residual_blocks)
        widen(narrow, wide)
        logging.getLogger(__name__).info("widened %s from x%g to x%g", Path(path).name, file_width_mult, width_mult)
        return wide
    model = build_ocr_model(width_mult, context_blocks=context_blocks, residual_blocks=residual_blocks)
    shallow = (context_blocks, residual_blocks) != (BASE_CONTEXT_BLOCKS, 0)
    try:
        load_tflite_weights(model, path, calibration)
        return model
    except TfliteWeightsError:
        if not shallow:
            raise
    model = build_ocr_model(width_mult)
    load_tflite_weights(model, path, calibration)
    logging.getLogger(__name__).info(
        "deepened %s to %d context and %d residual blocks", Path(path).name, context_blocks, residual_blocks
    )
    return deepen_ocr(model, width_mult=width_mult, context_blocks=context_blocks, residual_blocks=residual_blocks)

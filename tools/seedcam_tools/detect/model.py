"""The seedcam sign/plate detector: a small single-shot (SSD-style) CNN with two feature levels.

Backbone of plain 3x3 convolutions (BN + ReLU, NPU-friendly), a light top-down
path from stride 16 into stride 8, and per level a box head (anchor encodings,
see :mod:`seedcam_firmware.inference.anchors`) and a sigmoid class head. The
outputs are the firmware's ``ssd_anchors`` layout: ``boxes`` [1, N, 4] and
``scores`` [1, N, C], anchors ordered level, row, column, anchor.
"""

from __future__ import annotations

import math
from typing import Any

from seedcam_firmware.inference.anchors import AnchorLevel

from .data import DETECT_INPUT, LABELS

__all__ = [
    "ANCHOR_LEVELS",
    "DEAD_BRANCH_MAX",
    "DETECT_OUTPUTS",
    "DETECTOR_BLOCKS",
    "DETECTOR_WIDTH",
    "build_detector",
    "deepen",
    "detector_decoder_config",
    "fold_dead_branches",
    "num_anchors",
]

#: anchor (width, height) in model-input pixels: squares for signs, 3:1 boxes for plates
ANCHOR_LEVELS: tuple[AnchorLevel, ...] = (
    AnchorLevel(stride=8, sizes=((8.0, 8.0), (14.0, 14.0), (20.0, 7.0))),
    AnchorLevel(stride=16, sizes=((22.0, 22.0), (34.0, 34.0), (36.0, 12.0), (60.0, 20.0))),
)
#: channel scale of the shipped detector (detect-v2 on)
DETECTOR_WIDTH = 1.5
#: residual blocks per level of the shipped detector (detect-v5; detect-v4 had 2)
DETECTOR_BLOCKS = 4
#: name prefix of the layers of the residual blocks (see ``blocks`` of :func:`build_detector`)
RESIDUAL_PREFIX = "residual_"
#: the class head starts at this probability so that the focal loss is stable
PRIOR_PROBABILITY = 0.01


def num_anchors(levels: tuple[AnchorLevel, ...] = ANCHOR_LEVELS) -> int:
    """Total anchors of the detector for :data:`DETECT_INPUT`."""
    w, h = DETECT_INPUT.width, DETECT_INPUT.height
    return sum(-(-h // lv.stride) * -(-w // lv.stride) * len(lv.sizes) for lv in levels)


#: output name -> shape of the exported model
DETECT_OUTPUTS: dict[str, tuple[int, ...]] = {"boxes": (1, num_anchors(), 4), "scores": (1, num_anchors(), len(LABELS))}


def detector_decoder_config() -> dict[str, Any]:
    """The manifest ``decoder`` section of our detector (the firmware's ``ssd_anchors`` layout)."""
    return {
        "layout": "ssd_anchors",
        "labels": list(LABELS),
        "anchors": {"levels": [level.to_dict() for level in ANCHOR_LEVELS]},
        "box_scales": [10.0, 10.0, 5.0, 5.0],
        "score_activation": "none",
        "background_class": False,
        "score_threshold": 0.5,
        "iou_threshold": 0.45,
        "max_detections": 20,
    }


def build_detector(
    num_classes: int = len(LABELS),
    levels: tuple[AnchorLevel, ...] = ANCHOR_LEVELS,
    *,
    width: float = DETECTOR_WIDTH,
    blocks: int = DETECTOR_BLOCKS,
) -> Any:
    """A fresh Keras detector taking ``DETECT_INPUT``-normalised images (0..1 RGB).

    ``width`` scales every layer's channel count, rounded to multiples of 8 (1.0:
    12..64 channels, ~0.21 M parameters, detect-v1; 1.5: 16..96, ~0.45 M,
    detect-v2). Wider layers cost float time but are what INT8 kernels speed up:
    on a CPU with int8 dot-product instructions (AVX512-VNNI) width 1.0 measured
    1.2-2x faster in INT8 than float, width 1.5 about 3.5x.

    ``blocks`` residual blocks (two 3x3 convolutions each) are added at each level
    before the top-down path. Their last batch norm starts at zero scale, so a
    fresh block is the identity: :func:`deepen` copies a shallower detector's
    weights into the deeper one and it computes the same function before training.
    """
    import keras
    from keras import layers

    def c(n: int) -> int:
        return max(8, round(n * width / 8) * 8) if width != 1.0 else n

    def conv(x: Any, filters: int, strides: int = 1) -> Any:
        x = layers.Conv2D(filters, 3, strides=strides, padding="same", use_bias=False)(x)
        x = layers.BatchNormalization()(x)
        return layers.ReLU()(x)

    def residual(x: Any, name: str) -> Any:
        filters = x.shape[-1]
        y = layers.Conv2D(filters, 3, padding="same", use_bias=False, name=f"{name}_conv1")(x)
        y = layers.ReLU(name=f"{name}_relu1")(layers.BatchNormalization(name=f"{name}_bn1")(y))
        y = layers.Conv2D(filters, 3, padding="same", use_bias=False, name=f"{name}_conv2")(y)
        y = layers.BatchNormalization(gamma_initializer="zeros", name=f"{name}_bn2")(y)
        return layers.ReLU(name=f"{name}_relu2")(layers.Add(name=f"{name}_add")([x, y]))

    image = keras.Input((DETECT_INPUT.height, DETECT_INPUT.width, 3), name="image")
    x = conv(image, c(12), 2)  # stride 2
    x = conv(x, c(24), 2)  # stride 4
    x = conv(x, c(32), 2)  # stride 8
    x = conv(x, c(32))
    p3 = conv(x, c(32))
    for i in range(blocks):
        p3 = residual(p3, f"{RESIDUAL_PREFIX}s8_{i}")
    y = conv(p3, c(64), 2)  # stride 16
    y = conv(y, c(64))
    p4 = conv(y, c(64))
    for i in range(blocks):
        p4 = residual(p4, f"{RESIDUAL_PREFIX}s16_{i}")
    top_down = layers.UpSampling2D(2, interpolation="nearest")(layers.Conv2D(c(32), 1)(p4))
    f3 = conv(layers.Add()([p3, top_down]), c(32))

    prior = keras.initializers.Constant(-math.log((1 - PRIOR_PROBABILITY) / PRIOR_PROBABILITY))
    boxes, scores = [], []
    for feature, level, head_width in ((f3, levels[0], c(32)), (p4, levels[1], c(64))):
        a = len(level.sizes)
        h = conv(feature, head_width)
        b = layers.Conv2D(a * 4, 3, padding="same")(h)
        s = layers.Conv2D(a * num_classes, 3, padding="same", bias_initializer=prior)(h)
        boxes.append(layers.Reshape((-1, 4))(b))
        scores.append(layers.Reshape((-1, num_classes))(s))
    box_out = layers.Concatenate(axis=1, name="boxes")(boxes)
    score_out = layers.Activation("sigmoid", name="scores")(layers.Concatenate(axis=1)(scores))
    return keras.Model(image, {"boxes": box_out, "scores": score_out}, name="seedcam_detector")


def deepen(shallow: Any, blocks: int, *, width: float = DETECTOR_WIDTH) -> Any:
    """A detector with ``blocks`` residual blocks per level holding ``shallow``'s weights.

    ``shallow`` is a detector of channel scale ``width`` with fewer blocks per level (none,
    or e.g. detect-v4's two). Its blocks keep their place and weights; the added blocks start
    as the identity, so the result computes what ``shallow`` computes until it is trained.
    """
    deep = build_detector(width=width, blocks=blocks)

    def split(model: Any) -> tuple[list[Any], dict[str, Any]]:
        weighted = [layer for layer in model.layers if layer.weights]
        plain = [layer for layer in weighted if not layer.name.startswith(RESIDUAL_PREFIX)]
        return plain, {layer.name: layer for layer in weighted if layer.name.startswith(RESIDUAL_PREFIX)}

    old_plain, old_blocks = split(shallow)
    new_plain, new_blocks = split(deep)
    if len(old_plain) != len(new_plain):
        raise ValueError(
            f"{len(old_plain)} weighted layers in the shallow detector against {len(new_plain)} in the deep one"
        )
    if len(old_blocks) >= len(new_blocks) or not old_blocks.keys() <= new_blocks.keys():
        raise ValueError(f"the shallow detector's residual blocks do not fit within {blocks} per level")
    for source, target in zip(old_plain, new_plain, strict=True):
        target.set_weights(source.get_weights())
    for name, source in old_blocks.items():
        new_blocks[name].set_weights(source.get_weights())
    return deep


#: a residual branch whose first ReLU never exceeds this on the calibration scenes is dead
DEAD_BRANCH_MAX = 1e-3


def fold_dead_branches(model: Any, pixels: Any) -> list[str]:
    """Rewrite the residual blocks whose first ReLU is (all but) zero on ``pixels``; returns their names.

    Training can kill a block's branch: its first convolution, batch norm and ReLU give zero for
    almost every input (at most :data:`DEAD_BRANCH_MAX`), the second convolution then gives
    (almost) zero and the block adds its last batch norm's constant. Exported to full INT8, the
    dead ReLU's range is that of a stray 2e-6: the converter gives it a scale of about 1e-8, and
    XNNPACK refuses the requantization into it (detect-v5's network, twice, in the same block).
    The branch is rewritten to compute that constant with a live range: the first convolution's
    kernel and batch-norm scale become zero and its shift one (the ReLU gives 1 everywhere), the
    second convolution's kernel zero (it gives zero, borders included: it has no bias). Outputs
    change by no more than the dead ReLU's stray values could move them.

    Args:
        model: a detector built by :func:`build_detector` (changed in place).
        pixels: normalised model inputs (the INT8 calibration scenes).
    """
    import keras
    import numpy as np

    names = sorted({layer.name[: -len("_relu1")] for layer in model.layers if layer.name.endswith("_relu1")})
    if not names:
        return []
    probe = keras.Model(model.inputs, [model.get_layer(f"{name}_relu1").output for name in names])
    outputs = probe.predict(pixels, batch_size=32, verbose=0)
    dead = [name for name, out in zip(names, outputs, strict=True) if float(np.max(out)) <= DEAD_BRANCH_MAX]
    for name in dead:
        conv1, bn1, conv2 = (model.get_layer(f"{name}_{part}") for part in ("conv1", "bn1", "conv2"))
        conv1.set_weights([np.zeros_like(w) for w in conv1.get_weights()])
        gamma, beta, mean, variance = bn1.get_weights()
        bn1.set_weights([np.zeros_like(gamma), np.ones_like(beta), mean, variance])
        conv2.set_weights([np.zeros_like(w) for w in conv2.get_weights()])
    return dead

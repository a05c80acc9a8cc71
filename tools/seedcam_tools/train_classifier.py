"""The image-classifier network, its augmentation, and a deterministic training loop.

Training is reproducible on one machine: ``keras.utils.set_random_seed`` plus
TensorFlow op determinism, and augmentation drawn from
``np.random.default_rng([seed, epoch, batch])``, so a batch's augmentation
depends on nothing but those three numbers.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from seedcam_firmware.inference.preprocess import InputSpec, normalise

__all__ = ["Augment", "TrainResult", "augment_batch", "build_classifier", "predict_classes", "train_classifier_model"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Augment:
    """Training-time image augmentation (validation and export never see it).

    Attributes:
        shift: largest random translation as a fraction of the width / height
            (edges replicated).
        brightness: largest additive brightness change, in pixel units (0..255).
        contrast: largest relative contrast change (0.2 -> x0.8 .. x1.2).
        flip: mirror half the images left-right. Off by default: it is wrong
            whenever left and right mean different classes (e.g. ``curve_left``).
    """

    shift: float = 0.08
    brightness: float = 20.0
    contrast: float = 0.2
    flip: bool = False


def augment_batch(pixels: np.ndarray, rng: np.random.Generator, aug: Augment) -> np.ndarray:
    """Augmented copies of ``pixels`` (N x H x W x 3 uint8), drawn from ``rng``."""
    n, h, w, _ = pixels.shape
    py, px = round(aug.shift * h), round(aug.shift * w)
    padded = np.pad(pixels, ((0, 0), (py, py), (px, px), (0, 0)), mode="edge") if py or px else pixels
    dy = rng.integers(0, 2 * py + 1, n)
    dx = rng.integers(0, 2 * px + 1, n)
    out = np.empty_like(pixels)
    for i in range(n):
        img = padded[i, dy[i] : dy[i] + h, dx[i] : dx[i] + w]
        out[i] = img[:, ::-1] if aug.flip and rng.random() < 0.5 else img
    gain = rng.uniform(1.0 - aug.contrast, 1.0 + aug.contrast, (n, 1, 1, 1)).astype(np.float32)
    bias = rng.uniform(-aug.brightness, aug.brightness, (n, 1, 1, 1)).astype(np.float32)
    mean = out.reshape(n, -1).mean(axis=1).reshape(n, 1, 1, 1).astype(np.float32)
    res = (out.astype(np.float32) - mean) * gain + mean + bias
    return np.clip(np.round(res), 0, 255).astype(np.uint8)


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


def predict_classes(model: Any, pixels: np.ndarray, spec: InputSpec, batch_size: int = 256) -> np.ndarray:
    """Keras class probabilities (N x C) for uint8 model pixels."""
    if len(pixels) == 0:
        return np.zeros((0, int(model.outputs[0].shape[-1])), np.float32)
    out = model.predict(normalise(pixels, spec), batch_size=batch_size, verbose=0)
    return np.asarray(out["probs"], np.float32)


@dataclass
class TrainResult:
    """What training produced.

    Attributes:
        model: the Keras model, holding the weights of the best validation epoch.
        best_epoch: that epoch (1-based).
        best_val_accuracy: its validation accuracy.
        history: per epoch: ``loss``, ``train_accuracy``, ``val_accuracy``, ``lr``, ``seconds``.
        train_seconds: wall-clock time of the whole loop.
    """

    model: Any
    best_epoch: int
    best_val_accuracy: float
    history: list[dict[str, float]] = field(default_factory=list)
    train_seconds: float = 0.0


def train_classifier_model(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_val: np.ndarray,
    y_val: np.ndarray,
    *,
    spec: InputSpec,
    num_classes: int,
    seed: int,
    epochs: int,
    batch_size: int = 32,
    lr: float = 2e-3,
    weight_decay: float = 1e-4,
    augment: Augment | None = None,
    width_mult: float = 1.0,
    progress: bool = False,
) -> TrainResult:
    """Train a fresh :func:`build_classifier` network; keep the weights of the best validation epoch.

    AdamW with a cosine learning-rate decay over all steps; ties in validation
    accuracy go to the later epoch (it has seen more data at a lower rate).

    Args:
        x_train, y_train: uint8 model pixels and class indices.
        x_val, y_val: validation data (model selection only).
        spec: the model input.
        num_classes: number of classes.
        seed: weight init, shuffling and augmentation seed.
        epochs: passes over the training data.
        batch_size: images per step.
        lr: peak learning rate.
        weight_decay: AdamW's decoupled weight decay (on all trainable weights).
        augment: augmentation; ``Augment()`` by default.
        width_mult: channel multiplier of the network.
        progress: show a tqdm bar per epoch and log each epoch.

    Raises:
        ValueError: empty training or validation data, or ``epochs`` < 1.
    """
    import keras
    import tensorflow as tf

    if epochs < 1:
        raise ValueError("epochs must be >= 1")
    if len(x_train) == 0 or len(x_val) == 0:
        raise ValueError("training and validation data must not be empty")
    aug = augment or Augment()
    keras.utils.set_random_seed(seed)
    tf.config.experimental.enable_op_determinism()  # same seed and data -> the same weights
    model = build_classifier(spec, num_classes, width_mult=width_mult)
    steps_per_epoch = math.ceil(len(x_train) / batch_size)
    schedule = keras.optimizers.schedules.CosineDecay(lr, decay_steps=epochs * steps_per_epoch, alpha=0.01)
    model.compile(
        optimizer=keras.optimizers.AdamW(schedule, weight_decay=weight_decay),
        loss={"probs": keras.losses.SparseCategoricalCrossentropy()},
        metrics={"probs": ["sparse_categorical_accuracy"]},
    )
    order_rng = np.random.default_rng([seed, 0xC1A55])
    best_acc, best_epoch, best_weights = -1.0, 0, model.get_weights()
    history: list[dict[str, float]] = []
    t_start = time.monotonic()
    y_train = y_train.astype(np.int64)
    for epoch in range(epochs):
        t0 = time.monotonic()
        order = order_rng.permutation(len(x_train))
        batches = range(steps_per_epoch)
        if progress:
            from tqdm import tqdm

            batches = tqdm(batches, desc=f"epoch {epoch + 1}/{epochs}", unit="step", leave=False)
        loss_sum, correct = 0.0, 0.0
        for b in batches:
            idx = order[b * batch_size : (b + 1) * batch_size]
            xb = augment_batch(x_train[idx], np.random.default_rng([seed, epoch, b]), aug)
            res = model.train_on_batch(normalise(xb, spec), {"probs": y_train[idx]}, return_dict=True)
            acc = next(v for k, v in res.items() if k.endswith("accuracy"))  # this batch's (metrics reset per call)
            loss_sum += float(res["loss"]) * len(idx)
            correct += float(acc) * len(idx)
        val_acc = float((predict_classes(model, x_val, spec).argmax(axis=1) == y_val).mean())
        step = (epoch + 1) * steps_per_epoch
        row = {
            "epoch": epoch + 1,
            "loss": loss_sum / len(x_train),
            "train_accuracy": correct / len(x_train),
            "val_accuracy": val_acc,
            "lr": float(schedule(step - 1)),
            "seconds": time.monotonic() - t0,
        }
        history.append(row)
        log.info("epoch %d/%d: %s", epoch + 1, epochs, row)
        if val_acc >= best_acc:
            best_acc, best_epoch, best_weights = val_acc, epoch + 1, model.get_weights()
    model.set_weights(best_weights)
    return TrainResult(model, best_epoch, best_acc, history, time.monotonic() - t_start)

"""Train an image classifier from a folder of the user's images and ship it as a model bundle.

The chain (``seedcam-tools train-classifier``, :func:`train_classifier`): scan ``DATA/<class>/<image>`` →
hash split into training / validation → decode and resize with the firmware's
preprocessing → train (:func:`train_classifier_model`) keeping the best
validation epoch → :func:`~seedcam_tools.export.write_bundle` (float32, the
float-vs-Keras check, full INT8, goldens, manifest) → accuracy of both
``.tflite`` files on the held-out images (:mod:`seedcam_tools.classify.evaluate`) → ``metrics.json``.

Held-out images: a separate folder (``val_dir``, never used for training or
model selection) when given; otherwise the validation split, which also
picked the best epoch (``metrics.json`` says which).

Training is reproducible on one machine: ``keras.utils.set_random_seed`` plus
TensorFlow op determinism, and augmentation drawn from
``np.random.default_rng([seed, epoch, batch])``, so a batch's augmentation
depends on nothing but those three numbers.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from seedcam_firmware.inference.preprocess import InputSpec, normalise

from .data import (
    MIN_IMAGES_PER_CLASS,
    DatasetError,
    LoadedImages,
    load_images,
    scan_image_folder,
    split_images,
)
from .evaluate import evaluate_bundle
from .model import build_classifier

__all__ = [
    "DEFAULT_INPUT",
    "Augment",
    "TrainResult",
    "augment_batch",
    "parse_input_size",
    "predict_classes",
    "train_classifier",
    "train_classifier_model",
]

log = logging.getLogger(__name__)

#: the default model input: the whole frame squeezed to 96 x 96, RGB, pixels / 255
DEFAULT_INPUT = InputSpec(width=96, height=96, crop_top=0.0, color_order="RGB", mean=0.0, std=255.0)
#: INT8 calibration images (from the training split) and float-check images
REPRESENTATIVE_IMAGES = 300
CHECK_IMAGES = 100
TOP_K = 3


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


def parse_input_size(text: str) -> InputSpec:
    """``"WxH"`` (e.g. ``"96x96"``, ``"128x96"``) -> an RGB, /255, uncropped :class:`InputSpec`.

    Raises:
        ValueError: not ``WxH`` with 16 <= W, H <= 1024.
    """
    m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not m:
        raise ValueError(f"input size must look like 96x96 (width x height), got {text!r}")
    w, h = int(m.group(1)), int(m.group(2))
    if not (16 <= w <= 1024 and 16 <= h <= 1024):
        raise ValueError(f"input size {w}x{h} out of range (16..1024 per side)")
    return InputSpec(width=w, height=h, crop_top=0.0, color_order="RGB", mean=0.0, std=255.0)


def _model_name(name: str | None, data_dir: Path) -> str:
    raw = name if name is not None else data_dir.resolve().name
    clean = re.sub(r"[^a-z0-9_-]+", "_", raw.lower()).strip("_-")
    if not clean:
        raise ValueError(f"cannot make a model name from {raw!r}; pass name= (letters, digits, _ and -)")
    return clean


def _load_heldout(val_dir: Path, classes: tuple[str, ...], spec: InputSpec, progress: bool) -> LoadedImages:
    folder = scan_image_folder(val_dir, min_per_class=1)
    if folder.classes != classes:
        raise DatasetError(f"{val_dir}: classes {list(folder.classes)} differ from the training data's {list(classes)}")
    return load_images(folder, spec, min_per_class=1, progress=progress, desc="held-out")


def train_classifier(
    data_dir: str | Path,
    out_dir: str | Path,
    *,
    seed: int = 0,
    epochs: int = 30,
    val_dir: str | Path | None = None,
    name: str | None = None,
    input_spec: InputSpec = DEFAULT_INPUT,
    flip: bool = False,
    batch_size: int = 32,
    lr: float = 2e-3,
    val_fraction: float = 0.15,
    min_per_class: int = MIN_IMAGES_PER_CLASS,
    work_dir: str | Path | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Train on ``data_dir`` and write a ``task: classify`` bundle with ``metrics.json`` to ``out_dir``.

    Args:
        data_dir: training images, one subfolder per class (sorted names = labels).
        out_dir: the bundle folder (created).
        seed: weight init, shuffling and augmentation seed.
        epochs: passes over the training split.
        val_dir: held-out images with the same class folders; reported instead
            of the validation split (which then only picks the best epoch).
        name: model name (manifest id ``<name>-v1``); default: the data folder's name.
        input_spec: model input (see :func:`parse_input_size`).
        flip: allow left-right flips in augmentation (wrong for left/right classes).
        batch_size, lr: optimiser settings (Adam(W), cosine decay).
        val_fraction: share of each class hashed into the validation split.
        min_per_class: fewest readable training images a class may have.
        work_dir: where to keep ``classifier.keras`` (optional).
        progress: progress bars and per-epoch logs.

    Returns:
        The contents written to ``metrics.json``.

    Raises:
        DatasetError: unusable data folder (see :func:`scan_image_folder`), too
            few readable images, or held-out classes that differ.
        ValueError: bad arguments.
        RuntimeError: the float TFLite file deviates from Keras.
    """
    data_dir = Path(data_dir)
    out_dir = Path(out_dir)
    model_name = _model_name(name, data_dir)
    folder = scan_image_folder(data_dir, min_per_class=min_per_class)
    everything = load_images(folder, input_spec, min_per_class=min_per_class, progress=progress, desc="load")
    train, val = split_images(everything, val_fraction)
    heldout = _load_heldout(Path(val_dir), folder.classes, input_spec, progress) if val_dir is not None else val
    classes = folder.classes
    log.info("classes %s: %d training, %d validation images", list(classes), len(train.y), len(val.y))

    result = train_classifier_model(
        train.x,
        train.y,
        val.x,
        val.y,
        spec=input_spec,
        num_classes=len(classes),
        seed=seed,
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        augment=Augment(flip=flip),
        progress=progress,
    )
    model = result.model
    if work_dir is not None:
        Path(work_dir).mkdir(parents=True, exist_ok=True)
        model.save(Path(work_dir) / "classifier.keras")

    from ..export import write_bundle

    pick = np.random.default_rng([seed, 0x5EED]).permutation(len(train.x))[:REPRESENTATIVE_IMAGES]
    rep = train.x[np.sort(pick)]
    facts = write_bundle(
        out_dir,
        model,
        stem="classifier",
        input_spec=input_spec,
        outputs={"probs": (1, len(classes))},
        representative=rep,
        check_pixels=rep[:CHECK_IMAGES],
        golden_pixels=val.x[0],
        manifest={
            "id": f"{model_name}-v1",
            "name": f"{model_name} image classifier ({len(classes)} classes)",
            "version": "1.0.0",
            "task": "classify",
            "decoder": {"type": "softmax", "labels": list(classes), "top_k": min(TOP_K, len(classes))},
        },
    )
    results = {p: evaluate_bundle(out_dir, heldout.x, heldout.y, precision=p) for p in ("float32", "int8")}
    for p, r in results.items():
        log.info("held-out %s accuracy %.4f", p, r["accuracy"])
    source = (
        {"kind": "folder", "path": str(val_dir), "used_for_model_selection": False}
        if val_dir is not None
        else {"kind": "validation split", "fraction": val_fraction, "used_for_model_selection": True}
    )
    command = [
        "seedcam-tools train-classifier",
        f"--data {data_dir}",
        f"--out {out_dir}",
        f"--seed {seed}",
        f"--epochs {epochs}",
        *([f"--val-data {val_dir}"] if val_dir is not None else []),
        f"--name {model_name}",
        f"--input-size {input_spec.width}x{input_spec.height}",
        *(["--flip"] if flip else []),
    ]
    per_class_counts = np.bincount(heldout.y, minlength=len(classes)).tolist()
    metrics: dict[str, Any] = {
        "model_params": int(model.count_params()),
        "classes": list(classes),
        "export": facts,
        "summary": {
            "metric": "accuracy",
            "float32": results["float32"]["accuracy"],
            "int8": results["int8"]["accuracy"],
        },
        "heldout": {
            "source": source,
            "images": len(heldout.y),
            "images_per_class": dict(zip(classes, per_class_counts, strict=True)),
            "unreadable_skipped": len(heldout.unreadable),
            **results,
        },
        "training": {
            "data": str(data_dir),
            "images": len(train.y),
            "validation_images": len(val.y),
            "unreadable_skipped": len(everything.unreadable),
            "seed": seed,
            "epochs": epochs,
            "batch_size": batch_size,
            "lr": lr,
            "best_epoch": result.best_epoch,
            "best_val_accuracy": result.best_val_accuracy,
            "train_seconds": result.train_seconds,
            "input": input_spec.to_dict(),
            "augment": asdict(Augment(flip=flip)),
            "history": result.history,
        },
        "reproduce": " ".join(command),
    }
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics

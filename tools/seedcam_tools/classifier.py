"""Train an image classifier from a folder of the user's images and ship it as a model bundle.

The chain (``seedcam-tools train-classifier``): scan ``DATA/<class>/<image>`` →
hash split into training / validation → decode and resize with the firmware's
preprocessing → train (:mod:`seedcam_tools.train_classifier`) keeping the best
validation epoch → :func:`~seedcam_tools.export.write_bundle` (float32, the
float-vs-Keras check, full INT8, goldens, manifest) → accuracy of both
``.tflite`` files on the held-out images → ``metrics.json``.

Held-out images: a separate folder (``val_dir``, never used for training or
model selection) when given; otherwise the validation split, which also
picked the best epoch (``metrics.json`` says which).
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from seedcam_firmware.inference.manifest import load_manifest
from seedcam_firmware.inference.preprocess import InputSpec, normalise
from seedcam_firmware.inference.runtime import Model

from .classifierdata import (
    MIN_IMAGES_PER_CLASS,
    DatasetError,
    LoadedImages,
    load_images,
    scan_image_folder,
    split_images,
)
from .train_classifier import Augment, train_classifier_model

__all__ = [
    "DEFAULT_INPUT",
    "evaluate_bundle",
    "parse_input_size",
    "train_classifier",
]

log = logging.getLogger(__name__)

#: the default model input: the whole frame squeezed to 96 x 96, RGB, pixels / 255
DEFAULT_INPUT = InputSpec(width=96, height=96, crop_top=0.0, color_order="RGB", mean=0.0, std=255.0)
#: INT8 calibration images (from the training split) and float-check images
REPRESENTATIVE_IMAGES = 300
CHECK_IMAGES = 100
TOP_K = 3


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


def evaluate_bundle(
    bundle_dir: str | Path,
    pixels: np.ndarray,
    labels: np.ndarray,
    *,
    precision: str,
    num_threads: int = 1,
) -> dict[str, Any]:
    """Accuracy of one precision of a classifier bundle on uint8 model pixels.

    Args:
        bundle_dir: the bundle folder (its ``manifest.json`` is loaded and its sha256 checked).
        pixels: N x H x W x 3 uint8 pixels, already cropped and resized by the
            manifest's input spec (as :func:`~seedcam_firmware.inference.preprocess.crop_resize` does).
        labels: N class indices into the manifest's ``decoder.labels``.
        precision: ``"int8"`` or ``"float32"``.
        num_threads: interpreter threads.

    Returns:
        ``accuracy``, ``top_k_accuracy`` (k = the decoder's ``top_k``), per-class
        accuracy, the confusion matrix (rows: truth, columns: prediction) and the
        median invoke time.

    Raises:
        BundleError: the manifest or file is invalid.
        ModelError: the runtime rejects the model.
        ValueError: no images, or pixels / labels of mismatched length.
    """
    if len(pixels) == 0 or len(pixels) != len(labels):
        raise ValueError("need the same, non-zero number of images and labels")
    manifest = load_manifest(bundle_dir, precision=precision)
    classes = list(manifest.decoder.get("labels", []))
    k = int(manifest.decoder.get("top_k", 1))
    model = Model(manifest.file, input_shape=manifest.input_shape, outputs=manifest.outputs, num_threads=num_threads)
    x = normalise(pixels, manifest.input)
    probs = np.empty((len(x), len(classes)), np.float32)
    times = []
    for i in range(len(x)):
        t0 = time.perf_counter()
        probs[i] = model.invoke(x[i : i + 1])["probs"][0]
        times.append(time.perf_counter() - t0)
    pred = probs.argmax(axis=1)
    labels = np.asarray(labels, np.int64)
    confusion = np.zeros((len(classes), len(classes)), np.int64)
    np.add.at(confusion, (labels, pred), 1)
    top = np.argsort(-probs, axis=1)[:, :k]
    per_class = {
        c: float(confusion[j, j] / confusion[j].sum()) for j, c in enumerate(classes) if confusion[j].sum() > 0
    }
    return {
        "model": manifest.file.name,
        "precision": precision,
        "images": len(x),
        "accuracy": float((pred == labels).mean()),
        "top_k": k,
        "top_k_accuracy": float((top == labels[:, None]).any(axis=1).mean()),
        "per_class_accuracy": per_class,
        "confusion": confusion.tolist(),
        "invoke_ms_median": 1000.0 * float(np.median(times)),
    }


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

    from .export import write_bundle

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

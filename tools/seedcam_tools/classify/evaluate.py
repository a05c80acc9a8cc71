"""Accuracy of a classifier bundle as the firmware runs it: top-1, top-k, per class, the confusion matrix."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from seedcam_firmware.inference.manifest import load_manifest
from seedcam_firmware.inference.preprocess import normalise
from seedcam_firmware.inference.runtime import Model

__all__ = ["evaluate_bundle"]


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

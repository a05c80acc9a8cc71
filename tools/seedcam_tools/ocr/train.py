"""Train the OCR model on synthetic plate crops (seeded, reproducible on one machine).

Data seeds: training ``[0, samples)``, validation ``[5_000_000, 5_000_000 + val)``
(used only to report progress), held-out evaluation from ``10_000_000`` (see
:mod:`seedcam_tools.ocr.data`; never used here).

Loss: CTC (``tf.nn.ctc_loss`` on the logits, blank = the last class); Adam with
warm-up and cosine decay; batches shuffled and mildly varied by
:func:`augment_batch`, all seeded. Texts are read with best-path (greedy)
decoding, the firmware's :func:`~seedcam_firmware.inference.ctc.greedy_decode`.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from seedcam_firmware.inference.ctc import greedy_decode

from ..train_speed import inference_model, resolve_compute, training_model
from .data import (
    ALPHABET,
    BLANK_INDEX,
    HELDOUT_SEED_BASE,
    OCR_INPUT,
    TIME_STEPS,
    VAL_SEED_BASE,
    OcrData,
    generate_cached,
)
from .evaluate import line_metrics

__all__ = [
    "OcrTrainMetrics",
    "augment_batch",
    "ctc_loss",
    "read_texts",
    "train_ocr",
    "train_on_data",
    "validation_metrics",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OcrTrainMetrics:
    """Validation metrics of a trained model and how it was trained."""

    line_accuracy: float
    cer: float
    val_samples: int
    samples: int
    epochs: int
    batch_size: int
    learning_rate: float
    seed: int
    train_seconds: float
    render_seconds: float
    final_loss: float
    random_world_fraction: float = 0.0
    continued_from: str = ""
    width_mult: float = 1.0
    context_blocks: int = 3
    residual_blocks: int = 0
    init_width_mult: float | None = None
    compute: str = "float32"

    def to_dict(self) -> dict[str, float]:
        """As a JSON-friendly dict."""
        return asdict(self)


def ctc_loss(y_true: Any, y_pred: Any) -> Any:
    """Per-sample CTC loss of ``[B, T, K]`` logits; ``y_true`` is ``[B, L]`` class indices padded with -1."""
    import tensorflow as tf

    labels = tf.cast(y_true, tf.int32)
    idx = tf.where(labels >= 0)
    sparse = tf.SparseTensor(idx, tf.gather_nd(labels, idx), tf.shape(labels, out_type=tf.int64))
    logit_length = tf.fill([tf.shape(y_pred)[0]], tf.shape(y_pred)[1])
    return tf.nn.ctc_loss(
        labels=sparse,
        logits=tf.cast(y_pred, tf.float32),
        label_length=None,
        logit_length=logit_length,
        logits_time_major=False,
        blank_index=-1,
    )


def read_texts(probs: np.ndarray) -> list[str]:
    """Greedy CTC readings of ``[N, T, K]`` probabilities (blank = :data:`BLANK_INDEX`)."""
    return [greedy_decode(p, ALPHABET, BLANK_INDEX).text for p in probs]


def validation_metrics(model: Any, data: OcrData) -> dict[str, float]:
    """Line accuracy and CER of a Keras model on ``data``."""
    from seedcam_firmware.inference.preprocess import normalise

    out = model.predict(normalise(data.x, OCR_INPUT), batch_size=256, verbose=0)
    return line_metrics(read_texts(out["probs"]), data.texts)


def augment_batch(x: Any, seed: Any, *, p: float = 0.8) -> Any:
    """Mild random variations of a uint8 batch of model crops (``[B, H, W, 3]`` tensor), in TensorFlow ops.

    Each crop, with probability ``p``: a small affine change (what a slightly
    different box or plate quadrilateral gives: +-5 % scale, +-3 % / +-6 %
    shift), gain 0.75..1.25 and offset +-20 grey levels (the renders bring their
    own noise); rounded back to whole grey levels. Rendering new scenes is the expensive
    part of the data; these stretch each rendered crop further.

    Args:
        x: uint8 ``[B, H, W, 3]`` crops.
        seed: int64 ``[2]`` stateless-random seed; the same seed gives the same result.
        p: probability that a crop is varied.

    Returns:
        float32 ``[B, H, W, 3]`` crops on the 0..255 scale.
    """
    import tensorflow as tf

    img = tf.cast(x, tf.float32)
    shape = tf.shape(img)
    b, h, w = shape[0], tf.cast(shape[1], tf.float32), tf.cast(shape[2], tf.float32)
    u = tf.random.stateless_uniform(tf.stack([b, 7]), seed=seed)
    on = tf.cast(u[:, 0] < p, tf.float32)

    def spread(col: int, amount: float) -> Any:  # uniform in +-amount where varied, 0 elsewhere
        return (u[:, col] * 2.0 - 1.0) * amount * on

    sx, sy = 1.0 + spread(1, 0.05), 1.0 + spread(2, 0.05)
    tx, ty = spread(3, 0.03) * w, spread(4, 0.06) * h
    cx, cy = (w - 1.0) / 2.0, (h - 1.0) / 2.0
    zero = tf.zeros_like(sx)
    # output pixel (x, y) samples input ((x - cx - tx) / sx + cx, (y - cy - ty) / sy + cy)
    transforms = tf.stack(
        [1.0 / sx, zero, cx - (cx + tx) / sx, zero, 1.0 / sy, cy - (cy + ty) / sy, zero, zero], axis=1
    )
    img = tf.raw_ops.ImageProjectiveTransformV3(
        images=img,
        transforms=transforms,
        output_shape=shape[1:3],
        fill_value=0.0,
        interpolation="BILINEAR",
        fill_mode="NEAREST",
    )
    gain = (1.0 + spread(5, 0.25))[:, None, None, None]
    offset = spread(6, 20.0)[:, None, None, None]
    return tf.clip_by_value(tf.floor(img * gain + offset + 0.5), 0.0, 255.0)


def _dataset(data: OcrData, batch_size: int, seed: int, augment: bool) -> Any:
    """Shuffled (seeded) batches of (normalised pixels, ``{"logits": labels}``); pixels stay uint8 until batched."""
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices((data.x, data.labels))
    ds = ds.shuffle(len(data.x), seed=seed, reshuffle_each_iteration=True).batch(batch_size)
    # one stateless seed per batch, the same stream every epoch (the batches differ by the reshuffle)
    seeds = tf.data.Dataset.random(seed=seed).batch(2)
    mean, std = np.float32(OCR_INPUT.mean), np.float32(OCR_INPUT.std)

    def prepare(xy: Any, s: Any) -> Any:
        x, y = xy
        pixels = augment_batch(x, s) if augment else tf.cast(x, tf.float32)
        return (pixels - mean) / std, {"logits": y}  # the arithmetic of preprocess.normalise

    return tf.data.Dataset.zip((ds, seeds)).map(prepare).prefetch(2)


def train_on_data(
    train: OcrData,
    val: OcrData | None,
    *,
    seed: int,
    epochs: int,
    batch_size: int = 64,
    lr: float = 2e-3,
    progress: bool = False,
    width_mult: float = 1.0,
    augment: bool = True,
    init_from: Path | None = None,
    context_blocks: int = 3,
    residual_blocks: int = 0,
    init_width_mult: float | None = None,
    compute: str = "auto",
) -> tuple[Any, dict[str, list[float]]]:
    """Train a fresh model on ``train``, or continue one: a saved ``.keras`` or a float32 ``.tflite`` at ``init_from``.

    Returns ``(keras model, history dict)``.

    A ``.tflite`` of a shallower network (``ocr-v3``: 3 context blocks, no residual blocks)
    is deepened to ``context_blocks`` / ``residual_blocks`` (:func:`~.model.deepen_ocr`); one of a
    narrower network (``init_width_mult``, the channel multiplier it was trained at) is widened to
    ``width_mult`` (:func:`~seedcam_tools.widen.widen`).

    Adam with a short linear warm-up and cosine decay over ``epochs``, batches
    shuffled and (``augment``) varied by :func:`augment_batch`; deterministic for
    a given seed and data. ``compute``: ``float32``, ``bfloat16`` (activations; weights stay
    float32) or ``auto`` (:func:`~seedcam_tools.train_speed.resolve_compute`); the batch norms
    train fused either way and the model returned is plain float32 (:mod:`seedcam_tools.train_speed`).
    """
    import keras
    import tensorflow as tf

    from .model import build_ocr_model, ocr_from_tflite

    keras.utils.set_random_seed(seed)
    tf.config.experimental.enable_op_determinism()  # same seed and data -> the same weights
    if init_from is not None and Path(init_from).suffix == ".keras":  # continue a saved model
        model = keras.models.load_model(init_from, custom_objects={"ctc_loss": ctc_loss}, compile=False)
    elif init_from is not None and Path(init_from).suffix == ".tflite":
        from seedcam_firmware.inference.preprocess import normalise

        model = ocr_from_tflite(
            init_from,
            normalise(train.x[:512], OCR_INPUT),
            width_mult=width_mult,
            context_blocks=context_blocks,
            residual_blocks=residual_blocks,
            file_width_mult=init_width_mult,
        )
    else:
        model = build_ocr_model(width_mult, context_blocks=context_blocks, residual_blocks=residual_blocks)
    model = training_model(model, bfloat16=resolve_compute(compute) == "bfloat16")
    steps = epochs * math.ceil(len(train.x) / batch_size)
    warmup = min(300, steps // 10)
    schedule = keras.optimizers.schedules.CosineDecay(
        lr * 0.05, decay_steps=max(1, steps - warmup), alpha=0.01, warmup_target=lr, warmup_steps=warmup
    )
    model.compile(optimizer=keras.optimizers.Adam(schedule, clipnorm=5.0), loss={"logits": ctc_loss})
    callbacks: list[keras.callbacks.Callback] = []
    if val is not None:
        val_data = val  # OcrData: the method below does not see val narrowed

        class _Val(keras.callbacks.Callback):
            def on_epoch_end(self, epoch: int, logs: dict[str, float] | None = None) -> None:
                log.info("epoch %d: %s", epoch + 1, validation_metrics(self.model, val_data))

        callbacks.append(_Val())
    hist = model.fit(
        _dataset(train, batch_size, seed, augment),
        epochs=epochs,
        shuffle=False,  # the dataset shuffles itself, seeded
        verbose=2 if progress else 0,
        callbacks=callbacks,
    )
    return inference_model(model), hist.history


def train_ocr(
    out_dir: Path,
    *,
    seed: int = 0,
    samples: int = 40000,
    first_crop: int = 0,
    epochs: int = 8,
    batch_size: int = 64,
    lr: float = 2e-3,
    progress: bool = False,
    random_fraction: float = 0.0,
    init_from: Path | None = None,
    width_mult: float = 1.0,
    context_blocks: int = 3,
    residual_blocks: int = 0,
    init_width_mult: float | None = None,
    compute: str = "auto",
) -> OcrTrainMetrics:
    """Generate plate crops, train, and save ``ocr.keras`` + ``train_metrics.json`` in ``out_dir``.

    The rendered crops are kept in ``out_dir`` and reused by a rerun with the same
    seeds and unchanged code (see :func:`~seedcam_tools.ocr.data.generate_cached`).

    Args:
        out_dir: output folder (created).
        seed: Keras/TF/NumPy seed for weight init and shuffling.
        samples: number of training crops (seeds ``first_crop .. first_crop + samples - 1``).
        first_crop: the seed of the first training crop: a continued round given another
            one trains on crops the earlier rounds did not see.
        epochs: passes over the data.
        batch_size, lr: optimiser settings.
        progress: show progress bars / per-epoch logs.
        random_fraction: share of crops from the randomized world (:mod:`seedcam_tools.world`).
        init_from: continue from this saved ``ocr.keras``, or a float32 ``.tflite`` of the same architecture.
        width_mult: channel multiplier of a fresh model (1.0: the shipped width); ignored when continuing a ``.keras``.
        context_blocks, residual_blocks: depth of a fresh or deepened model (:func:`~.model.build_ocr_model`);
            ignored when continuing a ``.keras``.
        init_width_mult: the channel multiplier of the ``init_from`` ``.tflite``'s network when it is
            narrower than ``width_mult`` (it is then widened); None: the same width.
        compute: ``auto``, ``float32`` or ``bfloat16`` (:func:`~seedcam_tools.train_speed.resolve_compute`).

    Raises:
        ValueError: the training seeds would reach the validation seeds, ``samples`` < 1, or an
            unknown ``compute``.
    """
    compute = resolve_compute(compute)  # before rendering: a wrong value fails at once
    if samples < 1 or first_crop < 0 or first_crop + samples > VAL_SEED_BASE:
        raise ValueError(f"training crop seeds must lie within 0..{VAL_SEED_BASE} (the validation seeds start there)")
    assert VAL_SEED_BASE < HELDOUT_SEED_BASE
    assert TIME_STEPS * 4 == OCR_INPUT.width
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    crops = out_dir / "crops"
    train = generate_cached(crops, first_crop, samples, progress=progress, random_fraction=random_fraction)
    val = generate_cached(crops, VAL_SEED_BASE, max(64, min(1000, samples // 10)), random_fraction=random_fraction)
    render_secs = time.monotonic() - t0
    t0 = time.monotonic()
    model, hist = train_on_data(
        train,
        val,
        seed=seed,
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        progress=progress,
        init_from=init_from,
        width_mult=width_mult,
        context_blocks=context_blocks,
        residual_blocks=residual_blocks,
        init_width_mult=init_width_mult,
        compute=compute,
    )
    secs = time.monotonic() - t0
    model.save(out_dir / "ocr.keras")
    m = validation_metrics(model, val)
    metrics = OcrTrainMetrics(
        line_accuracy=float(m["line_accuracy"]),
        cer=float(m["cer"]),
        val_samples=len(val.x),
        samples=samples,
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=lr,
        seed=seed,
        train_seconds=secs,
        render_seconds=render_secs,
        final_loss=float(hist["loss"][-1]),
        random_world_fraction=random_fraction,
        continued_from=str(init_from or ""),
        width_mult=width_mult,
        context_blocks=context_blocks,
        residual_blocks=residual_blocks,
        init_width_mult=init_width_mult,
        compute=compute,
    )
    (out_dir / "train_metrics.json").write_text(json.dumps(metrics.to_dict(), indent=2) + "\n")
    return metrics

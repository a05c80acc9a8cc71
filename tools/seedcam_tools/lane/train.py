"""Train the lane model on synthetic scenes (seeded, reproducible on one machine).

Data seeds: training ``[first_scene, first_scene + samples)`` (``first_scene`` 0 unless a
continued round asks for scenes the earlier rounds did not see), validation ``[5_000_000, 5_000_000 + val)``
(used only to report progress), held-out evaluation from ``10_000_000`` (see
:mod:`seedcam_tools.lane.data`; never used here).
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

from ..train_speed import inference_model, resolve_compute, training_model
from .data import (
    HELDOUT_SEED_BASE,
    LANE_INPUT,
    LaneData,
    decode_targets,
    encode_targets,
    generate,
)

__all__ = ["VAL_SEED_BASE", "LaneMetrics", "train_lane", "train_on_data"]

log = logging.getLogger(__name__)

VAL_SEED_BASE = 5_000_000
#: per-component weights of the lane-state loss [offset, heading, curvature, width]
STATE_WEIGHTS = (2.0, 2.0, 0.5, 0.3)


@dataclass(frozen=True)
class LaneMetrics:
    """Validation metrics of a trained model: lane errors on scenes with both lines in view, and
    (``one_line_*``) on those with one line in view."""

    offset_mae_m: float
    heading_mae_rad: float
    curvature_mae_per_m: float
    width_mae_m: float
    presence_accuracy: float
    samples: int
    epochs: int
    train_seconds: float
    random_world_fraction: float = 0.0
    first_scene: int = 0
    lr: float = 2e-3
    width_mult: float = 1.0
    blocks: int = 0
    continued_from: str | None = None
    init_width_mult: float | None = None
    one_line_weight: float = 1.0
    compute: str = "float32"
    one_line_offset_mae_m: float | None = None
    one_line_heading_mae_rad: float | None = None
    one_line_samples: int = 0

    def to_dict(self) -> dict[str, Any]:
        """As a JSON-friendly dict."""
        return asdict(self)


def _state_loss(y_true, y_pred):  # type: ignore[no-untyped-def]
    """Weighted Huber loss; y_true packs 4 targets + a per-sample weight (0 when lost)."""
    import tensorflow as tf

    w = y_true[:, 4:5]
    err = tf.abs(y_true[:, :4] - y_pred)
    hub = tf.where(err < 0.1, 0.5 * err * err / 0.1, err - 0.05)
    return tf.reduce_sum(hub * tf.constant(STATE_WEIGHTS) * w, axis=-1)


def _presence_loss(y_true, y_pred):  # type: ignore[no-untyped-def]
    import keras

    return keras.losses.binary_crossentropy(y_true, y_pred, from_logits=True)


def _targets(data: LaneData, one_line_weight: float = 1.0) -> dict[str, np.ndarray]:
    """Training targets; a scene's lane-state weight is 0 with no line in view, ``one_line_weight`` with one."""
    lines = (data.present > 0.5).sum(axis=1, keepdims=True)
    weight = np.where(lines == 0, 0.0, np.where(lines == 1, one_line_weight, 1.0)).astype(np.float32)
    return {
        "mask": data.mask.astype(np.float32) / 255.0,
        "lane_state": np.concatenate([encode_targets(data.y), weight], axis=1),
        "presence": data.present.astype(np.float32),
    }


def validation_metrics(model, data: LaneData) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Lane errors of a Keras model on ``data`` (scenes with both lines in view; ``one_line_*``: with one)
    and presence accuracy."""
    from seedcam_firmware.inference.preprocess import normalise

    out = model.predict(normalise(data.x, LANE_INPUT), batch_size=256, verbose=0)
    pred = decode_targets(out["lane_state"])
    lines = (data.present > 0.5).sum(axis=1)
    errors = np.abs(pred - data.y)
    err, one = errors[lines == 2], errors[lines == 1]
    pres = ((out["presence"] > 0) == (data.present > 0.5)).mean()
    return {
        "offset_mae_m": float(err[:, 0].mean()),
        "heading_mae_rad": float(err[:, 1].mean()),
        "curvature_mae_per_m": float(err[:, 2].mean()),
        "width_mae_m": float(err[:, 3].mean()),
        "presence_accuracy": float(pres),
        "one_line_offset_mae_m": float(one[:, 0].mean()) if len(one) else None,
        "one_line_heading_mae_rad": float(one[:, 1].mean()) if len(one) else None,
        "one_line_samples": len(one),
    }


def _dataset(data: LaneData, batch_size: int, seed: int, one_line_weight: float = 1.0) -> Any:
    """Shuffled (seeded) batches of (normalised pixels, targets); pixels stay uint8 until batched.

    The whole set normalised at once is float32, four times the uint8 frames, and Keras copies
    it again: 64 000 scenes did not fit in 24 GB that way.
    """
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices((data.x, _targets(data, one_line_weight)))
    ds = ds.shuffle(len(data.x), seed=seed, reshuffle_each_iteration=True).batch(batch_size)
    mean, std = np.float32(LANE_INPUT.mean), np.float32(LANE_INPUT.std)

    def prepare(x: Any, y: Any) -> Any:
        return (tf.cast(x, tf.float32) - mean) / std, y  # the arithmetic of preprocess.normalise

    return ds.map(prepare).prefetch(2)


def train_on_data(
    train: LaneData,
    val: LaneData | None,
    *,
    seed: int,
    epochs: int,
    batch_size: int = 64,
    lr: float = 2e-3,
    progress: bool = False,
    init_from: Path | None = None,
    width_mult: float = 1.0,
    blocks: int = 0,
    one_line_weight: float = 1.0,
    init_width_mult: float | None = None,
    compute: str = "auto",
):  # type: ignore[no-untyped-def]
    """Train a fresh model on ``train`` (or continue ``init_from``: a saved ``lane.keras``, or a
    float32 ``.tflite`` of the architecture ``width_mult`` and ``blocks`` shape); returns
    ``(keras model, history dict)``.

    Cosine learning-rate decay over ``epochs``; deterministic for a given seed and data.
    ``width_mult`` and ``blocks`` shape a fresh model (:func:`~.model.build_lane_model`); a
    ``.tflite`` of a narrower network (``init_width_mult``, the channel scale it was trained at) is
    widened to ``width_mult`` (:func:`~seedcam_tools.widen.widen`).
    ``one_line_weight`` weighs the lane-state loss of scenes with one line in view against those
    with both (1: the same; the AGV relies on them where a line is worn away or out of view).
    ``compute``: ``float32``, ``bfloat16`` (activations; weights stay float32) or ``auto``
    (:func:`~seedcam_tools.train_speed.resolve_compute`); the batch norms train fused either way
    and the model returned is plain float32 (:mod:`seedcam_tools.train_speed`).
    """
    import keras
    import tensorflow as tf

    from seedcam_firmware.inference.preprocess import normalise

    from ..tflite_weights import load_tflite_weights
    from ..widen import widen
    from .model import build_lane_model

    keras.utils.set_random_seed(seed)
    tf.config.experimental.enable_op_determinism()  # same seed and data -> the same weights
    if init_from is None:
        model = build_lane_model(width_mult, blocks)
    elif init_from.suffix == ".tflite":  # a shipped float32 file: no Keras file of its run needed
        file_width = width_mult if init_width_mult is None else init_width_mult
        model = build_lane_model(file_width, blocks)
        load_tflite_weights(model, init_from, normalise(train.x[:256], LANE_INPUT))
        if file_width != width_mult:
            narrow, model = model, build_lane_model(width_mult, blocks)
            widen(narrow, model)
    else:
        model = keras.models.load_model(
            init_from, custom_objects={"_state_loss": _state_loss, "_presence_loss": _presence_loss}, compile=False
        )
    model = training_model(model, bfloat16=resolve_compute(compute) == "bfloat16")
    steps = epochs * math.ceil(len(train.x) / batch_size)
    schedule = keras.optimizers.schedules.CosineDecay(lr, decay_steps=steps, alpha=0.02)
    model.compile(
        optimizer=keras.optimizers.Adam(schedule),
        loss={"mask": "binary_crossentropy", "lane_state": _state_loss, "presence": _presence_loss},
        loss_weights={"mask": 0.5, "lane_state": 1.0, "presence": 0.3},
    )
    callbacks: list[keras.callbacks.Callback] = []
    if val is not None:

        class _Val(keras.callbacks.Callback):
            def on_epoch_end(self, epoch, logs=None):  # type: ignore[no-untyped-def]
                log.info("epoch %d: %s", epoch + 1, validation_metrics(self.model, val))

        callbacks.append(_Val())
    hist = model.fit(
        _dataset(train, batch_size, seed, one_line_weight),
        epochs=epochs,
        verbose=2 if progress else 0,
        callbacks=callbacks,
    )
    del tf
    return inference_model(model), hist.history


def train_lane(
    out_dir: Path,
    *,
    seed: int = 0,
    samples: int = 48000,
    first_scene: int = 0,
    epochs: int = 6,
    progress: bool = False,
    random_fraction: float = 0.0,
    init_from: Path | None = None,
    lr: float = 2e-3,
    width_mult: float = 1.0,
    blocks: int = 0,
    one_line_weight: float = 1.0,
    init_width_mult: float | None = None,
    compute: str = "auto",
) -> LaneMetrics:
    """Generate data, train, and save ``lane.keras`` + ``train_metrics.json`` in ``out_dir``.

    Args:
        out_dir: output folder (created).
        seed: Keras/TF/NumPy seed for weight init and shuffling.
        samples: number of training scenes (seeds ``first_scene .. first_scene + samples - 1``).
        first_scene: the seed of the first training scene: a continued round given another
            one trains on scenes the earlier rounds did not see.
        epochs: passes over the data.
        progress: show progress bars / per-epoch logs.
        random_fraction: share of scenes from the randomized world (:mod:`seedcam_tools.world`).
        init_from: continue this saved ``lane.keras``, or this float32 ``.tflite`` (of the
            architecture ``width_mult`` and ``blocks`` shape), instead of a fresh model.
        lr: peak learning rate.
        width_mult, blocks: the shape of a fresh model (:func:`~.model.build_lane_model`).
        one_line_weight: lane-state loss weight of scenes with one line in view (both: 1).
        init_width_mult: the channel scale of the ``init_from`` ``.tflite``'s network when it is
            narrower than ``width_mult`` (it is then widened); None: the same scale.
        compute: ``auto``, ``float32`` or ``bfloat16`` (:func:`~seedcam_tools.train_speed.resolve_compute`).

    Raises:
        ValueError: training scene seeds outside their range, or an unknown ``compute``.
    """
    compute = resolve_compute(compute)  # before rendering: a wrong value fails at once
    if samples < 1 or first_scene < 0 or first_scene + samples > VAL_SEED_BASE:
        raise ValueError(f"training scene seeds must lie within 0..{VAL_SEED_BASE} (the validation seeds start there)")
    assert VAL_SEED_BASE < HELDOUT_SEED_BASE
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    train = generate(first_scene, samples, progress=progress, random_fraction=random_fraction)
    val = generate(VAL_SEED_BASE, max(64, min(2000, samples // 10)), random_fraction=random_fraction)
    t0 = time.monotonic()
    model, _ = train_on_data(
        train,
        val,
        seed=seed,
        epochs=epochs,
        lr=lr,
        progress=progress,
        init_from=init_from,
        width_mult=width_mult,
        blocks=blocks,
        one_line_weight=one_line_weight,
        init_width_mult=init_width_mult,
        compute=compute,
    )
    secs = time.monotonic() - t0
    model.save(out_dir / "lane.keras")
    m = validation_metrics(model, val)
    metrics = LaneMetrics(
        samples=samples,
        first_scene=first_scene,
        epochs=epochs,
        train_seconds=secs,
        random_world_fraction=random_fraction,
        lr=lr,
        width_mult=width_mult,
        blocks=blocks,
        continued_from=None if init_from is None else str(init_from),
        init_width_mult=init_width_mult,
        one_line_weight=one_line_weight,
        compute=compute,
        **m,
    )
    (out_dir / "train_metrics.json").write_text(json.dumps(metrics.to_dict(), indent=2))
    return metrics

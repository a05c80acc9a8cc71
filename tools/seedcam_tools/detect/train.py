"""Train the sign/plate detector on synthetic scenes (seeded, reproducible on one machine).

Anchor matching: an anchor is positive for the truth box it overlaps with IoU >=
0.45, and every truth box also claims its best anchor; anchors whose best IoU lies
in [0.3, 0.45) are ignored; the rest are background. Augmentation: half the
batches' samples are mirrored left-right (turn-left and turn-right swap labels). Loss: sigmoid focal loss
(alpha 0.25, gamma 2) on classes plus Huber on the box encodings of positives,
both normalised by the number of positives in the batch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from seedcam_firmware.inference.anchors import encode_boxes, grid_anchors
from seedcam_firmware.inference.boxes import iou_matrix
from seedcam_firmware.inference.preprocess import normalise

from ..tflite_weights import TfliteWeightsError, load_tflite_weights
from ..train_speed import checkpoint_callback, inference_model, resolve_compute, training_model
from ..widen import widen
from .data import DETECT_INPUT, LABELS, VAL_SEED_BASE, DetectionData, data_from_frames, generate, mix
from .model import ANCHOR_LEVELS, DETECTOR_BLOCKS, DETECTOR_WIDTH, build_detector, deepen

__all__ = ["assign_targets", "train_detector", "train_on_data"]

log = logging.getLogger(__name__)

POSITIVE_IOU = 0.45
IGNORE_IOU = 0.3
FOCAL_ALPHA = 0.25
FOCAL_GAMMA = 2.0


def anchors() -> np.ndarray:
    """The detector's anchors (N x 4 normalised cy, cx, h, w)."""
    return grid_anchors(DETECT_INPUT.width, DETECT_INPUT.height, ANCHOR_LEVELS)


def _anchor_corners(a: np.ndarray) -> np.ndarray:
    return np.stack([a[:, 1] - a[:, 3] / 2, a[:, 0] - a[:, 2] / 2, a[:, 1] + a[:, 3] / 2, a[:, 0] + a[:, 2] / 2], 1)


def assign_targets(boxes: np.ndarray, classes: np.ndarray, anchor_array: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Targets of one sample.

    Returns:
        ``(box_targets N x 5 float32 = 4 encodings + positive flag, labels N int8)``
        where a label is -1 ignore, 0 background, ``1 + class`` for a positive.
        A truth box of negative class (difficult) makes the anchors on it ignored.
    """
    n = len(anchor_array)
    box_t = np.zeros((n, 5), np.float32)
    labels = np.zeros(n, np.int8)
    ignored = classes < 0
    if ignored.any():  # difficult objects: no anchor learns from them, either way
        corners = _anchor_corners(anchor_array.astype(np.float64))
        labels[iou_matrix(boxes[ignored].astype(np.float64), corners).max(axis=0) >= IGNORE_IOU] = -1
        boxes, classes = boxes[~ignored], classes[~ignored]
    if len(boxes) == 0:
        return box_t, labels
    iou = iou_matrix(boxes.astype(np.float64), _anchor_corners(anchor_array.astype(np.float64)))
    best_gt = iou.argmax(axis=0)
    best_iou = iou.max(axis=0)
    labels[(best_iou >= IGNORE_IOU) & (best_iou < POSITIVE_IOU)] = -1
    positive = best_iou >= POSITIVE_IOU
    forced = iou.argmax(axis=1)  # every truth box claims its best anchor
    best_gt[forced] = np.arange(len(boxes))
    positive[forced] = True
    labels[positive] = (classes[best_gt[positive]] + 1).astype(np.int8)
    box_t[positive, :4] = encode_boxes(boxes[best_gt[positive]], anchor_array[positive])
    box_t[positive, 4] = 1.0
    return box_t, labels


def _focal_loss(y_true: Any, y_pred: Any) -> Any:
    """Sigmoid focal loss; ``y_true`` = C one-hot targets + a valid (not ignored) flag.

    Written with ``keras.ops``, so it trains on any Keras backend (TensorFlow here, JAX on a GPU machine).
    """
    from keras import ops

    target, valid = y_true[..., :-1], y_true[..., -1:]
    p = ops.clip(y_pred, 1e-6, 1.0 - 1e-6)
    ce = -(target * ops.log(p) + (1.0 - target) * ops.log(1.0 - p))
    p_t = target * p + (1.0 - target) * (1.0 - p)
    alpha = target * FOCAL_ALPHA + (1.0 - target) * (1.0 - FOCAL_ALPHA)
    per_sample = ops.sum(alpha * ops.power(1.0 - p_t, FOCAL_GAMMA) * ce * valid, axis=(1, 2))
    positives = ops.maximum(ops.sum(target), 1.0)
    return per_sample * ops.cast(ops.shape(y_true)[0], "float32") / positives


def _box_loss(y_true: Any, y_pred: Any) -> Any:
    """Huber loss on the encodings of positive anchors; ``y_true`` = 4 encodings + positive flag."""
    from keras import ops

    positive = y_true[..., 4:5]
    err = ops.abs(y_true[..., :4] - y_pred)
    huber = ops.where(err < 1.0, 0.5 * err * err, err - 0.5)
    per_sample = ops.sum(huber * positive, axis=(1, 2))
    positives = ops.maximum(ops.sum(positive), 1.0)
    return per_sample * ops.cast(ops.shape(y_true)[0], "float32") / positives


#: a mirrored sample's encodings: tx changes sign; the positive flag and the rest stay
_MIRROR_SIGNS = np.array([1.0, -1.0, 1.0, 1.0, 1.0], np.float32)


def mirror_permutation() -> np.ndarray:
    """Anchor index of each anchor's left-right mirror image (the grid is symmetric)."""
    parts, start = [], 0
    for level in ANCHOR_LEVELS:
        rows = -(-DETECT_INPUT.height // level.stride)
        cols = -(-DETECT_INPUT.width // level.stride)
        idx = np.arange(rows * cols * len(level.sizes)).reshape(rows, cols, len(level.sizes))
        parts.append(idx[:, ::-1].reshape(-1) + start)
        start += idx.size
    return np.concatenate(parts)


def _mirrored_labels() -> np.ndarray:
    """Lookup ``label + 1 -> mirrored label`` for labels -1 (ignore), 0 (background), 1 + class."""
    table = np.arange(-1, len(LABELS) + 1)
    left, right = LABELS.index("turn_left") + 1, LABELS.index("turn_right") + 1
    table[left + 1], table[right + 1] = right, left
    return table


CUSTOM_OBJECTS = {"_focal_loss": _focal_loss, "_box_loss": _box_loss}


class _Batches:
    """Builds training batches from per-sample targets (a keras PyDataset, built lazily)."""

    @staticmethod
    def make(
        x: np.ndarray,
        box_t: np.ndarray,
        labels: np.ndarray,
        batch_size: int,
        seed: int,
        *,
        augment: bool = False,
        workers: int = 1,
    ) -> Any:
        import keras

        num_classes = len(LABELS)
        mirror = mirror_permutation()
        swap = _mirrored_labels()

        class Batches(keras.utils.PyDataset):
            def __init__(self) -> None:
                super().__init__(workers=workers)
                self._rng = np.random.default_rng(seed)
                self._order = self._rng.permutation(len(x))
                self._epoch = 0

            def __len__(self) -> int:
                return math.ceil(len(x) / batch_size)

            def __getitem__(self, i: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
                idx = np.sort(self._order[i * batch_size : (i + 1) * batch_size])
                pixels = x[idx]
                boxes = box_t[idx]
                lab = labels[idx].astype(np.int64)
                if augment:
                    flip = np.random.default_rng([seed, self._epoch, i]).random(len(idx)) < 0.5
                    pixels = np.where(flip[:, None, None, None], pixels[:, :, ::-1], pixels)
                    boxes = np.where(flip[:, None, None], boxes[:, mirror] * _MIRROR_SIGNS, boxes)
                    lab = np.where(flip[:, None], swap[lab[:, mirror] + 1], lab)
                cls = np.zeros((*lab.shape, num_classes + 1), np.float32)
                pos = lab > 0
                cls[pos, lab[pos] - 1] = 1.0
                cls[..., -1] = lab >= 0
                return normalise(pixels, DETECT_INPUT), {"boxes": boxes, "scores": cls}

            def on_epoch_end(self) -> None:
                self._order = self._rng.permutation(len(x))
                self._epoch += 1

        return Batches()


def build_targets(data: DetectionData) -> tuple[np.ndarray, np.ndarray]:
    """Targets for every sample: ``(box targets n x N x 5, labels n x N)``."""
    a = anchors()
    box_t = np.zeros((len(data.x), len(a), 5), np.float32)
    labels = np.zeros((len(data.x), len(a)), np.int8)
    for i, (b, c) in enumerate(zip(data.boxes, data.classes, strict=True)):
        box_t[i], labels[i] = assign_targets(b, c, a)
    return box_t, labels


def _detector_from_tflite(path: Path, calibration: np.ndarray, *, width: float, blocks: int) -> Any:
    """A Keras detector with ``blocks`` residual blocks per level, holding the weights of the ``.tflite`` at ``path``.

    The file holds either that architecture or one with fewer blocks per level (then deepened).
    """
    last_error: TfliteWeightsError | None = None
    for fewer in range(blocks, -1, -1):
        model = build_detector(width=width, blocks=fewer)
        try:
            load_tflite_weights(model, path, calibration)
        except TfliteWeightsError as error:
            last_error = error
            continue
        if fewer == blocks:
            return model
        log.info("deepened %s from %d to %d residual blocks per level", Path(path).name, fewer, blocks)
        return deepen(model, blocks, width=width)
    assert last_error is not None  # the loop ran at least once (blocks >= 0)
    raise last_error


def train_on_data(
    train: DetectionData,
    *,
    seed: int,
    epochs: int,
    batch_size: int = 48,
    lr: float = 3e-3,
    progress: bool = False,
    val: DetectionData | None = None,
    init_from: Path | None = None,
    width: float = DETECTOR_WIDTH,
    blocks: int = DETECTOR_BLOCKS,
    checkpoint: Path | None = None,
    workers: int = 1,
    init_width: float | None = None,
    compute: str = "auto",
) -> Any:
    """Train a detector on ``train``; returns the Keras model.

    Starts from fresh weights, or from the Keras model saved at ``init_from``
    (continued training, e.g. on more scenes at a lower ``lr``), or from a shipped
    float32 ``.tflite`` of the same width (:func:`load_tflite_weights`). Cosine
    learning-rate decay with a short warm-up; deterministic for a given seed, data and start
    on the TensorFlow backend (other backends, e.g. JAX on a GPU, are seeded but not bit-exact).
    ``width`` scales the channels of a fresh detector and ``blocks`` adds residual
    blocks per level (a ``.tflite`` start without them is deepened: :func:`deepen`); a ``.tflite``
    start of a narrower network (``init_width``, the channel scale it was trained at) is widened
    to ``width`` (:func:`~seedcam_tools.widen.widen`); ``checkpoint`` is saved after every epoch;
    ``workers`` threads build batches. ``compute``: ``float32``, ``bfloat16`` (activations; weights
    stay float32) or ``auto`` (:func:`~seedcam_tools.train_speed.resolve_compute`); the batch norms
    train fused on the TensorFlow backend either way. The model returned (and checkpointed) is
    plain float32 (:mod:`seedcam_tools.train_speed`), compiled with the training losses.
    """
    import keras

    keras.utils.set_random_seed(seed)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        tf.config.experimental.enable_op_determinism()
    box_t, labels = build_targets(train)
    batches = _Batches.make(train.x, box_t, labels, batch_size, seed, augment=True, workers=workers)
    steps = epochs * len(batches)
    schedule = keras.optimizers.schedules.CosineDecay(
        lr / 10, decay_steps=max(1, steps - steps // 20), alpha=0.01, warmup_target=lr, warmup_steps=steps // 20
    )
    if init_from is None:
        model = build_detector(width=width, blocks=blocks)
    elif Path(init_from).suffix == ".tflite":  # a shipped bundle: its folded weights, BN statistics from our data
        file_width = width if init_width is None else init_width
        calibration = normalise(train.x[:256], DETECT_INPUT)
        model = _detector_from_tflite(init_from, calibration, width=file_width, blocks=blocks)
        if file_width != width:
            narrow, model = model, build_detector(width=width, blocks=blocks)
            widen(narrow, model)
    else:
        model = keras.models.load_model(init_from, custom_objects=CUSTOM_OBJECTS, compile=False)
    losses = {"boxes": _box_loss, "scores": _focal_loss}
    model = training_model(model, bfloat16=resolve_compute(compute) == "bfloat16")
    model.compile(optimizer=keras.optimizers.Adam(schedule, clipnorm=5.0), loss=losses)
    val_batches = None
    if val is not None:
        val_box_t, val_labels = build_targets(val)
        val_batches = _Batches.make(val.x, val_box_t, val_labels, batch_size, seed)
    callbacks = [] if checkpoint is None else [checkpoint_callback(checkpoint)]
    model.fit(batches, epochs=epochs, verbose=2 if progress else 0, validation_data=val_batches, callbacks=callbacks)
    trained = inference_model(model)
    trained.compile(loss=losses)
    return trained


def train_detector(
    out_dir: Path,
    *,
    seed: int = 0,
    samples: int = 40000,
    first_scene: int = 0,
    epochs: int = 32,
    lr: float = 3e-3,
    init_from: Path | None = None,
    width: float = DETECTOR_WIDTH,
    blocks: int = DETECTOR_BLOCKS,
    batch_size: int = 96,
    workers: int = 1,
    progress: bool = False,
    random_fraction: float = 0.0,
    own_data: Path | None = None,
    own_fraction: float = 0.3,
    init_width: float | None = None,
    compute: str = "auto",
) -> dict[str, Any]:
    """Generate data, train, and save ``detector.keras`` + ``train_metrics.json`` in ``out_dir``.

    With ``init_from`` the training continues from that saved detector; else a
    fresh one of channel scale ``width`` with ``blocks`` residual blocks per level
    is trained; a ``.tflite`` ``init_from`` of a narrower network (``init_width``) is widened to
    ``width``. ``detector.keras`` is also
    saved after every epoch, so an interrupted run keeps its last epoch.
    ``random_fraction`` of the training and validation scenes come from the
    randomized world (:mod:`seedcam_tools.world`), the rest from the classic one.
    ``own_data``: a labelled folder (YOLO or COCO, :mod:`seedcam_tools.datasets`) mixed in,
    repeated to make ``own_fraction`` of the training set (fine-tuning on your own frames).
    The training scenes are those of seeds ``first_scene`` .. ``first_scene + samples``: a
    continued round given another ``first_scene`` sees scenes the earlier rounds did not.
    ``compute``: ``auto``, ``float32`` or ``bfloat16`` (:func:`~seedcam_tools.train_speed.resolve_compute`).

    Raises:
        ValueError: the training seeds would reach the validation seeds, or an unknown ``compute``.
    """
    compute = resolve_compute(compute)  # before rendering: a wrong value fails at once
    if first_scene < 0 or first_scene + samples > VAL_SEED_BASE:
        raise ValueError("samples would overlap the validation / held-out seed ranges")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    train = generate(first_scene, samples, progress=progress, random_fraction=random_fraction)
    own_count = 0
    if own_data is not None:
        from ..frames import folder_frames

        own, unknown = data_from_frames(folder_frames(own_data, "detect"))
        own_count = len(own.x)
        log.info(
            "mixing in %d labelled frames of %s (%d objects of unknown labels left out)", own_count, own_data, unknown
        )
        train = mix(train, own, own_fraction)
    val = generate(VAL_SEED_BASE, max(64, min(500, samples // 10)), random_fraction=random_fraction)
    t0 = time.monotonic()
    start = None
    if init_from is not None:  # read it before saving over it (it may be the same file)
        start = Path(init_from).read_bytes()
        init_from = out_dir / f"init-detector{Path(init_from).suffix}"
        init_from.write_bytes(start)
    model = train_on_data(
        train,
        seed=seed,
        epochs=epochs,
        lr=lr,
        batch_size=batch_size,
        progress=progress,
        val=val,
        init_from=init_from,
        width=width,
        blocks=blocks,
        checkpoint=out_dir / "detector.keras",
        workers=workers,
        init_width=init_width,
        compute=compute,
    )
    secs = time.monotonic() - t0  # detector.keras: saved by the checkpoint after the last epoch
    import keras  # loaded by the training by now; not before the scenes were rendered in forked workers

    metrics = {
        "samples": samples,
        "first_scene": first_scene,
        "epochs": epochs,
        "seed": seed,
        "lr": lr,
        "width": width if init_from is None or init_width is not None else None,
        "init_width": init_width,
        "residual_blocks": blocks,
        "batch_size": batch_size,
        "random_world_fraction": random_fraction,
        "own_data": {"folder": str(own_data), "frames": own_count, "fraction": own_fraction} if own_data else None,
        "keras_backend": str(keras.backend.backend()),
        "compute": compute,
        "train_seconds": secs,
        "validation_loss": float(model.evaluate(_Batches.make(val.x, *build_targets(val), 32, seed), verbose=0)[0]),
    }
    if start is not None:
        metrics["continued_from_sha256"] = hashlib.sha256(start).hexdigest()
    (out_dir / "train_metrics.json").write_text(json.dumps(metrics, indent=2))
    return metrics

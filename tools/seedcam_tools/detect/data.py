"""Detection training / evaluation data: synthetic road scenes with signs and plates.

Sample ``k`` is a pure function of ``k``: a random lane scene (look, lighting,
blur, noise from :func:`~seedcam_firmware.scene.random_scene`) whose objects are
replaced by 0-4 signs and plates at varied distance, lateral position and yaw,
some partly hidden by occluders. Objects are placed fully in view and hardly
overlapping each other, so every truth box is a fair target.

Two worlds: ``"classic"`` (the firmware renderer's scenes, as above) and
``"random"`` (:mod:`seedcam_tools.world`, domain randomization: many sign designs,
fonts, sizes, mountings, backgrounds, distractors and camera effects). In the
random world a difficult object (too small, too far out of the frame or the
detector's crop, or too occluded) has class ``-1 - label`` (see :func:`difficult`):
training ignores the anchors on it, evaluation neither rewards nor penalises
detections of it.

Seeds: training ``[0, n)``, validation from ``VAL_SEED_BASE``, held-out evaluation
from ``HELDOUT_SEED_BASE`` (never used for training, calibration or selection).
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing as mp
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from seedcam_firmware.inference.boxes import box_iou
from seedcam_firmware.inference.preprocess import InputSpec, crop_resize, crop_rows
from seedcam_firmware.scene import DEFAULT_CAMERA, OBJECT_KINDS, SceneObject, object_corners, random_scene, render

from ..workers import process_pool

__all__ = [
    "DETECT_INPUT",
    "HELDOUT_SEED_BASE",
    "LABELS",
    "VAL_SEED_BASE",
    "DetectionData",
    "generate",
    "make_sample",
    "data_from_frames",
    "difficult",
    "frame_sample",
    "make_world_sample",
    "mix",
    "random_detection_scene",
]

log = logging.getLogger(__name__)

#: the detector sees the top 65 % of the frame (signs and plates stand at and above the horizon)
DETECT_INPUT = InputSpec(width=256, height=128, crop_top=0.0, crop_bottom=0.35, color_order="RGB", mean=0.0, std=255.0)
LABELS: tuple[str, ...] = OBJECT_KINDS
VAL_SEED_BASE = 5_000_000
HELDOUT_SEED_BASE = 10_000_000

#: distance ranges (m, ahead of the camera) where objects are placed
SIGN_RANGE_M = (0.3, 1.6)
PLATE_RANGE_M = (0.3, 1.1)
MAX_OBJECTS = 4
_MAX_PAIR_IOU = 0.15


@dataclass
class DetectionData:
    """A batch of samples.

    Attributes:
        x: N x H x W x 3 uint8 model pixels (after :func:`crop_resize`).
        boxes: per sample, M x 4 float32 ``(x_min, y_min, x_max, y_max)`` normalised to the model input.
        classes: per sample, M int64 label indices into :data:`LABELS`.
        seeds: N int64 scene seeds.
    """

    x: np.ndarray
    boxes: list[np.ndarray]
    classes: list[np.ndarray]
    seeds: np.ndarray


def _random_text(rng: np.random.Generator, kind: str) -> str:
    if kind == "speed_limit":
        return str(int(rng.choice([10, 20, 30, 50])))
    if kind != "plate":
        return ""
    if rng.random() < 0.5:
        letters = "".join(chr(65 + int(v)) for v in rng.integers(26, size=3))
        return f"{letters}-{int(rng.integers(1000)):03d}"
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return "".join(alphabet[int(v)] for v in rng.integers(len(alphabet), size=int(rng.integers(3, 8))))


def _pixel_box(obj: SceneObject) -> tuple[float, float, float, float] | None:
    """The object's box in frame pixels, or None when it is not fully in view."""
    uv, depth = DEFAULT_CAMERA.project(object_corners(obj))
    if np.any(depth < 0.05):
        return None
    x0, y0 = uv.min(axis=0)
    x1, y1 = uv.max(axis=0)
    if x0 < 1 or y0 < 1 or x1 > DEFAULT_CAMERA.width - 2 or y1 > DEFAULT_CAMERA.height * 0.62:
        return None
    return float(x0), float(y0), float(x1), float(y1)


def random_detection_scene(rng: np.random.Generator):  # noqa: ANN201 - returns a SceneSpec
    """A random lane scene holding 0..4 fully visible objects, some partly occluded."""
    spec = random_scene(rng)
    n_wanted = int(rng.choice([0, 1, 1, 2, 2, 3, 4]))
    objects: list[SceneObject] = []
    boxes: list[tuple[float, float, float, float]] = []
    for _ in range(n_wanted * 6):
        if len(objects) == n_wanted:
            break
        kind = LABELS[int(rng.integers(len(LABELS)))]
        lo, hi = PLATE_RANGE_M if kind == "plate" else SIGN_RANGE_M
        forward = float(np.exp(rng.uniform(np.log(lo), np.log(hi))))  # more samples near, where it is larger
        left = float(rng.uniform(-1.0, 1.0) * forward * 0.95)
        obj = SceneObject(kind, forward, left, _random_text(rng, kind), float(rng.uniform(-0.6, 0.6)))
        box = _pixel_box(obj)
        if box is None or any(box_iou(box, other) > _MAX_PAIR_IOU for other in boxes):
            continue
        objects.append(obj)
        boxes.append(box)
    occluders = []
    for x0, y0, x1, y1 in boxes:
        if rng.random() < 0.25:  # hide 10..35 % of the object from one side
            frac = float(rng.uniform(0.1, 0.35))
            w, h = x1 - x0, y1 - y0
            side = int(rng.integers(4))
            if side == 0:
                rect = (x0 - 2, y0 - 2, x0 + frac * w, y1 + 2)
            elif side == 1:
                rect = (x1 - frac * w, y0 - 2, x1 + 2, y1 + 2)
            elif side == 2:
                rect = (x0 - 2, y1 - frac * h, x1 + 2, y1 + 2)
            else:
                rect = (x0 - 2, y0 - 2, x1 + 2, y0 + frac * h)
            width, height = DEFAULT_CAMERA.width, DEFAULT_CAMERA.height
            occluders.append(
                (rect[0] / width, rect[1] / height, rect[2] / width, rect[3] / height, float(rng.uniform(0.1, 0.7)))
            )
    return dataclasses.replace(spec, objects=tuple(objects), occluders=tuple(occluders))


def make_sample(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Render sample ``seed``: ``(model pixels H x W x 3 uint8, boxes M x 4, classes M)``."""
    spec = random_detection_scene(np.random.default_rng(seed))
    image, truth = render(spec)
    pixels = crop_resize(image, DETECT_INPUT)
    top, bottom = crop_rows(image.shape[0], DETECT_INPUT)
    frame_h = image.shape[0]
    boxes, classes = [], []
    for obj in truth.objects:
        x0, y0, x1, y1 = obj.box
        boxes.append([x0, (y0 * frame_h - top) / (bottom - top), x1, (y1 * frame_h - top) / (bottom - top)])
        classes.append(LABELS.index(obj.kind))
    box_array = np.clip(np.asarray(boxes, np.float32).reshape(-1, 4), 0.0, 1.0)
    return pixels, box_array, np.asarray(classes, np.int64)


def difficult(label_index: int) -> int:
    """The class code of a difficult object of ``label_index`` (negative; ``-1 - code`` gives the label back)."""
    return -1 - label_index


#: a box that keeps less than this fraction of its height inside the detector's crop is difficult
_MIN_IN_CROP = 0.6


def frame_sample(
    image: np.ndarray, objects: Iterable[tuple[str, Sequence[float], bool]], labels: Sequence[str] = LABELS
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A full BGR frame and its objects ``(label, (x0, y0, x1, y1) pixels, difficult)`` as a detector sample.

    Returns ``(model pixels, boxes M x 4 normalised to the model input, classes M)``. A box
    keeping less than :data:`_MIN_IN_CROP` of its height inside the detector's crop becomes
    difficult; one wholly outside it is dropped, and so is an object whose label is not in ``labels``.
    """
    pixels = crop_resize(image, DETECT_INPUT)
    frame_h, frame_w = image.shape[:2]
    top, bottom = crop_rows(frame_h, DETECT_INPUT)
    boxes, classes = [], []
    for label, (x0, y0, x1, y1), hard in objects:
        in_crop = (min(y1, bottom) - max(y0, top)) / max(y1 - y0, 1e-6)
        if in_crop <= 0.0 or label not in labels:
            continue
        index = list(labels).index(label)
        boxes.append(
            [
                x0 / frame_w,
                (max(y0, top) - top) / (bottom - top),
                x1 / frame_w,
                (min(y1, bottom) - top) / (bottom - top),
            ]
        )
        classes.append(difficult(index) if hard or in_crop < _MIN_IN_CROP else index)
    box_array = np.clip(np.asarray(boxes, np.float32).reshape(-1, 4), 0.0, 1.0)
    return pixels, box_array, np.asarray(classes, np.int64)


def data_from_frames(frames: Iterable[Any], labels: Sequence[str] = LABELS) -> tuple[DetectionData, int]:
    """Labelled frames (:class:`~seedcam_tools.frames.LabelledFrame`) as detector samples, objects
    matched to ``labels`` by name; also the count of objects whose label is not in ``labels`` (left out).

    Raises:
        ValueError: no frame holds object labels.
    """
    xs, boxes, classes, unknown = [], [], [], 0
    for f in frames:
        if f.objects is None:
            continue
        unknown += sum(o.label not in labels for o in f.objects)
        x, b, c = frame_sample(f.image, ((o.label, o.box, o.difficult) for o in f.objects), labels)
        xs.append(x)
        boxes.append(b)
        classes.append(c)
    if not xs:
        raise ValueError("no labelled frames")
    data = DetectionData(x=np.stack(xs), boxes=boxes, classes=classes, seeds=np.full(len(xs), -1, np.int64))
    return data, unknown


def mix(synthetic: DetectionData, own: DetectionData, fraction: float) -> DetectionData:
    """``synthetic`` plus ``own`` repeated so that it makes about ``fraction`` of the result (own seeds are -1)."""
    if not 0.0 < fraction < 1.0:
        raise ValueError("the fraction of own data must lie strictly between 0 and 1")
    repeats = max(1, round(fraction * len(synthetic.x) / ((1.0 - fraction) * len(own.x))))
    idx = np.tile(np.arange(len(own.x)), repeats)
    return DetectionData(
        x=np.concatenate([synthetic.x, own.x[idx]]),
        boxes=synthetic.boxes + [own.boxes[i] for i in idx],
        classes=synthetic.classes + [own.classes[i] for i in idx],
        seeds=np.concatenate([synthetic.seeds, own.seeds[idx]]),
    )


def make_world_sample(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Like :func:`make_sample`, from the randomized world; difficult objects get :func:`difficult` codes."""
    from ..world import render_world_scene

    scene = render_world_scene(seed)
    return frame_sample(scene.image, ((o.label, o.box, o.difficult) for o in scene.objects))


def _make_any(seed_and_world: tuple[int, bool]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    seed, randomized = seed_and_world
    return make_world_sample(seed) if randomized else make_sample(seed)


def generate(
    seed_base: int,
    n: int,
    *,
    workers: int | None = None,
    progress: bool = False,
    random_fraction: float = 0.0,
) -> DetectionData:
    """Render samples ``seed_base .. seed_base + n - 1`` (in parallel processes).

    ``random_fraction`` of them (spread evenly, by seed) come from the randomized
    world, the rest from the classic one.
    """
    seeds = np.arange(seed_base, seed_base + n, dtype=np.int64)
    jobs = [(int(s), bool(int((k + 1) * random_fraction) > int(k * random_fraction))) for k, s in enumerate(seeds)]
    h, w = DETECT_INPUT.height, DETECT_INPUT.width
    x = np.empty((n, h, w, 3), np.uint8)
    boxes: list[np.ndarray] = []
    classes: list[np.ndarray] = []
    procs = workers or min(mp.cpu_count(), 8)
    iterator = map(_make_any, jobs) if procs == 1 or n < 64 else None
    pool = None
    if iterator is None:
        pool = process_pool(procs)
        iterator = pool.imap(_make_any, jobs, chunksize=32)
    if progress:
        from tqdm import tqdm

        iterator = tqdm(iterator, total=n, desc="render detection scenes", unit="scene")
    try:
        for i, (pixels, b, c) in enumerate(iterator):
            x[i] = pixels
            boxes.append(b)
            classes.append(c)
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    return DetectionData(x=x, boxes=boxes, classes=classes, seeds=seeds)

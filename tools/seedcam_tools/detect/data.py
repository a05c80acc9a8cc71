"""Detection training / evaluation data: synthetic road scenes with signs and plates.

Sample ``k`` is a pure function of ``k``: a scene of the classic world
(:mod:`seedcam_tools.classic_world`: a random lane scene with 0-4 signs and plates
fully in view, some partly occluded) rendered and cropped for the detector.

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

import logging
import multiprocessing as mp
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from seedcam_firmware.inference.preprocess import InputSpec, crop_resize, crop_rows
from seedcam_firmware.scene import OBJECT_KINDS, render

from ..classic_world import random_detection_scene
from ..workers import map_in_workers

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
]

log = logging.getLogger(__name__)

#: the detector sees the top 65 % of the frame (signs and plates stand at and above the horizon)
DETECT_INPUT = InputSpec(width=256, height=128, crop_top=0.0, crop_bottom=0.35, color_order="RGB", mean=0.0, std=255.0)
LABELS: tuple[str, ...] = OBJECT_KINDS
VAL_SEED_BASE = 5_000_000
HELDOUT_SEED_BASE = 10_000_000


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
    procs = (workers or min(mp.cpu_count(), 8)) if n >= 64 else 1
    desc = "render detection scenes"
    for i, (pixels, b, c) in enumerate(
        map_in_workers(_make_any, jobs, workers=procs, chunksize=32, progress=progress, desc=desc, unit="scene")
    ):
        x[i] = pixels
        boxes.append(b)
        classes.append(c)
    return DetectionData(x=x, boxes=boxes, classes=classes, seeds=seeds)

"""Lane training / evaluation data rendered by the synthetic scene generator.

Seeds: sample ``k`` of a dataset is ``random_scene(np.random.default_rng(k))``.
Training uses seeds ``[TRAIN_SEED_BASE, TRAIN_SEED_BASE + n)`` with
``TRAIN_SEED_BASE = 0`` (the tools refuse n > HELDOUT_SEED_BASE); held-out
evaluation uses seeds from ``HELDOUT_SEED_BASE = 10_000_000`` upwards. Held-out
seeds are never used for training, calibration or model selection.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from seedcam_firmware.inference.preprocess import InputSpec, crop_resize
from seedcam_firmware.scene import DEFAULT_CAMERA, random_scene, render_with_mask

from ..workers import map_in_workers

__all__ = [
    "HELDOUT_SEED_BASE",
    "LANE_INPUT",
    "MASK_SIZE",
    "SCALES",
    "TRAIN_SEED_BASE",
    "LaneData",
    "decode_targets",
    "encode_targets",
    "generate",
    "make_sample",
    "make_world_sample",
]

log = logging.getLogger(__name__)

LANE_INPUT = InputSpec(width=128, height=64, crop_top=1.0 / 3.0, color_order="RGB", mean=0.0, std=255.0)
#: mask output size (height, width): the cropped frame pooled in 10 x 10 blocks
MASK_SIZE = (16, 32)
#: regression targets are ((value - centre) / scale) for [offset, heading, curvature, width]
SCALES = {"centre": (0.0, 0.0, 0.0, 0.45), "scale": (0.15, 0.30, 1.0, 0.05)}
TRAIN_SEED_BASE = 0
HELDOUT_SEED_BASE = 10_000_000


@dataclass
class LaneData:
    """A batch of samples.

    Attributes:
        x: N x H x W x 3 uint8 model pixels (after :func:`crop_resize`).
        mask: N x 16 x 32 x 2 uint8 marking masks (0/255; left, right line).
        y: N x 4 float32 raw truth [offset_m, heading_rad, curvature_per_m, lane_width_m].
        present: N x 2 float32 line visibility (left, right).
        seeds: N int64 scene seeds.
    """

    x: np.ndarray
    mask: np.ndarray
    y: np.ndarray
    present: np.ndarray
    seeds: np.ndarray

    def save(self, path: Path) -> None:
        """Write as an uncompressed .npz."""
        np.savez(path, x=self.x, mask=self.mask, y=self.y, present=self.present, seeds=self.seeds)

    @classmethod
    def load(cls, path: Path) -> LaneData:
        """Read a file written by :meth:`save`."""
        with np.load(path) as z:
            return cls(z["x"], z["mask"], z["y"], z["present"], z["seeds"])


def encode_targets(y: np.ndarray) -> np.ndarray:
    """Raw truth -> normalised regression targets."""
    return ((y - np.asarray(SCALES["centre"], np.float32)) / np.asarray(SCALES["scale"], np.float32)).astype(np.float32)


def decode_targets(t: np.ndarray) -> np.ndarray:
    """Normalised regression outputs -> raw [offset, heading, curvature, width]."""
    return (t * np.asarray(SCALES["scale"], np.float32) + np.asarray(SCALES["centre"], np.float32)).astype(np.float32)


def _pool_mask(mask: np.ndarray) -> np.ndarray:
    top = round(LANE_INPUT.crop_top * mask.shape[0])
    m = mask[top:]
    mh, mw = MASK_SIZE
    bh, bw = m.shape[0] // mh, m.shape[1] // mw
    m = m[: mh * bh, : mw * bw].reshape(mh, bh, mw, bw, 2).max(axis=(1, 3))
    return (m > 0.3).astype(np.uint8) * 255


def make_sample(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Render scene ``seed``: returns (pixels, mask, raw truth, presence).

    Presence is what is in view (:func:`~seedcam_tools.world.lines_in_view`): a line
    that is painted but has left the frame is absent.
    """
    from ..world import lines_in_view

    spec = random_scene(np.random.default_rng(seed))
    image, truth, mask = render_with_mask(spec, DEFAULT_CAMERA)
    lane = truth.lane
    y = np.array([lane.offset_m, lane.heading_rad, lane.curvature_per_m, lane.lane_width_m], np.float32)
    present = np.array(lines_in_view(mask), np.float32)  # painted AND in the frame
    return crop_resize(image, LANE_INPUT), _pool_mask(mask), y, present


def make_world_sample(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Like :func:`make_sample`, from the randomized world (:mod:`seedcam_tools.world`).

    Presence is what is in view (a line that left the frame or is worn away is
    absent); a third of the scenes also hold signs, plates and distractors.
    """
    from ..world import render_world_scene

    scene = render_world_scene(seed, objects=seed % 3 == 0)
    lane = scene.lane
    y = np.array([lane.offset_m, lane.heading_rad, lane.curvature_per_m, lane.lane_width_m], np.float32)
    present = np.array([lane.left_in_view, lane.right_in_view], np.float32)
    return crop_resize(scene.image, LANE_INPUT), _pool_mask(scene.mask), y, present


def _is_random(seed: int, random_fraction: float) -> bool:
    return int((seed + 1) * random_fraction) > int(seed * random_fraction)


def _chunk(job: tuple[list[int], float]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    seeds, random_fraction = job
    return [make_world_sample(s) if _is_random(s, random_fraction) else make_sample(s) for s in seeds]


def generate(
    first_seed: int, count: int, *, workers: int = 2, progress: bool = False, random_fraction: float = 0.0
) -> LaneData:
    """Render samples with seeds ``first_seed .. first_seed + count - 1``.

    Deterministic: the result does not depend on ``workers``. ``random_fraction``
    of the seeds (spread evenly) come from the randomized world.
    """
    seeds = list(range(first_seed, first_seed + count))
    chunks = [(seeds[i : i + 256], random_fraction) for i in range(0, count, 256)]
    out: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    procs = workers if count >= 512 else 1
    for part in map_in_workers(_chunk, chunks, workers=procs, progress=progress, desc="render", unit="chunk"):
        out.extend(part)
    return LaneData(
        x=np.stack([o[0] for o in out]),
        mask=np.stack([o[1] for o in out]),
        y=np.stack([o[2] for o in out]),
        present=np.stack([o[3] for o in out]),
        seeds=np.asarray(seeds, np.int64),
    )

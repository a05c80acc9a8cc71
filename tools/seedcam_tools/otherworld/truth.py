"""Truth records of the evaluation world: labels, objects, lane state and scenes."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

__all__ = [
    "DIFFICULT_MAX_OCCLUDED",
    "DIFFICULT_MIN_INSIDE",
    "DIFFICULT_MIN_SIDE_PX",
    "LANE_STATUSES",
    "OTHERWORLD_LABELS",
    "PLATE_ALPHABET",
    "OtherLane",
    "OtherObject",
    "OtherScene",
    "is_difficult",
    "valid_plate_text",
]

logger = logging.getLogger(__name__)

OTHERWORLD_LABELS: tuple[str, ...] = (
    "stop",
    "speed_limit",
    "turn_left",
    "turn_right",
    "crossing",
    "parking",
    "plate",
)
"""The seven object labels, in this fixed order."""

LANE_STATUSES: tuple[str, ...] = ("ok", "one_line", "lost")
"""Lane status values: both boundaries in view, one of them, none."""

PLATE_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-"
"""Characters that plate texts are drawn from."""

DIFFICULT_MIN_SIDE_PX = 8.0
DIFFICULT_MIN_INSIDE = 0.70
DIFFICULT_MAX_OCCLUDED = 0.40


def valid_plate_text(text: str) -> bool:
    """Whether ``text`` is a legal plate text (3..8 chars, alphabet, no edge or double dash).

    Args:
        text: candidate plate text.

    Returns:
        True when the text follows the plate rules.
    """
    return (
        3 <= len(text) <= 8
        and all(c in PLATE_ALPHABET for c in text)
        and not text.startswith("-")
        and not text.endswith("-")
        and "--" not in text
    )


def is_difficult(box: tuple[float, float, float, float], inside_fraction: float, occluded_fraction: float) -> bool:
    """The ``difficult`` rule shared by every object.

    Args:
        box: clipped pixel box ``(x0, y0, x1, y1)``.
        inside_fraction: part of the face area that lies inside the image.
        occluded_fraction: part of the in-image face covered by nearer things.

    Returns:
        True when the object cannot be judged fairly.
    """
    short = min(box[2] - box[0], box[3] - box[1])
    return (
        short < DIFFICULT_MIN_SIDE_PX
        or inside_fraction < DIFFICULT_MIN_INSIDE
        or occluded_fraction > DIFFICULT_MAX_OCCLUDED
    )


@dataclass(frozen=True)
class OtherObject:
    """One labelled object of a scene.

    Attributes:
        label: one of :data:`OTHERWORLD_LABELS`.
        box: ``(x0, y0, x1, y1)`` pixel box of the face (not its post), clipped to the image.
        text: plate text or speed-limit number, ``''`` for the other labels.
        difficult: the object is too small, cut off or occluded to be judged fairly.
    """

    label: str
    box: tuple[float, float, float, float]
    text: str
    difficult: bool


@dataclass(frozen=True)
class OtherLane:
    """Lane truth relative to the nominal floor point below the camera.

    Attributes:
        offset_m: lateral offset of the car from the lane centre, left positive.
        heading_rad: car yaw minus lane tangent yaw, car yawed left positive.
        curvature_per_m: lane curvature at the reference point, left bend positive.
        status: ``"ok"``, ``"one_line"`` or ``"lost"`` from the boundaries in view.
    """

    offset_m: float
    heading_rad: float
    curvature_per_m: float
    status: str


@dataclass(frozen=True)
class OtherScene:
    """A rendered evaluation scene.

    Attributes:
        image: 240 x 320 x 3 uint8 BGR image.
        objects: labelled objects.
        lane: lane truth.
        seed: the seed it was rendered from.
    """

    image: np.ndarray
    objects: tuple[OtherObject, ...]
    lane: OtherLane
    seed: int

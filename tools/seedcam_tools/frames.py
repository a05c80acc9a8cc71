"""Labelled frames: one form for every source the evaluators read.

A :class:`LabelledFrame` is a full camera frame (BGR, the firmware's input) with
what is in it: objects (label, pixel box, difficult flag, text) and the lane
state. Sources:

* :func:`classic_frames` -- the firmware renderer's random scenes (our world, as the bundles were first trained);
* :func:`random_world_frames` -- the randomized training world (:mod:`seedcam_tools.world`);
* :func:`other_world_frames` -- the independent evaluation world (:mod:`seedcam_tools.otherworld`),
  never used for training, calibration or model selection;
* :func:`folder_frames` -- a user's labelled folder (:mod:`seedcam_tools.datasets`: YOLO or COCO
  detection, ``ocr.jsonl``, ``lane.jsonl``).

:func:`write_folders` writes frames as those folders, so that
``seedcam-tools eval-* --data DIR`` can be checked against the in-tool figures of the same frames.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from seedcam_firmware.scene import DEFAULT_CAMERA, render_with_mask

from . import datasets

__all__ = [
    "FrameLane",
    "FrameObject",
    "LabelledFrame",
    "WORLDS",
    "classic_frames",
    "folder_frames",
    "heldout_frames",
    "other_world_frames",
    "random_world_frames",
    "write_folders",
]


@dataclass(frozen=True)
class FrameObject:
    """An object in a frame: ``box`` (x0, y0, x1, y1) pixels; ``text`` of plates (and speed limits)."""

    label: str
    box: tuple[float, float, float, float]
    difficult: bool = False
    text: str = ""


@dataclass(frozen=True)
class FrameLane:
    """Lane truth (REP-103 conventions of the firmware; ``status`` ok / one_line / lost)."""

    offset_m: float
    heading_rad: float
    curvature_per_m: float
    status: str


@dataclass(frozen=True)
class LabelledFrame:
    """A BGR frame and its truth; ``lane`` None when unknown, ``objects`` None when not labelled."""

    name: str
    image: np.ndarray
    objects: tuple[FrameObject, ...] | None
    lane: FrameLane | None


def classic_frames(first_seed: int, count: int) -> Iterator[LabelledFrame]:
    """Our classic world: the detector's classic scenes (``classic_world.random_detection_scene``: a
    ``random_scene`` lane with 0..4 signs and plates in view), as rendered for the emulated board."""
    from .classic_world import random_detection_scene
    from .world import lines_in_view

    for seed in range(first_seed, first_seed + count):
        image, truth, mask = render_with_mask(random_detection_scene(np.random.default_rng(seed)))
        h, w = image.shape[:2]
        objects = tuple(
            FrameObject(o.kind, (o.box[0] * w, o.box[1] * h, o.box[2] * w, o.box[3] * h), False, o.text)
            for o in truth.objects
        )
        lane = truth.lane
        yield LabelledFrame(
            f"classic-{seed}",
            image,
            objects,
            FrameLane(
                lane.offset_m,
                lane.heading_rad,
                lane.curvature_per_m,
                ("lost", "one_line", "ok")[sum(lines_in_view(mask))],
            ),
        )


def random_world_frames(
    first_seed: int, count: int, *, plate_focus: bool = False, without: Collection[str] = ()
) -> Iterator[LabelledFrame]:
    """Frames of the randomized training world (our world, widened), ``without`` some of its factors."""
    from .world import render_world_scene

    for seed in range(first_seed, first_seed + count):
        s = render_world_scene(seed, plate_focus=plate_focus, without=without)
        objects = tuple(FrameObject(o.label, o.box, o.difficult, o.text) for o in s.objects)
        lane = FrameLane(s.lane.offset_m, s.lane.heading_rad, s.lane.curvature_per_m, s.lane.status)
        yield LabelledFrame(f"{'plate' if plate_focus else 'world'}-{seed}", s.image, objects, lane)


def other_world_frames(first_seed: int, count: int) -> Iterator[LabelledFrame]:
    """Frames of the independent evaluation world (never for training, calibration or selection)."""
    from .otherworld import render_scene

    for seed in range(first_seed, first_seed + count):
        s = render_scene(seed)
        objects = tuple(FrameObject(o.label, o.box, o.difficult, o.text) for o in s.objects)
        lane = FrameLane(s.lane.offset_m, s.lane.heading_rad, s.lane.curvature_per_m, s.lane.status)
        yield LabelledFrame(f"other-{seed}", s.image, objects, lane)


#: the worlds frames can be drawn from: ``classic`` and ``random`` are ours, ``other`` the independent one
WORLDS = ("classic", "random", "other")
#: held-out seeds of our worlds start here (never used for training, calibration or selection)
_HELDOUT_SEED_BASE = 10_000_000


def heldout_frames(
    world: str, block: int, count: int, *, plate_focus: bool = False, without: Collection[str] = ()
) -> Iterator[LabelledFrame]:
    """``count`` held-out frames of seed block ``block`` (seeds ``base + block * 1_000_000 + k``) of a world.

    Our worlds' held-out seeds start at 10 000 000; the other world has no training seeds at
    all, its blocks start at 0. Block 0 goes into the bundles' metrics.json, block 1 into the tests.
    ``without``: factors of the randomized world to leave out (``random`` only; see
    :data:`seedcam_tools.world.WORLD_FACTORS`).
    """
    if block < 0 or not 0 < count <= 1_000_000:
        raise ValueError("block must be >= 0 and count within 1..1_000_000")
    if without and world != "random":
        raise ValueError(f"only the random world has factors to leave out, not the {world!r} world")
    if world == "other":
        return other_world_frames(block * 1_000_000, count)
    first = _HELDOUT_SEED_BASE + block * 1_000_000
    if world == "random":
        return random_world_frames(first, count, plate_focus=plate_focus, without=without)
    if world == "classic":
        return classic_frames(first, count)
    raise ValueError(f"world must be one of {WORLDS}, not {world!r}")


def _detection_frames(path: Path) -> Iterator[LabelledFrame]:
    folder = datasets.read_detection_folder(path)
    for item in folder.items:
        objects = tuple(FrameObject(o.label, o.box, o.difficult) for o in item.objects)
        yield LabelledFrame(item.image.stem, datasets.load_image(item.image), objects, None)


def _ocr_frames(path: Path) -> Iterator[LabelledFrame]:
    by_image: dict[Path, list[datasets.OcrItem]] = {}
    for item in datasets.read_ocr_folder(path):
        by_image.setdefault(item.image, []).append(item)
    for image, items in by_image.items():
        objects = tuple(FrameObject("plate", i.box, False, i.text) for i in items)
        yield LabelledFrame(image.stem, datasets.load_image(image), objects, None)


def _lane_frames(path: Path, camera: dict[str, float] | None) -> Iterator[LabelledFrame]:
    folder = datasets.read_lane_folder(path)
    if camera is not None:
        datasets.check_camera(folder.camera, camera, source=str(path / "camera.json"))
    for item in folder.items:
        lane = FrameLane(item.offset_m, item.heading_rad, item.curvature_per_m, item.status)
        yield LabelledFrame(item.image.stem, datasets.load_image(item.image), None, lane)


def folder_frames(path: str | Path, kind: str, *, camera: dict[str, float] | None = None) -> Iterator[LabelledFrame]:
    """The frames of a labelled folder.

    Args:
        path: the folder (or a COCO ``.json`` for ``kind="detect"``).
        kind: ``"detect"`` (YOLO or COCO), ``"ocr"`` (``ocr.jsonl``) or ``"lane"`` (``lane.jsonl`` + ``camera.json``).
        camera: for lane folders, the bundle manifest's camera; a folder recorded with another camera is refused.

    Raises:
        DatasetFormatError: the folder is not a valid dataset of that kind.
        CameraMismatch: the lane folder's camera is not the bundle's.
    """
    path = Path(path)
    if kind == "detect":
        return _detection_frames(path)
    if kind == "ocr":
        return _ocr_frames(path)
    if kind == "lane":
        return _lane_frames(path, camera)
    raise ValueError(f"kind must be 'detect', 'ocr' or 'lane', not {kind!r}")


def write_folders(frames: Iterable[LabelledFrame], out: str | Path, labels: Sequence[str]) -> dict[str, Path]:
    """Write frames as ``out/detect`` (YOLO), ``out/ocr`` (``ocr.jsonl``) and ``out/lane`` (``lane.jsonl``).

    Returns the three folder paths. Plates go to the OCR folder with their text; frames with a
    lane truth to the lane folder (camera: :data:`DEFAULT_CAMERA`).
    """
    out = Path(out)
    frames = list(frames)
    detect = [
        (f.name, f.image, [datasets.LabelledBox(o.label, o.box, o.difficult) for o in f.objects if o.label in labels])
        for f in frames
        if f.objects is not None
    ]
    ocr = [
        (f.name, f.image, [(o.box, o.text) for o in f.objects if o.label == "plate" and not o.difficult])
        for f in frames
        if f.objects is not None and any(o.label == "plate" and not o.difficult for o in f.objects)
    ]
    lane = [(f.name, f.image, f.lane) for f in frames if f.lane is not None]
    paths = {
        "detect": datasets.write_yolo_folder(out / "detect", list(labels), detect),
        "ocr": datasets.write_ocr_folder(out / "ocr", ocr),
        "lane": datasets.write_lane_folder(out / "lane", datasets.CameraInfo.from_dict(DEFAULT_CAMERA.to_dict()), lane),
    }
    return paths

"""Lane folders: ``lane.jsonl`` truth per frame plus ``camera.json`` geometry."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ._common import (
    DatasetFormatError,
    atomic_write,
    check_stem,
    finite,
    integer,
    lines_by_image,
    load_json_object,
    prepare_output,
    read_jsonl,
    relative_path,
    require,
    resolve_file,
)
from ._images import encode_png, sized

log = logging.getLogger(__name__)

LANE_JSONL = "lane.jsonl"
CAMERA_JSON = "camera.json"
STATUSES = ("ok", "one_line", "lost")
LANE_VALUES = ("offset_m", "heading_rad", "curvature_per_m")
CAMERA_KEYS = ("width", "height", "hfov_deg", "pitch_deg", "height_m")
#: allowed |folder - bundle| per camera key in :func:`check_camera` (0: exactly equal)
CAMERA_TOLERANCE = {"width": 0, "height": 0, "hfov_deg": 0.5, "pitch_deg": 0.5, "height_m": 0.005}


class CameraMismatch(DatasetFormatError):
    """A data folder's camera differs from the camera a model bundle was trained for.

    Attributes:
        differences: ``(key, folder value, bundle value or None if missing)`` per differing key.
    """

    def __init__(self, message: str, differences: tuple[tuple[str, object, object], ...]) -> None:
        super().__init__(message)
        self.differences = differences


class LaneTruthLike(Protocol):
    """Anything with the lane truth attributes, read only (for :func:`write_lane_folder`)."""

    @property
    def offset_m(self) -> float: ...
    @property
    def heading_rad(self) -> float: ...
    @property
    def curvature_per_m(self) -> float: ...
    @property
    def status(self) -> str: ...


@dataclass(frozen=True)
class CameraInfo:
    """Camera geometry of a folder's frames (the keys of a bundle manifest's ``camera``)."""

    width: int
    height: int
    hfov_deg: float
    pitch_deg: float
    height_m: float

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "camera") -> CameraInfo:
        """Build from a JSON dict; extra keys are ignored.

        Args:
            data: the five keys.
            source: names the file in error messages.

        Raises:
            DatasetFormatError: a missing key, a non-integer or non-positive size, or an
                angle or height out of range.
        """
        if not isinstance(data, Mapping):
            raise DatasetFormatError(f"{source}: camera must be an object, got {type(data).__name__}")
        width, height = (
            integer(require(data, k, where=source), what=k, where=source, minimum=1) for k in CAMERA_KEYS[:2]
        )
        hfov, pitch, height_m = (finite(require(data, k, where=source), what=k, where=source) for k in CAMERA_KEYS[2:])
        if not 0.0 < hfov < 180.0:
            raise DatasetFormatError(f"{source}: hfov_deg must be in (0, 180), got {hfov}")
        if not -90.0 <= pitch <= 90.0:
            raise DatasetFormatError(f"{source}: pitch_deg must be in [-90, 90], got {pitch}")
        if height_m <= 0.0:
            raise DatasetFormatError(f"{source}: height_m must be positive, got {height_m}")
        return cls(width, height, hfov, pitch, height_m)

    def to_dict(self) -> dict[str, int | float]:
        """The five keys as a JSON-friendly dict."""
        return {k: getattr(self, k) for k in CAMERA_KEYS}


@dataclass(frozen=True)
class LaneItem:
    """Lane truth of one frame (conventions of ``seedcam_firmware.scene.LaneTruth``)."""

    image: Path
    offset_m: float
    heading_rad: float
    curvature_per_m: float
    status: str


@dataclass(frozen=True)
class LaneFolder:
    """A lane dataset: its camera and one item per frame."""

    camera: CameraInfo
    items: tuple[LaneItem, ...]


def read_lane_folder(path: str | Path) -> LaneFolder:
    """Read ``DIR/camera.json`` and ``DIR/lane.jsonl``; every image must match the camera's size.

    Args:
        path: the folder.

    Returns:
        The folder, items in file order.

    Raises:
        DatasetFormatError: a missing file, malformed JSON, a missing key, a non-finite value,
            an unknown status, an image named twice, missing or of the wrong size, or an image
            path leaving the folder.
    """
    root = Path(path)
    if not root.is_dir():
        raise DatasetFormatError(f"{root}: not a folder")
    camera_path, index = root / CAMERA_JSON, root / LANE_JSONL
    raw_camera = load_json_object(camera_path, what="a lane folder's camera", root=root)
    camera = CameraInfo.from_dict(raw_camera, source=str(camera_path))
    seen: dict[Path, int] = {}
    items = []
    for number, obj in read_jsonl(index, what="a lane folder's index", root=root):
        where = f"{index}:{number}"
        rel = relative_path(require(obj, "image", where=where), where=where)
        image = resolve_file(root, rel, where=where)
        if image in seen:
            raise DatasetFormatError(f"{where}: image {rel} is already labelled on line {seen[image]}")
        seen[image] = number
        offset, heading, curvature = (finite(require(obj, k, where=where), what=k, where=where) for k in LANE_VALUES)
        status = _status(require(obj, "status", where=where), where=where)
        width, height = sized(image, where=where)
        if (width, height) != (camera.width, camera.height):
            raise DatasetFormatError(
                f"{where}: image {rel} is {width}x{height} but {CAMERA_JSON} says {camera.width}x{camera.height}"
            )
        items.append(LaneItem(image, offset, heading, curvature, status))
    return LaneFolder(camera, tuple(items))


def write_lane_folder(
    path: str | Path, camera: CameraInfo, items: Iterable[tuple[str, np.ndarray, LaneTruthLike]]
) -> Path:
    """Write ``images/<stem>.png``, ``lane.jsonl`` and ``camera.json``.

    Writing into an existing lane folder with the same camera adds the items; a stem
    already there is replaced.

    Args:
        path: the folder (created with its parents).
        camera: geometry of every frame; each image must be ``camera.width x camera.height``.
        items: ``(stem, H x W x 3 uint8 BGR image, truth)``; truth has ``offset_m``,
            ``heading_rad``, ``curvature_per_m`` and ``status`` attributes.

    Returns:
        The folder.

    Raises:
        DatasetFormatError: the folder is non-empty and not a lane dataset (or has another
            camera), the camera is invalid, or an item is bad (stem, image size, truth).
    """
    cam = CameraInfo.from_dict(camera.to_dict(), source="write_lane_folder camera")
    root, existing = prepare_output(path, marker=LANE_JSONL, kind="lane")
    index = root / LANE_JSONL
    if existing:
        old = read_lane_folder(root)
        if old.camera != cam:
            raise DatasetFormatError(
                f"{root / CAMERA_JSON}: camera {old.camera.to_dict()} differs from {cam.to_dict()}; refusing to mix"
            )
        kept = lines_by_image(index)
    else:
        kept = []
        atomic_write(root / CAMERA_JSON, json.dumps(cam.to_dict(), indent=2) + "\n")
        atomic_write(index, "")
    (root / "images").mkdir(exist_ok=True)
    new_lines: list[str] = []
    seen: set[str] = set()
    for stem, image, truth in items:
        where = f"item {stem!r}"
        check_stem(stem, seen, where=where)
        data, width, height = encode_png(image, where=where)
        if (width, height) != (cam.width, cam.height):
            raise DatasetFormatError(f"{where}: image is {width}x{height}, camera is {cam.width}x{cam.height}")
        record: dict[str, Any] = {"image": f"images/{stem}.png"}
        for key in (*LANE_VALUES, "status"):
            if not hasattr(truth, key):
                raise DatasetFormatError(f"{where}: truth {type(truth).__name__} has no attribute {key!r}")
        record.update({k: finite(getattr(truth, k), what=k, where=where) for k in LANE_VALUES})
        record["status"] = _status(truth.status, where=where)
        atomic_write(root / record["image"], data, durable=False)
        new_lines.append(json.dumps(record))
    written = {f"images/{stem}.png" for stem in seen}
    lines = [line for image, line in kept if image not in written] + new_lines
    atomic_write(index, "".join(line + "\n" for line in lines))
    log.info("%s: wrote %d frames", root, len(new_lines))
    return root


def check_camera(folder_camera: CameraInfo, bundle_camera: Mapping[str, float], *, source: str) -> None:
    """Check that a data folder's frames come from the camera a model bundle was trained for.

    Tolerances: width and height exactly equal, angles within 0.5 degrees, height within 5 mm.

    Args:
        folder_camera: the folder's ``camera.json``.
        bundle_camera: the bundle manifest's ``camera`` object.
        source: names the data and the bundle in the message.

    Raises:
        CameraMismatch: a key is missing from the bundle's camera or differs beyond its
            tolerance; the message names each key and both values.
    """
    mine = folder_camera.to_dict()
    diffs: list[tuple[str, object, object]] = []
    for key in CAMERA_KEYS:
        theirs = bundle_camera.get(key) if isinstance(bundle_camera, Mapping) else None
        within = (
            isinstance(theirs, int | float)
            and not isinstance(theirs, bool)
            and abs(float(mine[key]) - float(theirs)) <= CAMERA_TOLERANCE[key] + 1e-9
        )
        if not within:
            diffs.append((key, mine[key], theirs))
    if diffs:
        parts = []
        for key, folder_value, bundle_value in diffs:
            tol = CAMERA_TOLERANCE[key]
            shown = "missing" if bundle_value is None else repr(bundle_value)
            rule = f"tolerance {tol}" if tol else "must match"
            parts.append(f"{key}: folder {folder_value!r}, bundle {shown} ({rule})")
        raise CameraMismatch(
            f"{source}: the data folder's camera differs from the model bundle's camera: {'; '.join(parts)}",
            tuple(diffs),
        )


def _status(value: object, *, where: str) -> str:
    if value not in STATUSES or not isinstance(value, str):
        raise DatasetFormatError(f"{where}: status {value!r} is not one of {', '.join(STATUSES)}")
    return value

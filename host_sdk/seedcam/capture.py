"""Capture for training: full-resolution frames from a sensor, saved as a dataset folder.

Two layouts (``seedcam capture --layout``):

* ``classes`` (for ``seedcam-tools train-classifier --data``): ``OUT/<label>/<stem>.jpg``;
  capture each class with its own ``--label`` into the same ``OUT``.
* ``yolo`` (for detector fine-tuning, ``seedcam-tools eval-detector --data`` and other YOLO
  tools): ``OUT/images/<stem>.jpg``, ``OUT/labels/<stem>.txt`` with the sensor's detections of
  that very frame as YOLO lines (``class cx cy w h``, normalised), and ``OUT/data.yaml`` whose
  ``names`` are every class of the sensor's detector in id order (:meth:`Sensor.class_labels`;
  from a firmware that names none, the labels its results named, an id none named ``class_<id>``).
  A folder whose ``data.yaml`` names other classes (another detector's) is refused.

Each frame is the sensor's snapshot (a JPEG of the full camera frame); its stem is
``<label>-<serial>-<frame id>``, so captures from several sensors or sessions go into one
folder side by side. ``OUT/device_info.json`` records the sensor each capture came from
(its :class:`~seedcam.types.DeviceInfo`, one entry per serial number and boot).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from seedcam._jsonable import to_jsonable
from seedcam.errors import SensorTimeout
from seedcam.sensor import Sensor
from seedcam.types import Detection, Result

__all__ = ["DATA_YAML", "DEVICE_INFO_FILE", "LAYOUTS", "CaptureReport", "capture_frames", "yolo_line"]

log = logging.getLogger(__name__)

LAYOUTS = ("classes", "yolo")
DEVICE_INFO_FILE = "device_info.json"
DATA_YAML = "data.yaml"
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_RESULT_WAIT_S = 3.0
_FIRST_FRAME_WAIT_S = 10.0
_KEEP_RESULTS = 256


@dataclass(frozen=True)
class CaptureReport:
    """What :func:`capture_frames` wrote.

    Attributes:
        folder: the dataset folder.
        layout: ``classes`` or ``yolo``.
        images: the image files written, in order.
        objects: YOLO boxes written (0 for the classes layout).
        names: the class names of ``data.yaml`` (yolo), or the one label (classes).
    """

    folder: Path
    layout: str
    images: tuple[Path, ...]
    objects: int
    names: tuple[str, ...]


def yolo_line(detection: Detection) -> str:
    """One YOLO label line for a detection: ``class cx cy w h``, normalised and clipped to the frame."""
    b = detection.box
    x0, y0 = min(max(b.x_min, 0.0), 1.0), min(max(b.y_min, 0.0), 1.0)
    x1, y1 = min(max(b.x_max, 0.0), 1.0), min(max(b.y_max, 0.0), 1.0)
    values = ((x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0)
    return f"{detection.class_id} " + " ".join(f"{v:.6f}" for v in values)


class _Results:
    """The latest results by frame id, from the sensor's callback."""

    def __init__(self) -> None:
        self._by_frame: dict[int, Result] = {}
        self._cond = threading.Condition()

    def add(self, result: Result) -> None:
        with self._cond:
            self._by_frame[result.frame_id] = result
            while len(self._by_frame) > _KEEP_RESULTS:
                self._by_frame.pop(next(iter(self._by_frame)))
            self._cond.notify_all()

    def wait_any(self, timeout: float) -> bool:
        """Wait for a first result (the camera delivers frames); False when none came in time."""
        with self._cond:
            return self._cond.wait_for(lambda: bool(self._by_frame), timeout)

    def wait_newer(self, frame_id: int, timeout: float) -> bool:
        """Wait for a result of a frame after ``frame_id``; False when none came in time."""
        with self._cond:
            return self._cond.wait_for(lambda: any(f > frame_id for f in self._by_frame), timeout)

    def wait_for(self, frame_id: int, timeout: float) -> Result | None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while frame_id not in self._by_frame:
                if any(f > frame_id for f in self._by_frame):  # the frame was not processed (dropped)
                    return None
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._cond.wait(remaining)
            return self._by_frame[frame_id]


def _existing_names(folder: Path) -> tuple[str, ...]:
    """The names of a ``data.yaml`` a capture wrote before (none when there is none)."""
    path = folder / DATA_YAML
    if not path.exists():
        return ()
    match = re.search(r"^names:\s*(\[.*\])\s*$", path.read_text(encoding="utf-8"), re.MULTILINE)
    try:
        names = json.loads(match.group(1)) if match else None
    except ValueError:
        names = None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{path}: expected the line 'names: [\"...\", ...]' a capture writes")
    return tuple(names)


def _check_compatible(path: Path, previous: tuple[str, ...], detector: tuple[str, ...]) -> None:
    """A folder captured from another detector (other names for the same ids) would mix up its classes."""
    clash = [
        i for i, (a, b) in enumerate(zip(previous, detector, strict=False)) if a != b and not a.startswith("class_")
    ]
    if clash:
        i = clash[0]
        raise ValueError(
            f"{path} names class {i} {previous[i]!r}, the sensor's detector {detector[i]!r}: "
            "capture another detector's frames into another folder"
        )


def _names(previous: tuple[str, ...], detector: tuple[str, ...], seen: dict[int, str]) -> tuple[str, ...]:
    """``data.yaml``'s names: the detector's by class id, else those written before and seen now."""
    known = dict(enumerate(previous))
    known.update(seen)
    known.update(enumerate(detector))
    count = max(known, default=-1) + 1
    return tuple(known.get(i, f"class_{i}") for i in range(count))


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _record_device(folder: Path, sensor: Sensor) -> None:
    info = sensor.info()
    path = folder / DEVICE_INFO_FILE
    records = json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
    entry = to_jsonable(info)
    same = [r for r in records if (r.get("serial_number"), r.get("boot_id")) == (info.serial_number, info.boot_id)]
    if not same:
        records.append(entry)
    _write_text(path, json.dumps(records, indent=2) + "\n")


def capture_frames(
    sensor: Sensor,
    out: str | Path,
    *,
    label: str,
    count: int,
    layout: str = "classes",
    interval: float = 0.0,
    quality: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> CaptureReport:
    """Save ``count`` full-resolution frames of the sensor into a dataset folder.

    Args:
        sensor: an open sensor.
        out: the dataset folder (created; captures add to it).
        label: the class (classes layout) or the file-name prefix (yolo layout).
        count: frames to save.
        layout: ``classes`` or ``yolo``.
        interval: seconds between frames (0: as fast as snapshots come).
        quality: JPEG quality 1..100 (0: the device's).
        progress: called with (frames saved, count) after each.

    Raises:
        ValueError: a bad label, count or layout; ``out`` holds a ``data.yaml`` of other classes.
        SensorTimeout: the sensor sent no result of a snapshot's frame (yolo) several times running.
        SensorError: a snapshot failed.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    if not _LABEL.fullmatch(label):
        raise ValueError(f"label {label!r}: use 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit")
    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    folder = Path(out)
    previous: tuple[str, ...] = ()
    detector: tuple[str, ...] = ()
    if layout == "yolo":
        previous = _existing_names(folder)
        detector = sensor.class_labels("detect")
        _check_compatible(folder / DATA_YAML, previous, detector)
    images_dir = folder / label if layout == "classes" else folder / "images"
    images_dir.mkdir(parents=True, exist_ok=True)
    if layout == "yolo":
        (folder / "labels").mkdir(exist_ok=True)
    _record_device(folder, sensor)
    serial = re.sub(r"[^A-Za-z0-9]", "", (sensor.device_info.serial_number if sensor.device_info else "")) or "sensor"
    results = _Results()
    unsubscribe = sensor.on_result(results.add)
    written: list[Path] = []
    seen: dict[int, str] = {}
    objects = misses = 0
    last_frame = -1
    try:
        if not results.wait_any(_FIRST_FRAME_WAIT_S):  # a board just booted may have no frame to snapshot yet
            raise SensorTimeout(f"the sensor sent no result within {_FIRST_FRAME_WAIT_S:g} s: is its camera running?")
        while len(written) < count:
            snap = sensor.snapshot(quality)
            if snap.frame_id <= last_frame:  # the camera has no new frame yet: wait for one, never save one twice
                if not results.wait_newer(last_frame, _RESULT_WAIT_S):
                    raise SensorTimeout(f"the sensor sent no new frame within {_RESULT_WAIT_S:g} s")
                continue
            lines: list[str] = []
            if layout == "yolo":
                result = results.wait_for(snap.frame_id, _RESULT_WAIT_S)
                if result is None:
                    misses += 1
                    if misses >= 5:
                        raise SensorTimeout(f"the sensor sent no result for {misses} snapshot frames in a row")
                    log.info("no result for frame %d (not processed); taking another", snap.frame_id)
                    continue
                misses = 0
                lines = [yolo_line(d) for d in result.detections]
                seen.update({d.class_id: d.label for d in result.detections})
            stem = f"{label}-{serial}-{snap.frame_id:08d}"
            image = images_dir / f"{stem}.jpg"
            image.write_bytes(snap.jpeg)
            if layout == "yolo":
                _write_text(folder / "labels" / f"{stem}.txt", "".join(line + "\n" for line in lines))
                objects += len(lines)
            written.append(image)
            last_frame = snap.frame_id
            if progress is not None:
                progress(len(written), count)
            if interval > 0 and len(written) < count:
                sensor.session.wait_closed(interval)
    finally:
        unsubscribe()
    names: tuple[str, ...] = (label,)
    if layout == "yolo":
        names = _names(previous, detector, seen)
        _write_text(folder / DATA_YAML, f"names: {json.dumps(list(names))}\nnc: {len(names)}\n")
    log.info("captured %d frames into %s (%s layout)", len(written), folder, layout)
    return CaptureReport(folder, layout, tuple(written), objects, names)

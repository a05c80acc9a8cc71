"""``seedcam-tools extract run.mcap --frames DIR``: a recording's preview frames, as a dataset to correct and train on.

Every preview JPEG of the recording (topic ``/seedcam/preview``) whose frame's result is in
the recording too becomes an image of a YOLO folder (``images/``, ``labels/``, ``data.yaml``,
the layout ``--data`` reads; see :mod:`seedcam_tools.datasets`), its result's detections the
labels (to correct by hand: they are the model's guesses, not truth). A recording whose
results hold no detections (lane only) gives the frames alone, as ``DIR/<frame id>.jpg``,
byte for byte as recorded.
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from seedcam._proto import seedcam_pb2 as pb
from seedcam.protocol import codec
from seedcam.recording import RecordingReader, topics
from seedcam.types import Result
from seedcam_tools.datasets import write_yolo_folder
from seedcam_tools.datasets._records import LabelledBox

__all__ = ["ExtractReport", "add_extract_commands", "extract_frames"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExtractReport:
    """What :func:`extract_frames` wrote."""

    frames: int  #: images written
    labelled: int  #: of them, with at least one box
    boxes: int
    names: tuple[str, ...]  #: the YOLO classes (empty: frames only)
    without_result: int  #: previews skipped because their frame's result is not in the recording
    truncated: bool  #: the recording was cut short (read up to its last chunk)


def _stem(frame_id: int) -> str:
    return f"frame_{frame_id:08d}"


def extract_frames(recording: str | Path, out: str | Path) -> ExtractReport:
    """Write the recording's preview frames (and their detections as YOLO labels) into ``out``.

    Raises:
        RecordingError: ``recording`` is not a recording.
        DatasetFormatError: ``out`` is a non-empty folder of another kind.
        ValueError: the recording holds no preview frames (record with ``--preview-fps``).
    """
    reader = RecordingReader(recording)
    results: dict[int, Result] = {}
    previews: list[pb.PreviewChunk] = []
    for item in reader.messages([topics.RESULT, topics.PREVIEW]):
        if isinstance(item.message, pb.Result):
            results[item.message.frame_id] = codec.result_from_pb(item.message)
        elif isinstance(item.message, pb.PreviewChunk) and item.message.offset == 0:
            previews.append(item.message)
    if not previews:
        raise ValueError(f"{recording} holds no preview frames: record with 'seedcam record --preview-fps N'")
    matched = [(p, results[p.frame_id]) for p in previews if p.frame_id in results]
    skipped = len(previews) - len(matched)
    labels = sorted({(d.class_id, d.label) for _, r in matched for d in r.detections})
    root = Path(out)
    if not labels:
        root.mkdir(parents=True, exist_ok=True)
        for preview, _ in matched:
            (root / f"{_stem(preview.frame_id)}.jpg").write_bytes(preview.data)
        return ExtractReport(len(matched), 0, 0, (), skipped, reader.truncated)
    names = tuple(dict.fromkeys(label for _, label in labels))
    items = []
    boxes = labelled = 0
    for preview, result in matched:
        image = _decode(preview.data)
        height, width = image.shape[:2]
        found = [
            LabelledBox(d.label, (d.box.x_min * width, d.box.y_min * height, d.box.x_max * width, d.box.y_max * height))
            for d in result.detections
            if d.box.x_max > d.box.x_min and d.box.y_max > d.box.y_min
        ]
        boxes += len(found)
        labelled += bool(found)
        items.append((_stem(preview.frame_id), image, found))
    write_yolo_folder(root, names, items)
    return ExtractReport(len(items), labelled, boxes, names, skipped, reader.truncated)


def _decode(jpeg: bytes) -> Any:
    import cv2

    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        raise ValueError("a recorded preview frame is not a JPEG that decodes")
    return image


def cmd_extract(args: argparse.Namespace) -> int:
    report = extract_frames(args.recording, args.frames)
    what = (
        f"{report.labelled} with detections ({report.boxes} boxes: {', '.join(report.names)}) as YOLO labels"
        if report.names
        else "no detections (frames only)"
    )
    print(
        f"{args.frames}: {report.frames} frames, {what}"
        + (f"; {report.without_result} previews without their result skipped" if report.without_result else "")
        + ("; the recording was cut short" if report.truncated else "")
    )
    return 0


def add_extract_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``extract`` to the ``seedcam-tools`` sub-commands."""
    extract = commands.add_parser(
        "extract", help="write a recording's preview frames (and detections as YOLO labels) for --data"
    )
    extract.add_argument("recording", type=Path, help="a .mcap recording (seedcam record --preview-fps N)")
    extract.add_argument("--frames", type=Path, required=True, help="the folder to write (a YOLO folder)")
    extract.set_defaults(func=cmd_extract)

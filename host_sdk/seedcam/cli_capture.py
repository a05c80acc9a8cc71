"""``seedcam capture``: save full-resolution frames of the sensor as a training folder (:mod:`seedcam.capture`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from seedcam._cli_common import EXIT_OK, write_json
from seedcam._cli_port import open_sensor
from seedcam.capture import LAYOUTS, capture_frames

__all__ = ["add_capture_commands"]


@contextmanager
def _bar(enabled: bool, total: int) -> Iterator[Callable[[int, int], None] | None]:
    if not enabled:
        yield None
        return
    from tqdm import tqdm

    bar: Any = tqdm(total=total, unit="frame", desc="capture")

    def update(done: int, _: int) -> None:
        bar.update(done - bar.n)

    try:
        yield update
    finally:
        bar.close()


def cmd_capture(args: argparse.Namespace, out: TextIO) -> int:
    """``seedcam capture --label NAME -n 50 -o DIR [--layout classes|yolo]``."""
    label = args.label or ("capture" if args.layout == "yolo" else None)
    if label is None:
        raise ValueError("capture --layout classes needs --label NAME (the class of these frames)")
    with open_sensor(args) as sensor, _bar(not args.quiet, args.count) as progress:
        report = capture_frames(
            sensor,
            args.output,
            label=label,
            count=args.count,
            layout=args.layout,
            interval=args.interval,
            quality=args.quality,
            progress=progress,
        )
    if args.json:
        write_json(out, report)
        return EXIT_OK
    where = report.images[0].parent if report.images else report.folder
    boxes = f", {report.objects} boxes, names {', '.join(report.names)}" if report.layout == "yolo" else ""
    out.write(f"wrote {len(report.images)} frames to {where} ({report.layout} layout{boxes})\n")
    return EXIT_OK


def add_capture_commands(
    commands: argparse._SubParsersAction,  # type: ignore[type-arg]
    shared: argparse.ArgumentParser,
) -> None:
    """Add ``seedcam capture`` to the ``seedcam`` sub-commands."""
    text = "save full-resolution frames for training: class folders or the YOLO layout"
    capture = commands.add_parser("capture", parents=[shared], help=text, description=f"{text}.")
    capture.add_argument("--label", help="class of the frames (classes layout; yolo: the file-name prefix)")
    capture.add_argument("-n", "--count", type=int, default=50, help="frames to save (default 50)")
    capture.add_argument("-o", "--output", type=Path, required=True, help="dataset folder (captures add to it)")
    capture.add_argument("--layout", choices=LAYOUTS, default="classes", help="classes (default) or yolo")
    capture.add_argument("--interval", type=float, default=0.0, help="seconds between frames (default 0)")
    capture.add_argument("--quality", type=int, default=0, help="JPEG quality 1..100 (default: the device's)")
    capture.set_defaults(func=cmd_capture)

"""Plate OCR folders: ``ocr.jsonl`` lines ``{"image", "box", "text"}`` and their images."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._common import (
    DatasetFormatError,
    atomic_write,
    check_box,
    check_stem,
    check_text,
    json_box,
    lines_by_image,
    prepare_output,
    read_jsonl,
    relative_path,
    require,
    resolve_file,
)
from ._images import encode_png, sized

log = logging.getLogger(__name__)

OCR_JSONL = "ocr.jsonl"

Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class OcrItem:
    """One labelled plate.

    Attributes:
        image: the frame holding the plate.
        box: ``(x0, y0, x1, y1)`` pixels of the plate in that frame.
        text: the plate text, printable ASCII.
    """

    image: Path
    box: Box
    text: str


def read_ocr_folder(path: str | Path) -> tuple[OcrItem, ...]:
    """Read ``DIR/ocr.jsonl``; several lines may name the same image.

    Args:
        path: the folder.

    Returns:
        One item per line, in file order.

    Raises:
        DatasetFormatError: a missing file, a malformed line, a missing key, a bad box or
            text, a missing image, or an image path leaving the folder.
    """
    root = Path(path)
    if not root.is_dir():
        raise DatasetFormatError(f"{root}: not a folder")
    index = root / OCR_JSONL
    sizes: dict[Path, tuple[int, int]] = {}
    items = []
    for number, obj in read_jsonl(index, what="an OCR folder's index", root=root):
        where = f"{index}:{number}"
        image = resolve_file(root, relative_path(require(obj, "image", where=where), where=where), where=where)
        box = json_box(require(obj, "box", where=where), where=where)
        text = check_text(require(obj, "text", where=where), where=where)
        if image not in sizes:
            sizes[image] = sized(image, where=where)
        check_box(box, *sizes[image], where=where)
        items.append(OcrItem(image, box, text))
    log.debug("%s: %d plates in %d images", root, len(items), len(sizes))
    return tuple(items)


def write_ocr_folder(path: str | Path, items: Iterable[tuple[str, np.ndarray, Sequence[tuple[Box, str]]]]) -> Path:
    """Write ``images/<stem>.png`` per item and one ``ocr.jsonl`` line per plate.

    Writing into an existing OCR folder adds the items; a stem already there is replaced
    (the lines for its image are dropped).

    Args:
        path: the folder (created with its parents).
        items: ``(stem, H x W x 3 uint8 BGR image, [(box in pixels, text), ...])``.

    Returns:
        The folder.

    Raises:
        DatasetFormatError: the folder is non-empty and not an OCR dataset, or an item is bad
            (stem, image, box, text).
    """
    root, existing = prepare_output(path, marker=OCR_JSONL, kind="OCR")
    index = root / OCR_JSONL
    if existing:
        read_ocr_folder(root)  # validates what is kept
        kept = lines_by_image(index)
    else:
        kept = []
        atomic_write(index, "")
    (root / "images").mkdir(exist_ok=True)
    new_lines: list[str] = []
    written: set[str] = set()
    seen: set[str] = set()
    for stem, image, plates in items:
        where = f"item {stem!r}"
        check_stem(stem, seen, where=where)
        data, width, height = encode_png(image, where=where)
        rel = f"images/{stem}.png"
        for j, (box, text) in enumerate(plates):
            at = f"{where} plate {j}"
            values = json_box(list(box), where=at)
            check_box(values, width, height, where=at)
            new_lines.append(json.dumps({"image": rel, "box": list(values), "text": check_text(text, where=at)}))
        atomic_write(root / rel, data, durable=False)
        written.add(rel)
    lines = [line for image, line in kept if image not in written] + new_lines
    atomic_write(index, "".join(line + "\n" for line in lines))
    log.info("%s: wrote %d images, %d plates", root, len(written), len(new_lines))
    return root

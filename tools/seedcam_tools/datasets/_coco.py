"""Detection datasets as a COCO JSON file (``images``, ``annotations``, ``categories``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from ._common import (
    DatasetFormatError,
    atomic_write,
    check_box,
    check_names,
    check_stem,
    inside,
    integer,
    json_box,
    load_json_object,
    prepare_output,
    relative_path,
    require,
)
from ._images import encode_png
from ._records import DetectionFolder, DetectionItem, LabelledBox, checked_boxes

log = logging.getLogger(__name__)

ANNOTATIONS_JSON = "annotations.json"


def read_coco_file(json_path: Path) -> DetectionFolder:
    """Read a COCO detection file; images are found next to it or in its ``images/`` folder.

    ``iscrowd: 1`` annotations become difficult (ignored) objects. Names are the categories
    in order of id.

    Args:
        json_path: the JSON file.

    Returns:
        The folder, boxes converted to ``(x0, y0, x1, y1)`` pixels.

    Raises:
        DatasetFormatError: malformed JSON or entries, unknown image or category ids, bad
            boxes, missing images, or a file name leaving the folder.
    """
    raw = load_json_object(json_path, what="a COCO annotations file")
    root = json_path.parent
    categories: dict[int, str] = {}
    for i, cat in enumerate(_entries(raw, "categories", json_path)):
        where = f"{json_path}: categories[{i}]"
        cid = integer(require(cat, "id", where=where), what="id", where=where)
        if cid in categories:
            raise DatasetFormatError(f"{where}: category id {cid} appears twice")
        categories[cid] = require(cat, "name", where=where)
    names = check_names([categories[k] for k in sorted(categories)], where=f"{json_path}: categories")
    categories = {k: names[i] for i, k in enumerate(sorted(categories))}
    images: dict[int, tuple[Path, int, int, list[LabelledBox]]] = {}
    for i, entry in enumerate(_entries(raw, "images", json_path)):
        where = f"{json_path}: images[{i}]"
        iid = integer(require(entry, "id", where=where), what="id", where=where)
        if iid in images:
            raise DatasetFormatError(f"{where}: image id {iid} appears twice")
        rel = relative_path(require(entry, "file_name", where=where), where=where)
        width = integer(require(entry, "width", where=where), what="width", where=where, minimum=1)
        height = integer(require(entry, "height", where=where), what="height", where=where, minimum=1)
        images[iid] = (find_image(root, rel, where=where), width, height, [])
    for i, ann in enumerate(_entries(raw, "annotations", json_path)):
        where = f"{json_path}: annotations[{i}]"
        iid = integer(require(ann, "image_id", where=where), what="image_id", where=where)
        if iid not in images:
            raise DatasetFormatError(f"{where}: image_id {iid} is not in images")
        cid = integer(require(ann, "category_id", where=where), what="category_id", where=where)
        if cid not in categories:
            raise DatasetFormatError(f"{where}: category_id {cid} is not in categories {sorted(categories)}")
        x, y, w, h = json_box(require(ann, "bbox", where=where), where=where)
        crowd = ann.get("iscrowd", 0)
        if crowd not in (0, 1):  # True / False compare equal to 1 / 0
            raise DatasetFormatError(f"{where}: iscrowd must be 0 or 1, got {crowd!r}")
        _, width, height, objects = images[iid]
        box = (x, y, x + w, y + h)
        check_box(box, width, height, where=where)
        objects.append(LabelledBox(categories[cid], box, crowd == 1))
    items = tuple(DetectionItem(p, w, h, tuple(objs)) for p, w, h, objs in images.values())
    return DetectionFolder(names, items, "coco")


def write_coco_file(
    path: str | Path, names: Sequence[str], items: Iterable[tuple[str, np.ndarray, Sequence[LabelledBox]]]
) -> Path:
    """Write ``images/<stem>.png`` and a COCO file (``annotations.json`` unless ``path`` ends in ``.json``).

    Category ids are 1..n in the order of ``names``; difficult boxes are written ``iscrowd: 1``.
    Writing into an existing COCO folder with the same categories adds the items; a stem
    already there is replaced.

    Args:
        path: the folder, or the JSON file to write in its folder.
        names: class names.
        items: ``(stem, H x W x 3 uint8 BGR image, boxes in pixels)``.

    Returns:
        The JSON file.

    Raises:
        DatasetFormatError: the folder is non-empty and not this kind of dataset (or has other
            categories), or an item is bad (stem, image, unknown label, box).
    """
    names_t = check_names(list(names), where="write_coco_file names")
    target = Path(path)
    folder, json_name = (target.parent, target.name) if target.suffix.lower() == ".json" else (target, ANNOTATIONS_JSON)
    root, existing = prepare_output(folder, marker=json_name, kind="COCO")
    json_path = root / json_name
    if existing:
        old = read_coco_file(json_path)  # validates the folder
        if old.names != names_t:
            raise DatasetFormatError(f"{json_path}: has categories {list(old.names)}, not {list(names_t)}")
        doc: dict[str, Any] = load_json_object(json_path, what="a COCO annotations file")
        cat_ids = {c["name"]: int(c["id"]) for c in doc["categories"]}
        old_paths = {int(e["id"]): p.image for e, p in zip(doc["images"], old.items, strict=True)}
    else:
        cat_ids = {name: i + 1 for i, name in enumerate(names_t)}
        doc = {"info": {"description": "seedcam dataset"}, "images": [], "annotations": []}
        doc["categories"] = [{"id": cid, "name": name} for name, cid in cat_ids.items()]
        old_paths = {}
        atomic_write(json_path, json.dumps(doc) + "\n")
    images_dir = root / "images"
    images_dir.mkdir(exist_ok=True)
    next_image = max((int(e["id"]) for e in doc["images"]), default=0) + 1
    next_ann = max((int(a.get("id", 0)) for a in doc["annotations"] if isinstance(a.get("id"), int)), default=0) + 1
    new_images: list[dict[str, Any]] = []
    new_anns: list[dict[str, Any]] = []
    seen: set[str] = set()
    for stem, image, boxes in items:
        where = f"item {stem!r}"
        check_stem(stem, seen, where=where)
        data, width, height = encode_png(image, where=where)
        for b in checked_boxes(boxes, names_t, width, height, where=where):
            x0, y0, x1, y1 = b.box
            bbox = [x0, y0, x1 - x0, y1 - y0]
            new_anns.append(
                {
                    "id": next_ann,
                    "image_id": next_image,
                    "category_id": cat_ids[b.label],
                    "bbox": bbox,
                    "area": bbox[2] * bbox[3],
                    "iscrowd": int(b.difficult),
                }
            )
            next_ann += 1
        atomic_write(images_dir / f"{stem}.png", data, durable=False)
        new_images.append({"id": next_image, "file_name": f"{stem}.png", "width": width, "height": height})
        next_image += 1
    replaced = {images_dir / f"{stem}.png" for stem in seen}
    dropped = {iid for iid, p in old_paths.items() if p in replaced}
    doc["images"] = [e for e in doc["images"] if int(e["id"]) not in dropped] + new_images
    doc["annotations"] = [a for a in doc["annotations"] if int(a["image_id"]) not in dropped] + new_anns
    atomic_write(json_path, json.dumps(doc) + "\n")
    log.info("%s: wrote %d images (%d replaced)", json_path, len(new_images), len(dropped))
    return json_path


def find_image(root: Path, rel: PurePosixPath, *, where: str) -> Path:
    """``root/rel``, else ``root/images/rel``; it must exist and stay inside ``root``.

    Raises:
        DatasetFormatError: found in neither place, or a link leads outside ``root``.
    """
    for candidate in (root.joinpath(*rel.parts), root.joinpath("images", *rel.parts)):
        if candidate.is_file():
            if not inside(root, candidate):
                raise DatasetFormatError(f"{where}: {rel} resolves outside the dataset folder {root}; refused")
            return candidate
    raise DatasetFormatError(f"{where}: image {rel} not found in {root} or {root / 'images'}")


def _entries(raw: dict[str, Any], key: str, json_path: Path) -> list[dict[str, Any]]:
    value = raw.get(key)
    if not isinstance(value, list):
        raise DatasetFormatError(f"{json_path}: {key!r} must be a list, got {type(value).__name__}")
    for i, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise DatasetFormatError(f"{json_path}: {key}[{i}] must be an object, got {type(entry).__name__}")
    return value

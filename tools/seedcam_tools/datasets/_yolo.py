"""Detection folders in the YOLO / Ultralytics layout (``data.yaml``, ``images/``, ``labels/``)."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import yaml

from ._common import (
    IMAGE_SUFFIXES,
    DatasetFormatError,
    atomic_write,
    check_box,
    check_names,
    check_stem,
    inside,
    prepare_output,
    read_text,
)
from ._images import encode_png, sized
from ._records import DetectionFolder, DetectionItem, LabelledBox, checked_boxes

log = logging.getLogger(__name__)

DATA_YAML = "data.yaml"
SPLIT_KEYS = ("train", "val", "test")


def read_yolo_folder(root: Path, *, split: str | None = None) -> DetectionFolder:
    """Read a YOLO folder (see the package docstring for the layout).

    Args:
        root: the folder holding ``data.yaml``.
        split: a ``data.yaml`` split key (``"train"``, ``"val"``, ``"test"``); None picks
            ``val``, else ``test``, else the plain ``images/`` layout.

    Returns:
        The folder, boxes in pixels.

    Raises:
        DatasetFormatError: a missing or malformed file, an unknown class, a bad box, or a
            path leaving ``root``.
    """
    yaml_path = root / DATA_YAML
    config = _load_yaml(yaml_path)
    names = _parse_names(config, yaml_path)
    items = []
    labels_seen: dict[Path, Path] = {}
    for image, label in _images_and_labels(root, yaml_path, config, split):
        if label in labels_seen:
            raise DatasetFormatError(f"{image}: shares its label file {label} with {labels_seen[label]}")
        labels_seen[label] = image
        width, height = sized(image, where=str(image))
        objects: tuple[LabelledBox, ...] = ()
        if label.is_file():
            if not inside(root, label):
                raise DatasetFormatError(f"{label}: resolves outside the dataset folder {root}; refused")
            objects = _read_labels(label, names, width, height)
        items.append(DetectionItem(image, width, height, objects))
    log.debug("%s: %d images, %d objects", root, len(items), sum(len(i.objects) for i in items))
    return DetectionFolder(names, tuple(items), "yolo")


def write_yolo_folder(
    path: str | Path, names: Sequence[str], items: Iterable[tuple[str, np.ndarray, Sequence[LabelledBox]]]
) -> Path:
    """Write a plain-layout YOLO folder: ``images/<stem>.png``, ``labels/<stem>.txt``, ``data.yaml``.

    Writing into an existing YOLO folder with the same names adds the items; a stem already
    there is replaced (its image in any format and its label file).

    Args:
        path: the folder (created with its parents).
        names: class names; index i is class i.
        items: ``(stem, H x W x 3 uint8 BGR image, boxes in pixels)``.

    Returns:
        The folder.

    Raises:
        DatasetFormatError: the folder is non-empty and not this kind of dataset (or has other
            names, or the split layout), or an item is bad (stem, image, unknown label, box).
    """
    names_t = check_names(list(names), where="write_yolo_folder names")
    root, existing = prepare_output(path, marker=DATA_YAML, kind="YOLO")
    yaml_path = root / DATA_YAML
    if existing:
        config = _load_yaml(yaml_path)
        old = _parse_names(config, yaml_path)
        if old != names_t:
            raise DatasetFormatError(f"{yaml_path}: has names {list(old)}, not {list(names_t)}; refusing to mix")
        if any(config.get(k) for k in SPLIT_KEYS):
            raise DatasetFormatError(f"{yaml_path}: uses the split layout; this writer writes the plain layout only")
    else:
        body = yaml.safe_dump({"names": dict(enumerate(names_t)), "nc": len(names_t)}, sort_keys=False)
        atomic_write(yaml_path, body)
    images_dir, labels_dir = root / "images", root / "labels"
    images_dir.mkdir(exist_ok=True)
    labels_dir.mkdir(exist_ok=True)
    index = {name: i for i, name in enumerate(names_t)}
    seen: set[str] = set()
    for stem, image, boxes in items:
        where = f"item {stem!r}"
        check_stem(stem, seen, where=where)
        data, width, height = encode_png(image, where=where)
        lines = []
        for b in checked_boxes(boxes, names_t, width, height, where=where):
            x0, y0, x1, y1 = b.box
            values = ((x0 + x1) / 2 / width, (y0 + y1) / 2 / height, (x1 - x0) / width, (y1 - y0) / height)
            lines.append(f"{index[b.label]} " + " ".join(f"{v:.12g}" for v in values) + (" 1" if b.difficult else ""))
        for other in images_dir.iterdir():
            if other.stem == stem and other.suffix.lower() in IMAGE_SUFFIXES and other.suffix != ".png":
                other.unlink()
        atomic_write(images_dir / f"{stem}.png", data, durable=False)
        atomic_write(labels_dir / f"{stem}.txt", "".join(line + "\n" for line in lines))
    log.info("%s: wrote %d images", root, len(seen))
    return root


def _load_yaml(path: Path) -> dict[str, Any]:
    text = read_text(path, what="a YOLO folder's data.yaml", root=path.parent)
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise DatasetFormatError(f"{path}: malformed YAML: {e}") from None
    if not isinstance(config, dict):
        raise DatasetFormatError(f"{path}: expected a mapping with 'names', got {type(config).__name__}")
    return config


def _parse_names(config: dict[str, Any], path: Path) -> tuple[str, ...]:
    where = str(path)
    value = config.get("names")
    if isinstance(value, dict):
        by_index = {}
        for key, name in value.items():
            if isinstance(key, bool) or not (isinstance(key, int) or (isinstance(key, str) and key.isdigit())):
                raise DatasetFormatError(f"{where}: names key {key!r} is not a class index")
            by_index[int(key)] = name
        if sorted(by_index) != list(range(len(by_index))):
            raise DatasetFormatError(f"{where}: names indices must be 0..{len(by_index) - 1}, got {sorted(by_index)}")
        value = [by_index[i] for i in range(len(by_index))]
    elif not isinstance(value, list):
        raise DatasetFormatError(f"{where}: 'names' must be a list or an index -> name mapping, got {value!r}")
    names = check_names(value, where=where)
    nc = config.get("nc")
    if nc is not None and nc != len(names):
        raise DatasetFormatError(f"{where}: nc is {nc!r} but names has {len(names)} entries")
    return names


def _images_and_labels(
    root: Path, yaml_path: Path, config: dict[str, Any], split: str | None
) -> list[tuple[Path, Path]]:
    if split is None:
        split = next((k for k in ("val", "test") if config.get(k)), None)
    elif split not in SPLIT_KEYS:
        raise DatasetFormatError(f"{yaml_path}: split must be one of {', '.join(SPLIT_KEYS)}, got {split!r}")
    elif not config.get(split):
        present = [k for k in SPLIT_KEYS if config.get(k)]
        raise DatasetFormatError(f"{yaml_path}: no {split!r} split (splits named: {present or 'none'})")
    if split is None:
        images_dir = root / "images"
        if not images_dir.is_dir() or not inside(root, images_dir):
            raise DatasetFormatError(f"{root}: no images/ folder inside it, and {DATA_YAML} names no val:/test: split")
        files = sorted(p for p in images_dir.iterdir() if _is_image(p))
        for p in files:
            if not inside(root, p):
                raise DatasetFormatError(f"{p}: resolves outside the dataset folder {root}; refused")
        return [(images_dir / f.name, root / "labels" / f"{f.stem}.txt") for f in files]
    entries = config[split] if isinstance(config[split], list) else [config[split]]
    pairs: list[tuple[Path, Path]] = []
    for entry in entries:
        if not isinstance(entry, str) or not entry.strip():
            raise DatasetFormatError(f"{yaml_path}: {split}: entries must be folder or .txt paths, got {entry!r}")
        for image in _split_images(root, yaml_path, config, f"{split}: {entry}", entry):
            rel = PurePosixPath(image.resolve().relative_to(root.resolve()).as_posix())
            pairs.append((root.joinpath(*rel.parts), root.joinpath(*_label_of(rel).parts)))
    return pairs


def _split_images(root: Path, yaml_path: Path, config: dict[str, Any], what: str, entry: str) -> list[Path]:
    entry_path = Path(entry.replace("\\", "/"))
    bases = [yaml_path.parent]
    if isinstance(config.get("path"), str) and config["path"].strip():
        base = Path(config["path"].replace("\\", "/"))
        bases.insert(0, base if base.is_absolute() else yaml_path.parent / base)
    candidates = [entry_path] if entry_path.is_absolute() else [b / entry_path for b in bases]
    refused = []
    for candidate in candidates:
        if not inside(root, candidate):
            refused.append(str(candidate))
        elif candidate.is_dir():
            found = sorted(p for p in candidate.rglob("*") if _is_image(p))
            for p in found:
                if not inside(root, p):
                    raise DatasetFormatError(f"{p}: resolves outside the dataset folder {root}; refused")
            return found
        elif candidate.is_file() and candidate.suffix.lower() == ".txt":
            return _image_list(root, candidate)
    if refused:
        raise DatasetFormatError(f"{yaml_path}: {what} refused: {', '.join(refused)} is outside the dataset folder")
    raise DatasetFormatError(f"{yaml_path}: {what} not found (looked for {', '.join(map(str, candidates))})")


def _image_list(root: Path, listing: Path) -> list[Path]:
    images = []
    for number, line in enumerate(read_text(listing, what="an image list").split("\n"), 1):
        line = line.strip()
        if not line:
            continue
        p = Path(line.replace("\\", "/"))
        p = p if p.is_absolute() else listing.parent / p
        if not inside(root, p):
            raise DatasetFormatError(f"{listing}:{number}: {line!r} is outside the dataset folder {root}; refused")
        if not p.is_file():
            raise DatasetFormatError(f"{listing}:{number}: image file {p} not found")
        images.append(p)
    return images


def _label_of(rel: PurePosixPath) -> PurePosixPath:
    """Ultralytics' rule: the last ``images`` folder becomes ``labels``, the suffix ``.txt``."""
    parts = list(rel.parts[:-1])
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] == "images":
            parts[i] = "labels"
            break
    return PurePosixPath(*parts, rel.stem + ".txt")


def _is_image(p: Path) -> bool:
    return p.suffix.lower() in IMAGE_SUFFIXES and not p.name.startswith(".") and p.is_file()


def _read_labels(path: Path, names: tuple[str, ...], width: int, height: int) -> tuple[LabelledBox, ...]:
    out = []
    for number, line in enumerate(read_text(path, what="a YOLO label file").split("\n"), 1):
        fields = line.split()
        if not fields:
            continue
        where = f"{path}:{number}"
        if len(fields) not in (5, 6):
            raise DatasetFormatError(f"{where}: expected 'class cx cy w h [difficult]', got {len(fields)} columns")
        cls = _number(fields[0], "class index", where)
        if not cls.is_integer() or not 0 <= cls < len(names):
            raise DatasetFormatError(f"{where}: class index {fields[0]} is not in data.yaml names 0..{len(names) - 1}")
        cx, cy, w, h = (_number(v, "box value", where) for v in fields[1:5])
        difficult = _number(fields[5], "difficult flag", where) if len(fields) == 6 else 0.0
        if difficult not in (0.0, 1.0):
            raise DatasetFormatError(f"{where}: difficult flag must be 0 or 1, got {fields[5]}")
        box = ((cx - w / 2) * width, (cy - h / 2) * height, (cx + w / 2) * width, (cy + h / 2) * height)
        check_box(box, width, height, where=where)
        out.append(LabelledBox(names[int(cls)], box, difficult == 1.0))
    return tuple(out)


def _number(token: str, what: str, where: str) -> float:
    try:
        value = float(token)
    except ValueError:
        raise DatasetFormatError(f"{where}: {what} {token!r} is not a number") from None
    if not math.isfinite(value):
        raise DatasetFormatError(f"{where}: {what} {token!r} is not finite")
    return value

"""Detection folders of either kind: YOLO (``data.yaml``) or COCO (a JSON file)."""

from __future__ import annotations

import logging
from pathlib import Path

from ._coco import ANNOTATIONS_JSON, read_coco_file
from ._common import DatasetFormatError, inside
from ._records import DetectionFolder
from ._yolo import DATA_YAML, read_yolo_folder

log = logging.getLogger(__name__)


def read_detection_folder(path: str | Path, *, split: str | None = None) -> DetectionFolder:
    """Read a detection dataset: a YOLO folder, a COCO folder, or a COCO ``.json`` file.

    A folder with ``data.yaml`` is YOLO; else a folder with ``annotations.json`` is COCO.

    Args:
        path: the folder, or a COCO JSON file.
        split: YOLO split-layout key (``"train"``, ``"val"``, ``"test"``); None picks ``val``,
            else ``test``, else the plain ``images/`` layout. Not allowed for COCO.

    Returns:
        The names and items; boxes in pixels.

    Raises:
        DatasetFormatError: the path is neither kind, or the dataset is malformed.
    """
    p = Path(path)
    if p.is_file() and p.suffix.lower() == ".json":
        json_path = p
    elif p.is_dir() and (p / DATA_YAML).is_file():
        if (p / ANNOTATIONS_JSON).is_file():
            log.warning("%s: has both %s and %s; reading it as YOLO", p, DATA_YAML, ANNOTATIONS_JSON)
        return read_yolo_folder(p, split=split)
    elif p.is_dir() and (p / ANNOTATIONS_JSON).is_file():
        json_path = p / ANNOTATIONS_JSON
        if not inside(p, json_path):
            raise DatasetFormatError(f"{json_path}: resolves outside the dataset folder {p} (symbolic link?); refused")
    elif p.is_dir():
        raise DatasetFormatError(
            f"{p}: not a detection dataset: expected {DATA_YAML} (YOLO layout) or {ANNOTATIONS_JSON} (COCO)"
        )
    else:
        raise DatasetFormatError(f"{p}: not found, or neither a folder nor a .json file")
    if split is not None:
        raise DatasetFormatError(f"{json_path}: split={split!r} applies to YOLO folders only, not to COCO files")
    return read_coco_file(json_path)

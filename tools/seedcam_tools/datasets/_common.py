"""Pieces shared by every dataset format: the error, paths, validation, atomic writes."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import secrets
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from seedcam.errors import SensorError

log = logging.getLogger(__name__)

#: image file suffixes a folder listing picks up (compared case-insensitively)
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")
#: how far (pixels) a box may reach outside its image before it is an error
BOX_SLACK_PX = 1.0
_STEM_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")


class DatasetFormatError(SensorError, ValueError):
    """A dataset folder or file is malformed, or a writer was given bad items.

    The message names the file, the line number or entry, and what is wrong.
    """


def relative_path(value: object, *, where: str) -> PurePosixPath:
    """Check a path written in an index file: relative, no ``..``; backslashes count as ``/``.

    Raises:
        DatasetFormatError: not a non-empty string, absolute, or containing ``..``.
    """
    if not isinstance(value, str) or not value.strip():
        raise DatasetFormatError(f"{where}: image path must be a non-empty string, got {value!r}")
    text = value.replace("\\", "/")
    path = PurePosixPath(text)
    if path.is_absolute() or re.match(r"^[A-Za-z]:", text):
        raise DatasetFormatError(
            f"{where}: absolute path {value!r} refused; paths must be relative to the dataset folder"
        )
    if ".." in path.parts:
        raise DatasetFormatError(f"{where}: path {value!r} refused; '..' would leave the dataset folder")
    if not path.parts:
        raise DatasetFormatError(f"{where}: path {value!r} names no file")
    return path


def inside(root: Path, candidate: Path) -> bool:
    """Whether ``candidate`` (symbolic links followed) lies inside ``root``."""
    try:
        candidate.resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return False
    return True


def resolve_file(root: Path, rel: PurePosixPath, *, where: str) -> Path:
    """The file ``root/rel``, which must exist and stay inside ``root``.

    Raises:
        DatasetFormatError: the file is missing, or a link takes it outside ``root``.
    """
    path = root.joinpath(*rel.parts)
    if not inside(root, path):
        raise DatasetFormatError(f"{where}: {rel} resolves outside the dataset folder {root} (symbolic link?); refused")
    if not path.is_file():
        raise DatasetFormatError(f"{where}: image file {path} not found")
    return path


def read_text(path: Path, *, what: str, root: Path | None = None) -> str:
    """A UTF-8 text file (BOM tolerated).

    Args:
        path: the file.
        what: what the file is for (messages).
        root: if given, the file (links followed) must lie inside this folder.

    Raises:
        DatasetFormatError: missing, unreadable, or outside ``root``.
    """
    if not path.is_file():
        raise DatasetFormatError(f"{path}: not found ({what})")
    if root is not None and not inside(root, path):
        raise DatasetFormatError(f"{path}: resolves outside the dataset folder {root} (symbolic link?); refused")
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetFormatError(f"{path}: cannot read ({what}): {e}") from e


def load_json_object(path: Path, *, what: str, root: Path | None = None) -> dict[str, Any]:
    """A JSON file holding one object.

    Raises:
        DatasetFormatError: missing, malformed (line and column named), or not an object.
    """
    text = read_text(path, what=what, root=root)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise DatasetFormatError(f"{path}:{e.lineno}: malformed JSON: {e.msg} (column {e.colno})") from None
    if not isinstance(obj, dict):
        raise DatasetFormatError(f"{path}: expected a JSON object, got {type(obj).__name__}")
    return obj


def read_jsonl(path: Path, *, what: str, root: Path | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for each non-blank line of a JSON-lines file.

    Raises:
        DatasetFormatError: missing file, malformed line, or a line that is not an object.
    """
    for number, line in enumerate(read_text(path, what=what, root=root).split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise DatasetFormatError(f"{path}:{number}: malformed JSON: {e.msg} (column {e.colno})") from None
        if not isinstance(obj, dict):
            raise DatasetFormatError(f"{path}:{number}: expected a JSON object, got {type(obj).__name__}")
        yield number, obj


def lines_by_image(path: Path) -> list[tuple[str, str]]:
    """``(normalised image path, raw line)`` for each line of an already validated JSON-lines index."""
    out = []
    for line in read_text(path, what="index").split("\n"):
        if line.strip():
            out.append((str(PurePosixPath(json.loads(line)["image"].replace("\\", "/"))), line.rstrip("\r")))
    return out


def require(obj: Mapping[str, Any], key: str, *, where: str) -> Any:
    """``obj[key]``; DatasetFormatError naming ``where`` if the key is missing."""
    if key not in obj:
        raise DatasetFormatError(f"{where}: missing key {key!r}")
    return obj[key]


def finite(value: object, *, what: str, where: str) -> float:
    """A JSON number as a finite float.

    Raises:
        DatasetFormatError: not a number (booleans are not), NaN or infinite.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise DatasetFormatError(f"{where}: {what} must be a number, got {value!r}")
    try:
        result = float(value)
    except OverflowError:
        result = math.inf
    if not math.isfinite(result):
        raise DatasetFormatError(f"{where}: {what} is not finite ({value!r})")
    return result


def integer(value: object, *, what: str, where: str, minimum: int | None = None) -> int:
    """A JSON integer (an integral float is accepted), at least ``minimum``.

    Raises:
        DatasetFormatError: not an integer, or below ``minimum``.
    """
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise DatasetFormatError(f"{where}: {what} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise DatasetFormatError(f"{where}: {what} must be at least {minimum}, got {value}")
    return value


def json_box(value: object, *, where: str) -> tuple[float, float, float, float]:
    """A JSON list of 4 finite numbers.

    Raises:
        DatasetFormatError: not a list of 4 finite numbers.
    """
    if not isinstance(value, list | tuple) or len(value) != 4:
        raise DatasetFormatError(f"{where}: box must be a list of 4 numbers, got {value!r}")
    x0, y0, x1, y1 = (finite(v, what="box value", where=where) for v in value)
    return x0, y0, x1, y1


def check_box(box: Sequence[float], width: int, height: int, *, where: str) -> None:
    """Check a pixel box ``(x0, y0, x1, y1)`` against its image.

    Raises:
        DatasetFormatError: a non-finite value, x1 <= x0 or y1 <= y0, or reaching more than
            :data:`BOX_SLACK_PX` outside the image.
    """
    shown = "(" + ", ".join(f"{float(v):.6g}" for v in box) + ")"
    if len(box) != 4 or not all(math.isfinite(float(v)) for v in box):
        raise DatasetFormatError(f"{where}: box {shown} must be 4 finite numbers")
    x0, y0, x1, y1 = (float(v) for v in box)
    if x1 <= x0 or y1 <= y0:
        raise DatasetFormatError(f"{where}: box {shown} is empty or inverted (needs x1 > x0 and y1 > y0)")
    s = BOX_SLACK_PX
    if x0 < -s or y0 < -s or x1 > width + s or y1 > height + s:
        raise DatasetFormatError(f"{where}: box {shown} lies outside the {width}x{height} image")


def check_text(value: object, *, where: str) -> str:
    """A non-empty label text of printable ASCII (space to ``~``).

    Raises:
        DatasetFormatError: not a string, empty, or another character.
    """
    if not isinstance(value, str) or not value:
        raise DatasetFormatError(f"{where}: text must be a non-empty string, got {value!r}")
    for ch in value:
        if not " " <= ch <= "~":
            raise DatasetFormatError(f"{where}: text {value!r} has {ch!r}, which is not printable ASCII")
    return value


def check_names(names: Sequence[object], *, where: str) -> tuple[str, ...]:
    """Class names: a non-empty sequence of distinct non-empty strings.

    Raises:
        DatasetFormatError: empty, a non-string or empty name, or a duplicate.
    """
    if isinstance(names, str) or not names:
        raise DatasetFormatError(f"{where}: names must be a non-empty list of class names, got {names!r}")
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name.strip():
            raise DatasetFormatError(f"{where}: class {i} name must be a non-empty string (quote it), got {name!r}")
        if name in names[:i]:
            raise DatasetFormatError(f"{where}: class name {name!r} appears twice")
    return tuple(str(n) for n in names)


def check_stem(stem: object, seen: set[str], *, where: str) -> str:
    """An item stem usable as a file name, not seen before in this write.

    Raises:
        DatasetFormatError: not a plain file name (letters, digits, ``._-``), or a repeat.
    """
    if not isinstance(stem, str) or not _STEM_RE.match(stem):
        raise DatasetFormatError(f"{where}: stem {stem!r} must be a file name of letters, digits and . _ -")
    if stem in seen:
        raise DatasetFormatError(f"{where}: stem {stem!r} given twice")
    seen.add(stem)
    return stem


def atomic_write(path: Path, data: bytes | str, *, durable: bool = True) -> None:
    """Write a file through a temporary file in the same folder and :func:`os.replace`.

    Args:
        path: destination.
        data: bytes, or text written as UTF-8.
        durable: fsync before the rename (index files).

    Raises:
        OSError: the write failed (the temporary file is removed).
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "xb") as f:
            f.write(raw)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def prepare_output(path: str | Path, *, marker: str, kind: str) -> tuple[Path, bool]:
    """Create a writer's folder, or accept an existing one of the same kind.

    Args:
        path: the folder.
        marker: the index file that marks a folder of this kind.
        kind: format name for messages.

    Returns:
        The folder and whether it already held a dataset of this kind.

    Raises:
        DatasetFormatError: ``path`` is a file, or a non-empty folder of another kind.
    """
    root = Path(path)
    if root.exists() and not root.is_dir():
        raise DatasetFormatError(f"{root}: exists and is not a folder")
    if root.is_dir() and any(root.iterdir()):
        if not (root / marker).is_file():
            raise DatasetFormatError(
                f"{root}: folder is not empty and is not a {kind} dataset (no {marker}); refusing to write into it"
            )
        log.info("adding to the existing %s dataset in %s", kind, root)
        return root, True
    root.mkdir(parents=True, exist_ok=True)
    return root, False

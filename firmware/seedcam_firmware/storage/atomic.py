"""Atomic file and folder replacement: temp → fsync → rename → fsync the directory.

After a power cut a reader finds either the old or the new content, never a mix:
the new bytes are durable before the rename makes them visible, and the
directory is synced so the rename itself survives.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "TEMP_PREFIX",
    "cleanup_temp",
    "fsync_dir",
    "fsync_tree",
    "replace_dir",
    "write_atomically",
    "write_json_atomically",
]

#: Names starting with this are unfinished writes; :func:`cleanup_temp` removes them at boot.
TEMP_PREFIX = ".tmp-"


def fsync_dir(directory: Path) -> None:
    """Make the entries of ``directory`` (creations, renames) durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(
    path: Path, data: bytes, *, mode: int | None = None, before_rename: Callable[[], None] | None = None
) -> None:
    """Replace ``path`` with ``data`` atomically and durably.

    Args:
        path: the file to write.
        data: its new content.
        mode: the new file's permission bits (default: the temp file's 0600).
        before_rename: called once the temp file is durable, just before the rename
            (a test hook: a crash there must leave the old content).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{path.name}.", dir=path.parent)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if before_rename is not None:
            before_rename()
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_json_atomically(path: Path, obj: Any, **kwargs: Any) -> None:
    """:func:`write_atomically` for a JSON document."""
    write_atomically(path, json.dumps(obj, indent=1, sort_keys=True).encode(), **kwargs)


def fsync_tree(root: Path) -> None:
    """fsync every file and folder under ``root`` (and ``root`` itself)."""
    for folder, _, files in os.walk(root):
        for name in files:
            fd = os.open(Path(folder) / name, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(Path(folder))


def replace_dir(staged: Path, target: Path, *, before_swap: Callable[[], None] | None = None) -> None:
    """Make the fully written folder ``staged`` become ``target`` (replacing any old one).

    ``staged`` must be a sibling of ``target`` whose name starts with
    :data:`TEMP_PREFIX`. A crash part-way leaves ``target`` either old, new or
    missing, plus temp folders that :func:`cleanup_temp` removes.

    Args:
        staged: the new folder, complete.
        target: the folder it becomes.
        before_swap: called once the old ``target`` is moved aside and before ``staged``
            takes its place (a test hook: a crash there must leave ``target`` missing,
            never a mix).
    """
    fsync_tree(staged)
    parent = target.parent
    trash = None
    if target.exists():
        trash = parent / f"{TEMP_PREFIX}old-{target.name}-{os.getpid()}"
        os.replace(target, trash)
    if before_swap is not None:
        before_swap()
    os.replace(staged, target)
    fsync_dir(parent)
    if trash is not None:
        shutil.rmtree(trash, ignore_errors=True)


def cleanup_temp(folder: Path) -> int:
    """Remove unfinished writes (names starting with :data:`TEMP_PREFIX`) in ``folder``; returns how many."""
    removed = 0
    if not folder.is_dir():
        return 0
    for entry in folder.iterdir():
        if entry.name.startswith(TEMP_PREFIX):
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            removed += 1
    return removed

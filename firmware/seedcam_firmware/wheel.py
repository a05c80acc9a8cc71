"""The wheel of a firmware bundle: its identity, and unpacking it into a staging folder without surprises.

A firmware bundle carries one pure-Python wheel of ``seedcam-firmware``; installing it
into a slot means extracting it. Before anything is written the wheel must say it is
what the bundle header says (``Name`` and ``Version`` of its ``*.dist-info/METADATA``),
and every member must stay inside the folder, have a plain name and fit in the space
that can be spared.
"""

from __future__ import annotations

import re
import zipfile
from email.parser import HeaderParser
from pathlib import Path

from seedcam.bundle import BundleHeader
from seedcam_firmware.errors import UpdateRefusal

__all__ = ["check_wheel_identity", "unpack_wheel", "wheel_identity"]

_MAX_COMPONENT = 255  # bytes in one path component (NAME_MAX of the usual file systems)


def _normalized(name: str) -> str:
    """A distribution name as packaging compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_identity(wheel: Path) -> tuple[str, str]:
    """``(Name, Version)`` from the wheel's ``*.dist-info/METADATA``.

    Raises:
        UpdateRefusal: ``firmware`` when the file is not a zip or has no (single) METADATA.
    """
    try:
        with zipfile.ZipFile(wheel) as zf:
            metadata = [n for n in zf.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
            if len(metadata) != 1:
                raise UpdateRefusal("firmware", f"the firmware wheel has {len(metadata)} METADATA files, not one")
            text = zf.read(metadata[0]).decode("utf-8", errors="replace")
    except zipfile.BadZipFile as exc:
        raise UpdateRefusal("firmware", f"the firmware wheel is not a zip: {exc}") from exc
    message = HeaderParser().parsestr(text)
    return str(message.get("Name", "")), str(message.get("Version", ""))


def check_wheel_identity(wheel: Path, header: BundleHeader) -> None:
    """The wheel must be the distribution and version the bundle header names.

    Raises:
        UpdateRefusal: ``identity`` when they differ, ``firmware`` for a wheel without METADATA.
    """
    name, version = wheel_identity(wheel)
    if _normalized(name) != _normalized(header.name) or version != header.version:
        raise UpdateRefusal("identity", f"the bundle's wheel is {name}@{version}, its header says {header.id}"[:300])


def unpack_wheel(wheel: Path, folder: Path, *, max_bytes: int, keep: tuple[str, ...] = ()) -> None:
    """Extract a pure-Python wheel into ``folder`` (what installing it into a slot means).

    Args:
        wheel: the wheel file.
        folder: the staging folder.
        max_bytes: the most the unpacked files may take (free space less the reserve).
        keep: names in ``folder`` no member may overwrite (the bundle's own files).

    Raises:
        UpdateRefusal: ``firmware`` for a file that is not a zip, or a member with an
            absolute path, a ``..`` component, a control character, an over-long name,
            a name in ``keep`` or landing outside the folder; ``no_space`` when the
            unpacked size (from the zip's directory, checked before anything is
            written) exceeds ``max_bytes``.
    """
    root = folder.resolve()
    try:
        with zipfile.ZipFile(wheel) as zf:
            members = zf.infolist()
            for info in members:
                _check_member(info.filename, folder, root, keep)
            unpacked = sum(info.file_size for info in members)
            if unpacked > max_bytes:
                raise UpdateRefusal(
                    "no_space", f"the firmware wheel unpacks to {unpacked} bytes; {max(max_bytes, 0)} can be spared"
                )
            zf.extractall(folder)
    except zipfile.BadZipFile as exc:
        raise UpdateRefusal("firmware", f"the firmware wheel is not a zip: {exc}") from exc
    except OSError as exc:  # a name the file system refuses after all
        raise UpdateRefusal("firmware", f"the firmware wheel does not unpack: {exc.strerror}") from exc


def _check_member(name: str, folder: Path, root: Path, keep: tuple[str, ...]) -> None:
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or ".." in parts or (len(name) > 1 and name[1] == ":"):
        raise UpdateRefusal("firmware", f"wheel member {name[:200]!r} has an absolute path or '..'")
    if any(ord(c) < 0x20 or c == "\x7f" for c in name) or any(len(p.encode()) > _MAX_COMPONENT for p in parts):
        raise UpdateRefusal("firmware", f"wheel member {name[:200]!r} has a control character or an over-long name")
    if len(parts) == 1 and name.lower() in (k.lower() for k in keep):
        raise UpdateRefusal("firmware", f"wheel member {name!r} would overwrite a file of the bundle")
    if not (folder / name).resolve().is_relative_to(root):
        raise UpdateRefusal("firmware", f"wheel member {name[:200]!r} would land outside the slot")

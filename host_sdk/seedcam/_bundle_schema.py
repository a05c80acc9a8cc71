"""The schema and bounds of a bundle header: what a receiver checks before it takes one payload byte.

The same check runs in the SDK (a bundle is refused before it is sent) and on the device (a begin
is refused before any data is stored), so both sides agree on what a header may say:

* every required field present with its type; a bool is never taken for a number;
* ``security_counter`` an unsigned 32-bit integer (a device stores it and compares every later
  bundle with it: an unbounded counter would lock the task's updates for good);
* payload file names plain: 1 to :data:`MAX_FILE_NAME` ASCII letters, digits, ``.``, ``_``,
  ``+`` and ``-``, starting with a letter or digit (no folders, no NUL, no hidden files), none of
  the names a receiver keeps beside the files (:data:`RESERVED_FILE_NAMES`), and no two names
  that differ only in case;
* the optional model fields (``task``, ``precision``, ``input_shape``, ``selftest``) of the
  type the device reads them as.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from seedcam.errors import BundleError

__all__ = [
    "FORMAT",
    "HEADER_FILE",
    "KINDS",
    "MAX_FILE_NAME",
    "RESERVED_FILE_NAMES",
    "SIGNATURE_FILE",
    "U32_MAX",
    "check_file_name",
    "check_header_fields",
]

FORMAT = 1
KINDS = ("model", "firmware")
U32_MAX = 0xFFFF_FFFF
MAX_FILE_NAME = 100
HEADER_FILE = "bundle.header"  #: a receiver stores the header under this name beside the files
SIGNATURE_FILE = "bundle.sig"  #: ... and the signature under this one
RESERVED_FILE_NAMES = (HEADER_FILE, SIGNATURE_FILE)
MIN_BLOCK_SIZE = 512
_REQUIRED = (
    "format",
    "kind",
    "name",
    "version",
    "target",
    "security_counter",
    "min_firmware_version",
    "size",
    "sha256",
    "block_size",
    "block_hashes",
    "files",
)
_TEXT = ("name", "version", "target", "min_firmware_version")
_OPTIONAL_TEXT = ("task", "precision")
_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_FILE_KEYS = {"name": str, "offset": int, "size": int, "sha256": str, "role": str}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_sha256(value: object) -> bool:
    return isinstance(value, str) and _SHA256.fullmatch(value) is not None


def check_header_fields(fields: Mapping[str, Any]) -> None:
    """Check a decoded header against the schema and its bounds.

    Raises:
        BundleError: the first problem, naming the field.
    """
    missing = [k for k in _REQUIRED if k not in fields]
    if missing:
        raise BundleError(f"bundle header lacks {', '.join(missing)}")
    if fields["format"] != FORMAT or not _is_int(fields["format"]):
        raise BundleError(f"unsupported bundle format {fields['format']!r} (this code reads {FORMAT})")
    if fields["kind"] not in KINDS:
        raise BundleError(f"unknown bundle kind {fields['kind']!r}; expected one of {KINDS}")
    for key in (*_TEXT, *(k for k in _OPTIONAL_TEXT if k in fields)):
        if not isinstance(fields[key], str):
            raise BundleError(f"bundle header field {key!r} must be a string, got {fields[key]!r}"[:200])
    counter = fields["security_counter"]
    if not _is_int(counter) or not 0 <= counter <= U32_MAX:
        raise BundleError(f"bad security_counter {counter!r}: must be an integer from 0 to {U32_MAX}"[:200])
    size, block = fields["size"], fields["block_size"]
    if not _is_int(size) or size < 0 or not _is_int(block) or block < MIN_BLOCK_SIZE:
        raise BundleError(f"bundle header has a bad size {size!r} or block_size {block!r}"[:200])
    if not _is_sha256(fields["sha256"]):
        raise BundleError("bundle header's sha256 is not 64 lowercase hex digits")
    hashes = fields["block_hashes"]
    if not isinstance(hashes, list) or not all(_is_sha256(h) for h in hashes):
        raise BundleError("bundle header's block_hashes must be a list of sha256 hex digests")
    if len(hashes) != -(-size // block):
        raise BundleError(f"bundle header lists {len(hashes)} block hashes for {size} bytes")
    _check_files(fields["files"], size)
    _check_model_fields(fields)


def _check_files(files: object, size: int) -> None:
    if not isinstance(files, list):
        raise BundleError("bundle header's files must be a list")
    end, seen = 0, set()
    for entry in files:
        if not isinstance(entry, Mapping) or any(
            not isinstance(entry.get(k), t) or isinstance(entry.get(k), bool) for k, t in _FILE_KEYS.items()
        ):
            raise BundleError(f"malformed entry in the bundle header's files: {entry!r}"[:200])
        name = entry["name"]
        check_file_name(name)
        if name.lower() in seen:
            raise BundleError(f"bundle file name {name!r} is listed twice")
        seen.add(name.lower())
        if entry["offset"] != end or entry["size"] < 0 or not _is_sha256(entry["sha256"]):
            raise BundleError(f"bundle file entry {name!r} is out of place or has a bad size or sha256")
        end += entry["size"]
    if end != size:
        raise BundleError(f"bundle files add up to {end} bytes, the header says {size}")


def check_file_name(name: str) -> None:
    """Refuse a payload file name that is not plain (see the module docstring).

    Raises:
        BundleError: the name is too long, has other characters, or is reserved.
    """
    if len(name) > MAX_FILE_NAME or _FILE_NAME.fullmatch(name) is None:
        raise BundleError(
            f"bundle file name {name[:MAX_FILE_NAME]!r}{'...' if len(name) > MAX_FILE_NAME else ''} is not a plain "
            f"file name (1 to {MAX_FILE_NAME} of A-Z a-z 0-9 . _ + -, starting with a letter or digit)"
        )
    if name.lower() in RESERVED_FILE_NAMES:
        raise BundleError(f"bundle file name {name!r} is reserved for the receiver")


def _check_model_fields(fields: Mapping[str, Any]) -> None:
    shape = fields.get("input_shape")
    if shape is not None and (not isinstance(shape, list) or not all(_is_int(v) for v in shape)):
        raise BundleError(f"bundle header's input_shape must be a list of integers, got {shape!r}"[:200])
    selftest = fields.get("selftest")
    if selftest is None:
        return
    atol = selftest.get("atol", 0.0) if isinstance(selftest, Mapping) else None
    if not isinstance(atol, int | float) or isinstance(atol, bool) or not math.isfinite(atol) or atol < 0:
        shown = repr(selftest)[:100]
        raise BundleError(f"bundle header's selftest must be {{'atol': <a finite number >= 0>}}, got {shown}")

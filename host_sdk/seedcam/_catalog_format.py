"""The model catalog's index: ``catalog.json``, its detached ed25519 signature, and their parsing.

``catalog.json`` is UTF-8 JSON::

    {"format": 1, "key_id": "<16 hex>", "models": [
        {"name": "lane-v3", "task": "lane", "version": "3.0.0", "precision": "int8",
         "title": "...", "sha256": "<64 hex>", "size": 282881, "key_id": "<16 hex>",
         "min_firmware": "0.1.0", "metrics": {"offset_mae_m": 0.0052, ...},
         "file": "bundles/lane-v3-3.0.0-int8.scb"}, ...]}

Beside it, ``catalog.json.sig`` holds the signature block of :class:`seedcam.bundle.Signature`
(``{"alg": "ed25519", "key_id": ..., "sig": ...}``) over :data:`CATALOG_CONTEXT` + the exact
bytes of ``catalog.json``. The bytes are verified before they are parsed: nothing in an
unverified index is looked at but its length.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from seedcam import _signing
from seedcam.bundle import Signature, key_id
from seedcam.errors import BundleError, CatalogError

__all__ = [
    "CATALOG_CONTEXT",
    "FORMAT",
    "MAX_ENTRIES",
    "CatalogEntry",
    "entries_json",
    "parse_entries",
    "parse_public_key",
    "sign_catalog_bytes",
    "verify_catalog_bytes",
    "version_key",
]

#: what a catalog signature covers before the index's bytes (no bundle signature verifies as one)
CATALOG_CONTEXT = b"seedcam-catalog-v1\x00"
FORMAT = 1
MAX_ENTRIES = 1000
_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX16 = re.compile(r"[0-9a-f]{16}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,99}")
_TEXT_LIMIT = 200


@dataclass(frozen=True)
class CatalogEntry:
    """One bundle in a catalog.

    Attributes:
        name: the model's id (the bundle header's ``name``), e.g. ``"lane-v3"``.
        task: the task it runs as (``lane``, ``detect``, ``ocr``, ``classify``).
        version: the bundle's version.
        sha256: hex sha256 of the whole ``.scb`` file.
        size: bytes of the ``.scb`` file.
        key_id: the key that signed the bundle.
        min_firmware: the oldest firmware that installs it.
        metrics: headline figures from the model's ``metrics.json`` (name -> value).
        file: the bundle's path relative to the catalog, or its URL.
        precision: ``int8`` or ``float32``.
        title: the model's human-readable name.
    """

    name: str
    task: str
    version: str
    sha256: str
    size: int
    key_id: str
    min_firmware: str
    metrics: Mapping[str, float] = field(default_factory=dict)
    file: str = ""
    precision: str = ""
    title: str = ""

    @property
    def id(self) -> str:
        """``name@version``, as ``seedcam models install`` takes it."""
        return f"{self.name}@{self.version}"

    def to_json(self) -> dict[str, Any]:
        """The entry as it is written in ``catalog.json``."""
        return {
            "name": self.name,
            "task": self.task,
            "version": self.version,
            "precision": self.precision,
            "title": self.title,
            "sha256": self.sha256,
            "size": self.size,
            "key_id": self.key_id,
            "min_firmware": self.min_firmware,
            "metrics": dict(self.metrics),
            "file": self.file,
        }


def version_key(version: str) -> tuple[tuple[int, int | str], ...]:
    """A sort key for versions: ``2.10.0`` after ``2.9.1``; numbers before words at each place."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.findall(r"\d+|[A-Za-z]+", version))


def parse_public_key(text: str | bytes) -> bytes:
    """A raw ed25519 public key from 32 bytes, 64 hex digits, or the text of a ``.pub`` file.

    Raises:
        CatalogError: not a 32-byte key.
    """
    if isinstance(text, bytes) and len(text) == 32:
        return text
    raw = text.decode("ascii", "replace") if isinstance(text, bytes) else text
    try:
        key = bytes.fromhex(raw.strip())
    except ValueError:
        key = b""
    if len(key) != 32:
        raise CatalogError(f"not an ed25519 public key (64 hex digits): {raw.strip()[:80]!r}")
    return key


def sign_catalog_bytes(data: bytes, private_key: bytes) -> bytes:
    """The signature file (``catalog.json.sig``) of an index's bytes, with a raw 32-byte ed25519 key.

    Raises:
        ValueError: the key is not 32 bytes.
        BundleError: ``cryptography`` is not installed.
    """
    signer, signature = _signing.sign(private_key, CATALOG_CONTEXT, data)
    return Signature(signer, signature).to_bytes()


def verify_catalog_bytes(data: bytes, signature: bytes, trusted_keys: Sequence[bytes], where: str) -> str:
    """Check an index's signature against trusted keys; returns the key id that verified it.

    Raises:
        CatalogError: no trusted keys, a missing or malformed signature, an untrusted key, or
            a signature that does not verify (the index was altered after signing).
    """
    if not trusted_keys:
        raise CatalogError(
            f"{where}: no trusted catalog key, so its signature cannot be checked "
            "(pass --trust KEY.pub, set $SEEDCAM_CATALOG_KEYS or catalog_keys in the seedcam config file)"
        )
    try:
        parsed = Signature.from_bytes(signature)
    except BundleError as exc:
        raise CatalogError(f"{where}: {exc}") from exc
    if parsed is None:
        raise CatalogError(f"{where}: the signature file is empty")
    if parsed.alg != "ed25519":
        raise CatalogError(f"{where}: unsupported signature algorithm {parsed.alg!r}")
    trusted = ", ".join(key_id(k) for k in trusted_keys)
    try:
        return _signing.verify(
            parsed.key_id,
            parsed.signature,
            CATALOG_CONTEXT,
            data,
            trusted_keys,
            unknown_key=f"{where} is signed by key {parsed.key_id}, which is not trusted (trusted: {trusted})",
            bad_signature=f"{where}: the signature does not verify with key {parsed.key_id}: "
            "the index was altered after it was signed",
        )
    except BundleError as exc:  # a refusal, or no 'cryptography' to check with
        raise CatalogError(str(exc)) from exc


def _text(entry: Mapping[str, Any], name: str, where: str, *, pattern: re.Pattern[str] | None = None) -> str:
    value = entry.get(name)
    if not isinstance(value, str) or (pattern is None and len(value) > _TEXT_LIMIT):
        raise CatalogError(f"{where}: {name!r} must be a string of at most {_TEXT_LIMIT} characters")
    if pattern is not None and not pattern.fullmatch(value):
        raise CatalogError(f"{where}: {name!r} is not valid: {value[:80]!r}")
    return value


def _metrics(value: object, where: str) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > 100:
        raise CatalogError(f"{where}: 'metrics' must be an object of at most 100 numbers")
    out: dict[str, float] = {}
    for k, v in value.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or len(k) > _TEXT_LIMIT:
            raise CatalogError(f"{where}: metric {str(k)[:80]!r} must be a finite number")
        out[k] = float(v)
    return out


def _entry(raw: object, index: int, max_size: int) -> CatalogEntry:
    where = f"catalog entry {index}"
    if not isinstance(raw, dict):
        raise CatalogError(f"{where} is not an object")
    name = _text(raw, "name", where, pattern=_NAME)
    where = f"catalog entry {index} ({name})"
    size = raw.get("size")
    if isinstance(size, bool) or not isinstance(size, int) or not 0 < size <= max_size:
        raise CatalogError(f"{where}: 'size' must be a whole number of bytes from 1 to {max_size}")
    file = _text(raw, "file", where)
    if not file:
        raise CatalogError(f"{where}: 'file' is empty")
    return CatalogEntry(
        name=name,
        task=_text(raw, "task", where, pattern=_NAME),
        version=_text(raw, "version", where, pattern=_NAME),
        sha256=_text(raw, "sha256", where, pattern=_HEX64),
        size=size,
        key_id=_text(raw, "key_id", where, pattern=_HEX16),
        min_firmware=_text(raw, "min_firmware", where, pattern=_NAME),
        metrics=_metrics(raw.get("metrics"), where),
        file=file,
        precision=_text(raw, "precision", where) if "precision" in raw else "",
        title=_text(raw, "title", where) if "title" in raw else "",
    )


def parse_entries(data: bytes, where: str, max_size: int) -> tuple[str, tuple[CatalogEntry, ...]]:
    """The key id and entries of a verified index.

    Raises:
        CatalogError: not JSON, another format, or a malformed entry (the message names it).
    """
    try:
        index = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise CatalogError(f"{where} is not JSON: {str(exc)[:200]}") from exc
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise CatalogError(f"{where}: not a seedcam catalog of format {FORMAT}")
    models = index.get("models")
    if not isinstance(models, list) or len(models) > MAX_ENTRIES:
        raise CatalogError(f"{where}: 'models' must be a list of at most {MAX_ENTRIES} entries")
    signer = _text(index, "key_id", where, pattern=_HEX16)
    entries = tuple(_entry(raw, i, max_size) for i, raw in enumerate(models))
    seen: set[tuple[str, str, str]] = set()
    for e in entries:
        if (e.name, e.version, e.precision) in seen:
            raise CatalogError(f"{where}: {e.id} ({e.precision or 'any precision'}) is listed twice")
        seen.add((e.name, e.version, e.precision))
    return signer, entries


def entries_json(entries: Iterable[CatalogEntry], signer: str) -> bytes:
    """The bytes of ``catalog.json`` for ``entries`` (sorted by name, then version)."""
    ordered = sorted(entries, key=lambda e: (e.name, version_key(e.version), e.precision))
    index = {"format": FORMAT, "key_id": signer, "models": [e.to_json() for e in ordered]}
    return (json.dumps(index, indent=2, sort_keys=False) + "\n").encode()

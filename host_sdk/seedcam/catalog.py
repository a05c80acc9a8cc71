"""The model catalog: signed bundles a user installs on a sensor by name, VisionSeed's one-click modules.

A catalog is a folder (``file://`` or a plain path) or an ``https://`` location holding
``catalog.json`` (the index: name, task, version, sha256, size, key id, minimum firmware and
headline metrics of each bundle), its detached signature ``catalog.json.sig``, and the
``.scb`` bundles it names (``seedcam-tools catalog build`` writes one; format in
docs/catalog.md)::

    from seedcam import catalog

    cat = catalog.load_catalog("https://models.example.com/seedcam/", trusted_keys=[key])
    entry = cat.find("lane-v3")                  # the latest version
    with seedcam.open() as sensor:
        catalog.install(sensor, cat, "lane-v3", progress=lambda sent, total: ...)

Nothing is trusted before it is checked, and nothing goes to a sensor before everything is:

1. the index's signature is checked against the trusted keys before a byte of it is parsed;
2. a bundle is read up to the size its entry states (one byte more is an error), then its
   size and sha256 are compared with the entry, its own payload hashes checked, its header's
   name, version and task compared with the entry, and its ed25519 signature checked against
   the trusted keys (by the key the entry names);
3. only then :func:`install` pushes it as parsed there (:func:`seedcam.updates.push_bundle`),
   where the sensor checks the signature again with its own keys.

Trusted keys are raw ed25519 public keys (bytes, 64 hex digits, or ``.pub`` files); without
``trusted_keys`` they come from ``$SEEDCAM_CATALOG_KEYS`` (keys or ``.pub`` paths, separated by
commas or spaces). Checking signatures needs the ``cryptography`` package (``seedcam[catalog]``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from seedcam._catalog_fetch import join_url, normalise_url, read_url
from seedcam._catalog_format import (
    CATALOG_CONTEXT,
    CatalogEntry,
    entries_json,
    parse_entries,
    parse_public_key,
    sign_catalog_bytes,
    verify_catalog_bytes,
    version_key,
)
from seedcam.bundle import Bundle, SignatureError, bundle_from_bytes, key_id, verify_signature
from seedcam.errors import BundleError, CatalogError

if TYPE_CHECKING:
    from seedcam.sensor import Sensor
    from seedcam.updates import PushResult

__all__ = [
    "CATALOG_CONTEXT",
    "CATALOG_ENV",
    "INDEX_FILE",
    "KEYS_ENV",
    "MAX_BUNDLE_BYTES",
    "MAX_INDEX_BYTES",
    "SIGNATURE_SUFFIX",
    "Catalog",
    "CatalogEntry",
    "CatalogError",
    "VerifiedBundle",
    "entries_json",
    "fetch_bundle",
    "fetch_verified",
    "index_url",
    "install",
    "load_catalog",
    "parse_model_ref",
    "parse_public_key",
    "resolve_keys",
    "sign_catalog_bytes",
    "size_text",
    "split_keys",
    "trusted_keys_from_env",
    "verify_entry_bytes",
    "version_key",
]

log = logging.getLogger(__name__)

#: the index's file name in a catalog folder
INDEX_FILE = "catalog.json"
#: the signature file is the index's URL with this suffix
SIGNATURE_SUFFIX = ".sig"
#: environment variable with the default catalog URL (the CLI's ``--catalog``)
CATALOG_ENV = "SEEDCAM_CATALOG"
#: environment variable with the trusted catalog keys
KEYS_ENV = "SEEDCAM_CATALOG_KEYS"
#: the largest index read
MAX_INDEX_BYTES = 4 << 20
#: the largest bundle an entry may announce
MAX_BUNDLE_BYTES = 512 << 20
_MAX_SIGNATURE_BYTES = 4096

#: progress of an install: (payload bytes the sensor holds, payload bytes in all)
InstallProgress = Callable[[int, int], None]


@dataclass(frozen=True)
class Catalog:
    """A catalog whose index verified.

    Attributes:
        entries: the bundles it lists (sorted by name, then version).
        key_id: the key that signed the index.
        url: the index's URL; relative bundle paths are resolved against it.
        trusted_keys: the keys it was checked with (and its bundles are checked with).
    """

    entries: tuple[CatalogEntry, ...]
    key_id: str
    url: str
    trusted_keys: tuple[bytes, ...] = field(default=(), repr=False)

    def names(self) -> tuple[str, ...]:
        """The model names, each once, sorted."""
        return tuple(sorted({e.name for e in self.entries}))

    def versions(self, name: str) -> tuple[CatalogEntry, ...]:
        """The entries of one model, oldest version first."""
        return tuple(sorted((e for e in self.entries if e.name == name), key=lambda e: version_key(e.version)))

    def latest(self) -> tuple[CatalogEntry, ...]:
        """The newest version of each model."""
        return tuple(self.versions(name)[-1] for name in self.names())

    def find(self, name: str, version: str | None = None) -> CatalogEntry:
        """The entry of ``name`` at ``version`` (the latest when None).

        Raises:
            CatalogError: no such model or version; the message lists what the catalog has.
        """
        found = self.versions(name)
        if not found:
            have = ", ".join(f"{n} ({', '.join(e.version for e in self.versions(n))})" for n in self.names())
            raise CatalogError(f"no model {name!r} in the catalog {self.url}; it has: {have or 'nothing'}")
        if version is None:
            return found[-1]
        match = [e for e in found if e.version == version]
        if not match:
            have = ", ".join(e.version for e in found)
            raise CatalogError(f"the catalog has no version {version} of {name} (it has {have})")
        return match[-1]

    def bundle_url(self, entry: CatalogEntry) -> str:
        """The URL of an entry's bundle.

        Raises:
            CatalogError: the entry names a location a catalog may not (another scheme, or a
                local file from an https catalog).
        """
        return join_url(self.url, entry.file)


@dataclass(frozen=True)
class VerifiedBundle:
    """A catalog entry's bundle that passed every check of :func:`verify_entry_bytes`, parsed once.

    :func:`install` pushes it as it is: it is neither parsed nor checked again.

    Attributes:
        entry: the entry it was checked against.
        bundle: the parsed bundle (size, sha256, payload hashes, identity and signature checked).
    """

    entry: CatalogEntry
    bundle: Bundle = field(repr=False)


def size_text(size: int) -> str:
    """A bundle's size as catalog listings print it (``368 KiB``, ``1.2 MiB``)."""
    return f"{size / 1024:.0f} KiB" if size < 1 << 20 else f"{size / (1 << 20):.1f} MiB"


def parse_model_ref(text: str) -> tuple[str, str | None]:
    """``NAME[@VERSION]`` as ``(name, version or None)``.

    Raises:
        ValueError: an empty name or version.
    """
    name, at, version = text.strip().partition("@")
    if not name or (at and not version):
        raise ValueError(f"{text!r}: expected NAME or NAME@VERSION, e.g. lane-v3@3.0.0")
    return name, version or None


def index_url(url: str) -> str:
    """The index's URL for a catalog location: a folder's ``catalog.json``, or the ``.json`` file given.

    Raises:
        CatalogError: an empty location or a scheme other than ``file`` and ``https``.
    """
    full = normalise_url(url)
    if full.lower().split("?", 1)[0].endswith(".json"):
        return full
    return full.rstrip("/") + "/" + INDEX_FILE


def split_keys(text: str) -> list[str]:
    """The keys (64 hex digits or ``.pub`` file paths) in one string, separated by commas or spaces.

    As ``$SEEDCAM_CATALOG_KEYS`` and ``seedcam-tools catalog verify --trust`` give them; empty items are dropped.
    """
    return [item for item in re.split(r"[,\s]+", text.strip()) if item]


def trusted_keys_from_env(env: Mapping[str, str] = os.environ) -> tuple[bytes, ...]:
    """The keys in ``$SEEDCAM_CATALOG_KEYS``: 64 hex digits or ``.pub`` file paths, by commas or spaces.

    Raises:
        CatalogError: an item is neither a key nor a readable key file.
    """
    return resolve_keys(split_keys(env.get(KEYS_ENV, "")))


def resolve_keys(items: Sequence[str | bytes]) -> tuple[bytes, ...]:
    """Raw public keys from keys (bytes or hex) and ``.pub`` file paths; empty items are skipped.

    Raises:
        CatalogError: an item is neither a key nor a readable key file.
    """
    keys: list[bytes] = []
    for item in items:
        if not item:
            continue
        if isinstance(item, bytes) or re.fullmatch(r"\s*[0-9a-fA-F]{64}\s*", item):
            keys.append(parse_public_key(item))
            continue
        path = Path(item).expanduser()
        try:
            text = path.read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError) as exc:
            raise CatalogError(f"cannot read the catalog key {item}: {getattr(exc, 'strerror', None) or exc}") from exc
        try:
            keys.append(parse_public_key(text))
        except CatalogError as exc:
            raise CatalogError(f"{item}: {exc}") from exc
    return tuple(keys)


def load_catalog(url: str, trusted_keys: Sequence[str | bytes] | None = None, *, timeout: float = 10.0) -> Catalog:
    """Read a catalog's index, check its signature, then parse it.

    Args:
        url: a catalog folder (``file://``, a plain path, ``https://``) or its ``.json`` index.
        trusted_keys: public keys the index must be signed by (raw, hex or ``.pub`` paths);
            None: :func:`trusted_keys_from_env`.
        timeout: seconds each network operation may wait.

    Raises:
        CatalogError: unreadable, not signed by a trusted key, altered after signing, or malformed.
    """
    keys = resolve_keys(list(trusted_keys)) if trusted_keys is not None else trusted_keys_from_env()
    index = index_url(url)
    data = read_url(index, limit=MAX_INDEX_BYTES, timeout=timeout, what=INDEX_FILE)
    signature = read_url(
        index + SIGNATURE_SUFFIX, limit=_MAX_SIGNATURE_BYTES, timeout=timeout, what=f"{INDEX_FILE}{SIGNATURE_SUFFIX}"
    )
    signer = verify_catalog_bytes(data, signature, keys, f"catalog {index}")
    stated, entries = parse_entries(data, f"catalog {index}", MAX_BUNDLE_BYTES)
    if stated != signer:
        raise CatalogError(f"catalog {index} says it is signed by {stated}, but key {signer} signed it")
    log.info("catalog %s: %d bundles, signed by %s", index, len(entries), signer)
    return Catalog(entries, signer, index, keys)


def verify_entry_bytes(
    entry: CatalogEntry, data: bytes, trusted_keys: Sequence[str | bytes] | None = None
) -> VerifiedBundle:
    """Check a bundle's bytes against its catalog entry: size, sha256, payload, identity and signature.

    Args:
        entry: the entry (from a catalog that verified).
        data: the ``.scb`` file's bytes, however they were obtained.
        trusted_keys: the keys its signature must verify with; None: :func:`trusted_keys_from_env`.

    Returns:
        The parsed bundle, for :func:`install`.

    Raises:
        CatalogError: any difference; the message names the bundle and what differs.
    """
    where = f"bundle {entry.id}"
    if len(data) != entry.size:
        raise CatalogError(f"{where} is {len(data)} bytes, the catalog says {entry.size}: refused, nothing was sent")
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry.sha256:
        raise CatalogError(
            f"{where}: sha256 {digest[:16]}... differs from the catalog's {entry.sha256[:16]}...: "
            "refused, nothing was sent"
        )
    try:
        bundle = bundle_from_bytes(data)
    except BundleError as exc:
        raise CatalogError(f"{where}: {exc}") from exc
    h = bundle.header
    if (h.kind, h.name, h.version, h.task) != ("model", entry.name, entry.version, entry.task):
        raise CatalogError(
            f"{where}: the bundle is {h.kind} {h.id} for task {h.task or '-'}, not what the catalog lists"
        )
    keys = resolve_keys(list(trusted_keys)) if trusted_keys is not None else trusted_keys_from_env()
    if bundle.signature is not None and bundle.signature.key_id != entry.key_id:
        raise CatalogError(f"{where} is signed by key {bundle.signature.key_id}, the catalog says {entry.key_id}")
    try:
        verify_signature(h, bundle.signature, keys)
    except SignatureError as exc:
        if exc.reason == "unknown_key" and bundle.signature is not None:
            trusted = ", ".join(key_id(k) for k in keys) or "none"
            message = f"{where} is signed by key {bundle.signature.key_id}, which is not trusted (trusted: {trusted})"
            raise CatalogError(message) from exc
        raise CatalogError(f"{where}: {exc}: refused, nothing was sent") from exc
    return VerifiedBundle(entry, bundle)


def _download(catalog: Catalog, entry: CatalogEntry, timeout: float, progress: Callable[[int], None] | None) -> bytes:
    """An entry's bundle, read up to the size the entry states (one byte more is an error)."""
    return read_url(
        catalog.bundle_url(entry), limit=entry.size, timeout=timeout, what=f"bundle {entry.id}", progress=progress
    )


def fetch_bundle(
    catalog: Catalog, entry: CatalogEntry, *, timeout: float = 30.0, progress: Callable[[int], None] | None = None
) -> bytes:
    """Download an entry's bundle and check it (:func:`verify_entry_bytes`) with the catalog's keys.

    Args:
        catalog: the catalog the entry is from.
        entry: what to fetch.
        timeout: seconds each network operation may wait.
        progress: called with the bytes read so far.

    Returns:
        The ``.scb`` file's bytes.

    Raises:
        CatalogError: unreadable, larger than the entry says, or any check fails.
    """
    data = _download(catalog, entry, timeout, progress)
    verify_entry_bytes(entry, data, catalog.trusted_keys)
    return data


def fetch_verified(
    catalog: Catalog, entry: CatalogEntry, *, timeout: float = 30.0, progress: Callable[[int], None] | None = None
) -> VerifiedBundle:
    """Download an entry's bundle and check it as :func:`fetch_bundle` does; returns it parsed, for :func:`install`.

    Raises:
        CatalogError: unreadable, larger than the entry says, or any check fails.
    """
    return verify_entry_bytes(entry, _download(catalog, entry, timeout, progress), catalog.trusted_keys)


def install(
    sensor: Sensor,
    catalog: Catalog,
    name: str,
    version: str | None = None,
    progress: InstallProgress | None = None,
    *,
    activate: bool = True,
    timeout: float = 30.0,
    resume_timeout: float = 60.0,
    data: bytes | VerifiedBundle | None = None,
) -> PushResult:
    """Fetch and check a bundle from the catalog, then push it to the sensor (self-test, activation).

    Args:
        sensor: an open sensor.
        catalog: a catalog from :func:`load_catalog`.
        name: the model's name.
        version: its version (the latest when None).
        progress: called with (payload bytes the sensor holds, payload bytes) during the push.
        activate: make it the active model once its self-test passes.
        timeout: seconds each download operation may wait.
        resume_timeout: as for :func:`seedcam.updates.push_bundle`.
        data: the bundle when the caller fetched it already: its bytes (:func:`fetch_bundle`),
            checked here but not downloaded again, or the :class:`VerifiedBundle` of this entry
            (:func:`fetch_verified`), neither checked nor parsed again.

    Returns:
        The push's result (:attr:`~seedcam.updates.PushResult.already_installed` when the
        sensor held it already).

    Raises:
        CatalogError: no such entry, a check failed, or the sensor's firmware is older than the
            entry needs: nothing was sent.
        ValueError: ``data`` is the verified bundle of another entry.
        UpdateRefused: the sensor refused the bundle.
        SensorTimeout, LinkBroken: the link failed.
    """
    from seedcam.updates import PushProgress, push_bundle

    entry = catalog.find(name, version)
    if data is None:
        verified = fetch_verified(catalog, entry, timeout=timeout)
    elif isinstance(data, VerifiedBundle):
        if data.entry != entry:
            raise ValueError(f"the bundle given was verified as {data.entry.id}, not as {entry.id}")
        verified = data
    else:
        verified = verify_entry_bytes(entry, data, catalog.trusted_keys)
    info = sensor.device_info or sensor.info()
    if version_key(info.firmware_version) < version_key(entry.min_firmware):
        raise CatalogError(
            f"{entry.id} needs firmware {entry.min_firmware} or newer; the sensor runs {info.firmware_version}"
        )

    def report(p: PushProgress) -> None:
        if progress is not None:
            progress(p.acked, p.total)

    log.info("installing %s (%d bytes) from %s", entry.id, entry.size, catalog.url)
    return push_bundle(sensor, verified.bundle, activate=activate, progress=report, resume_timeout=resume_timeout)

"""Update bundles: one file holding a signed manifest and the files of a model or firmware.

A bundle is what ``seedcam models push`` and ``seedcam flash`` send to a sensor.
Layout (all integers little-endian)::

    magic      8 bytes   b"SCBUNDL1"
    hlen       u32       length of the header
    header     hlen      canonical JSON (sorted keys, no spaces): the manifest
    slen       u32       length of the signature block (0: unsigned)
    signature  slen      JSON {"alg": "ed25519", "key_id": "<16 hex>", "sig": "<128 hex>"}
    payload    size      the files, back to back, in the order the header lists them

The header is everything a device needs to decide *before* it accepts data:
``format``, ``kind`` (``model`` / ``firmware``), ``name``, ``version``,
``task``, ``target`` (a board name or ``"any"``), ``security_counter``,
``min_firmware_version``, ``size`` and ``sha256`` of the payload, the payload's
``block_size`` and per-block sha256 ``block_hashes`` (so a receiver checks
every block as it arrives and knows after a power cut which blocks it already
holds), and ``files`` (name, offset, size, sha256, role). Model bundles also
carry ``precision`` and the ``selftest`` tolerances. The schema and its bounds (a
u32 ``security_counter``, plain file names of at most :data:`MAX_FILE_NAME`
characters, none of them reserved) are in :mod:`seedcam._bundle_schema`: the SDK
refuses a bundle before sending it by the same check the device makes at begin.

The signature is ed25519 over ``SIGNING_CONTEXT + header``: signing the header
signs the payload through its sha256 and block hashes. Parsing and building
need only the standard library (the SDK stays light); signing and verifying
(:mod:`seedcam._signing`) use the ``cryptography`` package, imported when first
needed (the firmware and the tools depend on it).
"""

from __future__ import annotations

import hashlib
import io
import json
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from seedcam import _signing
from seedcam._bundle_schema import (
    FORMAT,
    HEADER_FILE,
    KINDS,
    MAX_FILE_NAME,
    MIN_BLOCK_SIZE,
    SIGNATURE_FILE,
    check_header_fields,
)
from seedcam._bundle_schema import U32_MAX as MAX_SECURITY_COUNTER
from seedcam._signing import key_id, public_key
from seedcam.errors import BundleError, SignatureError

__all__ = [
    "MAGIC",
    "SIGNING_CONTEXT",
    "DEFAULT_BLOCK_SIZE",
    "HEADER_FILE",
    "MAX_FILE_NAME",
    "MAX_SECURITY_COUNTER",
    "SIGNATURE_FILE",
    "Bundle",
    "BundleFile",
    "BundleHeader",
    "Signature",
    "SignatureError",
    "block_hashes",
    "build_bundle",
    "bundle_from_bytes",
    "iter_payload",
    "key_id",
    "public_key",
    "read_bundle",
    "read_header",
    "sign_bundle",
    "verify_signature",
    "write_bundle",
]

MAGIC = b"SCBUNDL1"
SIGNING_CONTEXT = b"seedcam-bundle-v1\x00"
DEFAULT_BLOCK_SIZE = 16384
_U32 = struct.Struct("<I")
_MAX_HEADER = 1 << 20
_MAX_SIGNATURE = 4096


@dataclass(frozen=True)
class BundleFile:
    """One file inside the payload.

    Attributes:
        name: file name (no folders), e.g. ``"model.tflite"``.
        offset: where it starts in the payload.
        size: its length in bytes.
        sha256: hex sha256 of its bytes.
        role: ``manifest``, ``model``, ``golden_input``, ``golden_output`` or ``wheel``.
    """

    name: str
    offset: int
    size: int
    sha256: str
    role: str


@dataclass(frozen=True)
class Signature:
    """An ed25519 signature block."""

    key_id: str
    signature: bytes
    alg: str = "ed25519"

    def to_bytes(self) -> bytes:
        """The signature block as stored in the bundle."""
        return _canonical({"alg": self.alg, "key_id": self.key_id, "sig": self.signature.hex()})

    @classmethod
    def from_bytes(cls, data: bytes) -> Signature | None:
        """Parse a signature block; None for an empty one.

        Raises:
            BundleError: the block is not a valid signature block.
        """
        if not data:
            return None
        try:
            raw = json.loads(data)
            return cls(str(raw["key_id"]), bytes.fromhex(raw["sig"]), str(raw["alg"]))
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise BundleError(f"malformed signature block: {str(exc)[:200]}") from exc


@dataclass(frozen=True)
class BundleHeader:
    """The parsed header (the manifest) of a bundle.

    Attributes:
        raw: the header bytes exactly as stored (and signed).
        fields: the decoded JSON object.
    """

    raw: bytes
    fields: Mapping[str, Any]

    @classmethod
    def parse(cls, raw: bytes) -> BundleHeader:
        """Decode and check a header.

        Raises:
            BundleError: not JSON (or nested too deep), a missing or ill-typed field, a value
                out of bounds (security counter, file names) or inconsistent sizes.
        """
        try:
            fields = json.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise BundleError(f"bundle header is not JSON: {str(exc)[:200]}") from exc
        if not isinstance(fields, dict):
            raise BundleError("bundle header must be a JSON object")
        check_header_fields(fields)
        return cls(raw, fields)

    @property
    def kind(self) -> str:
        return str(self.fields["kind"])

    @property
    def name(self) -> str:
        return str(self.fields["name"])

    @property
    def version(self) -> str:
        return str(self.fields["version"])

    @property
    def task(self) -> str:
        return str(self.fields.get("task", ""))

    @property
    def target(self) -> str:
        return str(self.fields["target"])

    @property
    def security_counter(self) -> int:
        return self.fields["security_counter"]  # type: ignore[no-any-return]

    @property
    def min_firmware_version(self) -> str:
        return str(self.fields["min_firmware_version"])

    @property
    def size(self) -> int:
        return self.fields["size"]  # type: ignore[no-any-return]

    @property
    def sha256(self) -> str:
        return str(self.fields["sha256"])

    @property
    def block_size(self) -> int:
        return self.fields["block_size"]  # type: ignore[no-any-return]

    @property
    def block_hashes(self) -> tuple[str, ...]:
        return tuple(str(h) for h in self.fields["block_hashes"])

    @property
    def files(self) -> tuple[BundleFile, ...]:
        try:
            return tuple(
                BundleFile(str(f["name"]), int(f["offset"]), int(f["size"]), str(f["sha256"]), str(f["role"]))
                for f in self.fields["files"]
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise BundleError(f"malformed 'files' in the bundle header: {exc}") from exc

    @property
    def id(self) -> str:
        """``name@version`` — how people refer to the bundle."""
        return f"{self.name}@{self.version}"

    def file(self, role: str) -> BundleFile | None:
        """The first file with ``role``, or None."""
        return next((f for f in self.files if f.role == role), None)

    def block_range(self, index: int) -> tuple[int, int]:
        """Start and end offsets of payload block ``index``."""
        start = index * self.block_size
        return start, min(start + self.block_size, self.size)


@dataclass(frozen=True)
class Bundle:
    """A whole bundle in memory: header, optional signature, payload."""

    header: BundleHeader
    signature: Signature | None
    payload: bytes = field(repr=False)

    def to_bytes(self) -> bytes:
        """The bundle file's bytes."""
        sig = self.signature.to_bytes() if self.signature else b""
        return MAGIC + _U32.pack(len(self.header.raw)) + self.header.raw + _U32.pack(len(sig)) + sig + self.payload

    def file_bytes(self, entry: BundleFile) -> bytes:
        """The bytes of one payload file."""
        return self.payload[entry.offset : entry.offset + entry.size]

    def check_payload(self) -> None:
        """Check the payload against the header: length, sha256, every block and file hash.

        Raises:
            BundleError: truncated, or a hash differs (the message names the first bad block or file).
        """
        h = self.header
        if len(self.payload) != h.size:
            raise BundleError(f"truncated bundle: payload is {len(self.payload)} bytes, the header says {h.size}")
        for index, expected in enumerate(h.block_hashes):
            start, end = h.block_range(index)
            if hashlib.sha256(self.payload[start:end]).hexdigest() != expected:
                raise BundleError(f"tampered bundle: block {index} (bytes {start}..{end}) does not match its hash")
        if hashlib.sha256(self.payload).hexdigest() != h.sha256:
            raise BundleError("tampered bundle: payload sha256 differs from the header")
        for f in h.files:
            if hashlib.sha256(self.file_bytes(f)).hexdigest() != f.sha256:
                raise BundleError(f"tampered bundle: {f.name} does not match its sha256")


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def block_hashes(payload: bytes, block_size: int) -> list[str]:
    """Hex sha256 of each ``block_size`` block of ``payload`` (the last may be short)."""
    return [hashlib.sha256(payload[i : i + block_size]).hexdigest() for i in range(0, len(payload), block_size)]


def build_bundle(
    files: Sequence[tuple[str, str, bytes]],
    *,
    kind: str,
    name: str,
    version: str,
    target: str = "any",
    security_counter: int = 0,
    min_firmware_version: str = "0.0.0",
    block_size: int = DEFAULT_BLOCK_SIZE,
    extra: Mapping[str, Any] | None = None,
) -> Bundle:
    """Build an unsigned bundle from ``(name, role, bytes)`` files.

    Args:
        files: the payload files, in order.
        kind: ``"model"`` or ``"firmware"``.
        name, version: identity of what the bundle installs.
        target: the board it is for, or ``"any"``.
        security_counter: devices refuse bundles with a lower counter than they installed.
        min_firmware_version: oldest firmware that may install it.
        block_size: payload block size for the per-block hashes.
        extra: further header fields (``task``, ``precision``, ``selftest`` ...).

    Raises:
        ValueError: an unknown kind or a bad block size.
        BundleError: the header comes out outside the schema: a file name that is not
            plain, a security counter beyond u32 (see :mod:`seedcam._bundle_schema`).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if block_size < MIN_BLOCK_SIZE:
        raise ValueError(f"block_size must be at least {MIN_BLOCK_SIZE}")
    payload = b"".join(data for _, _, data in files)
    entries, offset = [], 0
    for fname, role, data in files:
        digest = hashlib.sha256(data).hexdigest()
        entries.append({"name": fname, "offset": offset, "size": len(data), "sha256": digest, "role": role})
        offset += len(data)
    fields: dict[str, Any] = dict(extra or {})
    fields.update(
        format=FORMAT,
        kind=kind,
        name=name,
        version=version,
        target=target,
        security_counter=security_counter,
        min_firmware_version=min_firmware_version,
        size=len(payload),
        sha256=hashlib.sha256(payload).hexdigest(),
        block_size=block_size,
        block_hashes=block_hashes(payload, block_size),
        files=entries,
    )
    return Bundle(BundleHeader.parse(_canonical(fields)), None, payload)


def _read_exact(fh: BinaryIO, n: int, what: str) -> bytes:
    data = fh.read(n)
    if len(data) != n:
        raise BundleError(f"truncated bundle: {what} is cut short ({len(data)} of {n} bytes)")
    return data


def _read_prefix(fh: BinaryIO) -> tuple[BundleHeader, Signature | None]:
    if fh.read(len(MAGIC)) != MAGIC:
        raise BundleError("not a seedcam bundle (bad magic)")
    (hlen,) = _U32.unpack(_read_exact(fh, 4, "header length"))
    if hlen > _MAX_HEADER:
        raise BundleError(f"bundle header of {hlen} bytes is implausibly large")
    header = BundleHeader.parse(_read_exact(fh, hlen, "header"))
    (slen,) = _U32.unpack(_read_exact(fh, 4, "signature length"))
    if slen > _MAX_SIGNATURE:
        raise BundleError(f"signature block of {slen} bytes is implausibly large")
    return header, Signature.from_bytes(_read_exact(fh, slen, "signature"))


def read_header(path: str | Path) -> tuple[BundleHeader, Signature | None, int]:
    """Read only the header and signature of a bundle file.

    Returns:
        The header, the signature (or None) and the payload's offset in the file.

    Raises:
        BundleError: not a bundle, or the header is malformed.
        OSError: the file cannot be read.
    """
    with Path(path).open("rb") as fh:
        header, signature = _read_prefix(fh)
        return header, signature, fh.tell()


def read_bundle(path: str | Path, *, check: bool = True) -> Bundle:
    """Read a bundle file.

    Args:
        path: the bundle file.
        check: also check the payload against the header (:meth:`Bundle.check_payload`).

    Raises:
        BundleError: not a bundle, malformed, truncated or (with ``check``) tampered.
        OSError: the file cannot be read.
    """
    with Path(path).open("rb") as fh:
        header, signature = _read_prefix(fh)
        payload = fh.read()
    bundle = Bundle(header, signature, payload)
    if check:
        bundle.check_payload()
    return bundle


def bundle_from_bytes(data: bytes, *, check: bool = True) -> Bundle:
    """A bundle from the bytes of a bundle file (one downloaded, say), as :func:`read_bundle` reads a file.

    Raises:
        BundleError: not a bundle, malformed, truncated or (with ``check``) tampered.
    """
    fh = io.BytesIO(data)
    header, signature = _read_prefix(fh)
    bundle = Bundle(header, signature, data[fh.tell() :])
    if check:
        bundle.check_payload()
    return bundle


def write_bundle(bundle: Bundle, path: str | Path) -> Path:
    """Write a bundle file; returns its path."""
    target = Path(path)
    target.write_bytes(bundle.to_bytes())
    return target


def iter_payload(path: str | Path, start: int = 0, chunk: int = 1 << 16) -> Iterator[bytes]:
    """Yield the payload of a bundle file from ``start``, in pieces of ``chunk`` bytes."""
    _, _, offset = read_header(path)
    with Path(path).open("rb") as fh:
        fh.seek(offset + start)
        while piece := fh.read(chunk):
            yield piece


# ---------------------------------------------------------------- signatures


def sign_bundle(bundle: Bundle, private_key: bytes) -> Bundle:
    """Return ``bundle`` signed with a raw 32-byte ed25519 private key (seed).

    Raises:
        ValueError: the key is not 32 bytes.
        BundleError: ``cryptography`` is not installed.
    """
    signer, signature = _signing.sign(private_key, SIGNING_CONTEXT, bundle.header.raw)
    return Bundle(bundle.header, Signature(signer, signature), bundle.payload)


def verify_signature(header: BundleHeader, signature: Signature | None, public_keys: Sequence[bytes]) -> str:
    """Check a header's signature against trusted raw ed25519 public keys.

    Returns:
        The key id that verified it.

    Raises:
        SignatureError: unsigned, signed by an unknown key, or the signature does not
            verify (a tampered header); its ``reason`` says which.
    """
    if signature is None:
        raise SignatureError("unsigned", "unsigned bundle: a signature is required")
    if signature.alg != "ed25519":
        raise SignatureError("bad_signature", f"bad signature: unsupported algorithm {signature.alg!r}")
    signer = signature.key_id
    return _signing.verify(
        signer,
        signature.signature,
        SIGNING_CONTEXT,
        header.raw,
        public_keys,
        unknown_key=f"unknown key: the bundle is signed by key {signer}, which this device does not trust",
        bad_signature=f"bad signature: does not verify with key {signer}",
    )

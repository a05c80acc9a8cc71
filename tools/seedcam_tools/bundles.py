"""Make, sign, verify and describe update bundles (see :mod:`seedcam.bundle` for the format).

A model bundle is built from a model folder (``manifest.json`` + ``.tflite`` +
golden files, as ``models/lane``): one precision of it, renamed to fixed names
inside the payload (``manifest.json``, ``model.tflite``, ``golden_input.npy``,
``golden_output.npz``) so the device unpacks it into a slot and loads it with
the same manifest loader as the built-in models.

A firmware bundle holds a wheel of ``seedcam-firmware`` plus its manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from seedcam.bundle import Bundle, build_bundle, key_id, read_bundle, sign_bundle, verify_signature
from seedcam.errors import BundleError
from seedcam_firmware.storage.atomic import write_atomically

__all__ = [
    "KeyPair",
    "build_firmware_bundle",
    "build_model_bundle",
    "default_precision",
    "describe",
    "generate_keypair",
    "load_private_key",
    "load_public_key",
    "model_bundle_files",
    "sign_file",
    "verify_file",
    "wheel_from_source",
]

DEFAULT_ATOL = 0.02  # dequantized INT8 outputs may differ by a quantum between CPU kernels and NPUs


@dataclass(frozen=True)
class KeyPair:
    """A raw ed25519 key pair (32-byte seed and 32-byte public key)."""

    private: bytes
    public: bytes

    @property
    def key_id(self) -> str:
        return key_id(self.public)


def generate_keypair() -> KeyPair:
    """A fresh ed25519 key pair from the OS's random source."""
    key = ed25519.Ed25519PrivateKey.generate()
    raw, fmt = serialization.Encoding.Raw, serialization.PrivateFormat.Raw
    private = key.private_bytes(raw, fmt, serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return KeyPair(private, public)


def write_keypair(pair: KeyPair, stem: Path) -> tuple[Path, Path]:
    """Write ``STEM.key`` (private, hex, mode 0600) and ``STEM.pub`` (public, hex).

    Raises:
        FileExistsError: the private key file exists (never overwritten).
    """
    private_path, public_path = stem.with_suffix(".key"), stem.with_suffix(".pub")
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(pair.private.hex() + "\n")
    public_path.write_text(pair.public.hex() + "\n")
    return private_path, public_path


def _read_key(path: Path, what: str) -> bytes:
    text = Path(path).read_text().strip()
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise BundleError(f"{path} is not a hex-encoded 32-byte ed25519 {what} key")
    return raw


def load_private_key(path: Path) -> bytes:
    """Read a private key written by :func:`write_keypair`."""
    return _read_key(path, "private")


def load_public_key(path_or_hex: str | Path) -> bytes:
    """A public key from a ``.pub`` file or given as 64 hex digits."""
    text = str(path_or_hex)
    if len(text) == 64 and all(c in "0123456789abcdefABCDEF" for c in text):
        return bytes.fromhex(text)
    return _read_key(Path(text), "public")


def default_precision(model_dir: Path) -> str:
    """The precision a model folder's manifest ships by default (its only one, or ``default_precision``).

    Raises:
        BundleError: no readable manifest.
    """
    manifest_path = Path(model_dir) / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text())
        files = dict(manifest["files"])
    except FileNotFoundError as exc:
        raise BundleError(f"no manifest.json in {model_dir}") from exc
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise BundleError(f"{manifest_path}: unreadable manifest: {exc}") from exc
    if len(files) == 1:
        return str(next(iter(files)))
    return str(manifest.get("default_precision", "int8"))


def model_bundle_files(model_dir: Path, precision: str = "int8") -> list[tuple[str, str, bytes]]:
    """The payload files of a model bundle made from a model folder.

    Raises:
        BundleError: no manifest, no such precision, or a listed file is missing.
    """
    manifest_path = Path(model_dir) / "manifest.json"
    manifest: Any = None
    try:
        manifest = json.loads(manifest_path.read_text())
        entry = dict(manifest["files"][precision])
    except FileNotFoundError as exc:
        raise BundleError(f"no manifest.json in {model_dir}") from exc
    except (KeyError, TypeError, ValueError) as exc:
        have = sorted(manifest.get("files", {})) if isinstance(manifest, dict) else []
        raise BundleError(f"{manifest_path}: no {precision!r} model (it has {have or 'none'})") from exc
    try:
        model = (model_dir / entry["file"]).read_bytes()
        golden_in = (model_dir / manifest["golden_input"]).read_bytes() if manifest.get("golden_input") else None
        golden_out = (model_dir / entry["golden_output"]).read_bytes() if entry.get("golden_output") else None
    except OSError as exc:
        raise BundleError(f"{model_dir}: {exc}") from exc
    if golden_in is None or golden_out is None:
        raise BundleError(f"{model_dir}: a model bundle needs a golden input and output for the on-device self-test")
    extra = _anchors_file(model_dir, manifest)
    entry.update(file="model.tflite", golden_output="golden_output.npz")
    manifest.update(files={precision: entry}, default_precision=precision, golden_input="golden_input.npy")
    return [
        ("manifest.json", "manifest", json.dumps(manifest, indent=2).encode()),
        ("model.tflite", "model", model),
        ("golden_input.npy", "golden_input", golden_in),
        ("golden_output.npz", "golden_output", golden_out),
        *extra,
    ]


def _anchors_file(model_dir: Path, manifest: dict[str, Any]) -> list[tuple[str, str, bytes]]:
    """A decoder's anchors file (``{"anchors": {"file": ...}}``), shipped as ``anchors.npy``."""
    anchors = manifest.get("decoder", {}).get("anchors")
    if not isinstance(anchors, dict) or "file" not in anchors:
        return []
    from seedcam_firmware.inference.manifest import bundle_file_path

    try:
        data = bundle_file_path(Path(model_dir), anchors["file"], "anchors file").read_bytes()
    except OSError as exc:
        raise BundleError(f"{model_dir}: {exc}") from exc
    manifest["decoder"] = {**manifest["decoder"], "anchors": {"file": "anchors.npy"}}
    return [("anchors.npy", "anchors", data)]


def build_model_bundle(
    model_dir: Path,
    *,
    precision: str = "int8",
    version: str | None = None,
    security_counter: int = 0,
    target: str = "any",
    atol: float = DEFAULT_ATOL,
    files: list[tuple[str, str, bytes]] | None = None,
) -> Bundle:
    """An unsigned model bundle from a model folder.

    Args:
        model_dir: folder with ``manifest.json``, the ``.tflite`` and golden files.
        precision: which of the manifest's models to ship.
        version: the bundle version (default: the manifest's).
        security_counter: anti-rollback counter.
        target: board name or ``"any"``.
        atol: self-test tolerance: largest absolute difference from the golden output.
        files: the payload files, when a caller altered :func:`model_bundle_files`' output.

    Raises:
        BundleError: the folder is not a model bundle.
    """
    files = list(files if files is not None else model_bundle_files(model_dir, precision))
    manifest = json.loads(files[0][2])
    if version is not None:
        manifest["version"] = version  # the model reports the bundle's version
    model = next(data for _, role, data in files if role == "model")
    manifest["files"][precision]["sha256"] = hashlib.sha256(model).hexdigest()  # the model shipped, whatever it is
    files[0] = (files[0][0], files[0][1], json.dumps(manifest, indent=2).encode())
    return build_bundle(
        files,
        kind="model",
        name=str(manifest["id"]),
        version=version or str(manifest["version"]),
        target=target,
        security_counter=security_counter,
        min_firmware_version=str(manifest.get("min_firmware_version", "0.0.0")),
        extra={
            "task": manifest["task"],
            "precision": precision,
            "input_shape": manifest["input"]["shape"],
            "selftest": {"atol": atol},
        },
    )


def build_firmware_bundle(
    wheel: Path, *, version: str | None = None, security_counter: int = 0, target: str = "any"
) -> Bundle:
    """An unsigned firmware bundle holding a ``seedcam_firmware`` wheel.

    Raises:
        BundleError: the file is not a wheel of seedcam_firmware.
    """
    data = Path(wheel).read_bytes()
    try:
        with zipfile.ZipFile(wheel) as zf:
            names = zf.namelist()
    except zipfile.BadZipFile as exc:
        raise BundleError(f"{wheel} is not a wheel: {exc}") from exc
    if "seedcam_firmware/__init__.py" not in names:
        raise BundleError(f"{wheel} does not contain the seedcam_firmware package")
    wheel_version = Path(wheel).name.split("-")[1] if Path(wheel).name.count("-") >= 2 else "0.0.0"
    return build_bundle(
        [(Path(wheel).name, "wheel", data)],
        kind="firmware",
        name="seedcam-firmware",
        version=version or wheel_version,
        target=target,
        security_counter=security_counter,
    )


def wheel_from_source(
    package_dir: Path, out_dir: Path, version: str, *, replace: Mapping[str, str] | None = None
) -> Path:
    """Write a pure-Python wheel of ``seedcam_firmware`` from its source folder, with ``version``.

    For development and tests (a release wheel comes from ``pip wheel firmware/``).

    Args:
        package_dir: the ``seedcam_firmware`` source folder.
        out_dir: where the wheel goes.
        version: the version it reports (``__version__`` is rewritten).
        replace: archive path -> new text, e.g. a deliberately broken module.
    """
    import base64
    import re

    dist = f"seedcam_firmware-{version}.dist-info"
    members: dict[str, bytes] = {}
    for path in sorted(Path(package_dir).rglob("*.py")):
        if "__pycache__" not in path.parts:
            members[f"seedcam_firmware/{path.relative_to(package_dir).as_posix()}"] = path.read_bytes()
    init = members["seedcam_firmware/__init__.py"].decode()
    init = re.sub(r'__version__ = "[^"]*"', f'__version__ = "{version}"', init)
    members["seedcam_firmware/__init__.py"] = init.encode()
    for name, text in (replace or {}).items():
        members[name] = text.encode()
    members[f"{dist}/METADATA"] = f"Metadata-Version: 2.1\nName: seedcam-firmware\nVersion: {version}\n".encode()
    wheel_info = "Wheel-Version: 1.0\nGenerator: seedcam-tools\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    members[f"{dist}/WHEEL"] = wheel_info.encode()
    record = []
    for name, data in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    members[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    out = Path(out_dir) / f"seedcam_firmware-{version}-py3-none-any.whl"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return out


def sign_file(path: Path, private_key: bytes, out: Path | None = None) -> Path:
    """Sign a bundle file in place (or into ``out``); returns the written path.

    The file is replaced atomically (temp file, fsync, rename): a crash leaves the
    old bundle or the signed one, never a truncated file.

    Raises:
        BundleError: the file is not a valid bundle.
    """
    bundle = read_bundle(path)
    target = Path(out or path)
    data = sign_bundle(bundle, private_key).to_bytes()
    mode = target.stat().st_mode & 0o777 if target.exists() else 0o644  # a temp file's 0600 would hide it
    write_atomically(target, data, mode=mode)
    return target


def verify_file(path: Path, public_keys: list[bytes]) -> Bundle:
    """Check a bundle file completely: payload hashes, and the signature when keys are given.

    Raises:
        BundleError: truncated, tampered, unsigned, wrong key or bad signature.
    """
    bundle = read_bundle(path)
    if public_keys:
        verify_signature(bundle.header, bundle.signature, public_keys)
    return bundle


def describe(bundle: Bundle) -> dict[str, Any]:
    """A JSON-able summary of a bundle for ``inspect``."""
    h = bundle.header
    fields: Mapping[str, Any] = h.fields
    return {
        **{k: v for k, v in fields.items() if k not in ("block_hashes", "files")},
        "blocks": len(h.block_hashes),
        "files": [vars(f) for f in h.files],
        "signed_by": bundle.signature.key_id if bundle.signature else None,
        "header_bytes": len(h.raw),
    }

"""Model bundle manifests (``manifest.json``) and their validation.

One manifest describes one model bundle folder and may list several precisions
of the same network (``"int8"``, ``"float32"``) under ``"files"``; loading picks
one (``default_precision`` unless asked) and yields a flat :class:`ModelManifest`.

Schema (``schema: 1``)::

    {"schema": 1, "id": "lane-v1", "name": "...", "version": "1.0.0", "task": "lane",
     "min_firmware_version": "0.1.0", "default_precision": "int8",
     "files": {"int8": {"file": "lane_int8.tflite", "sha256": "<hex>",
                        "golden_output": "golden_output_int8.npz"}, "float32": {...}},
     "golden_input": "golden_input.npy",
     "input": {"shape": [1, 64, 128, 3], "crop_top": 0.333, "color_order": "RGB",
               "mean": 0.0, "std": 255.0},
     "outputs": {"mask": [1, 16, 32, 2], "lane_state": [1, 4], "presence": [1, 2]},
     "decoder": {...task specific...}, "camera": {...geometry trained for...}}

Every file a manifest names (the model, the golden files, a decoder's anchors file)
is a relative path inside the manifest's folder: an absolute path, a ``..``
component, a NUL or a symlink out of the folder is refused
(:func:`bundle_file_path`) before the file is looked at, with the same words
whether or not such a file exists, so the refusal tells nothing about the disk.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import BundleError
from .preprocess import InputSpec

__all__ = ["PRECISIONS", "TASKS", "ModelManifest", "bundle_file_path", "load_manifest", "sha256_file"]

TASKS = ("lane", "detect", "classify", "ocr")
PRECISIONS = ("int8", "float32")
_REQUIRED = ("schema", "id", "name", "version", "task", "min_firmware_version", "files", "input", "outputs")
_MAX_NAME = 255


def bundle_file_path(folder: Path, name: object, what: str) -> Path:
    """The file ``name`` inside the bundle folder ``folder``, refusing any name that leads out of it.

    Args:
        folder: the bundle folder (the one holding ``manifest.json``).
        name: the name as the manifest gives it: a relative path such as ``model.tflite``.
        what: what the file is, for the message (``"model file"``, ``"golden_input"``...).

    Raises:
        BundleError: not a string, empty, absolute, with a ``..`` component, a backslash
            or a control character, or resolving (through a symlink) outside ``folder``.
            The message is the same whether or not the named file exists.
    """
    base = Path(folder).resolve()
    text = name if isinstance(name, str) else ""
    pure = PurePosixPath(text)
    plain = (
        0 < len(text) <= _MAX_NAME
        and not pure.is_absolute()
        and ".." not in pure.parts
        and pure.parts not in ((), (".",))
        and "\\" not in text
        and all(ord(c) >= 0x20 and c != "\x7f" for c in text)
    )
    path = base / pure
    try:
        inside = plain and path.resolve().is_relative_to(base)
    except (OSError, RuntimeError):  # a symlink loop: not a file of the bundle either
        inside = False
    if not inside:
        shown = repr(name)[:300]
        raise BundleError(f"the manifest's {what} {shown} is outside the bundle folder (only names inside it may be)")
    return path


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _version_tuple(v: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in v.split("."))
    except ValueError as exc:
        raise BundleError(f"bad version string {v!r}") from exc


@dataclass(frozen=True)
class ModelManifest:
    """One precision of a model bundle, ready for the runtime.

    Attributes:
        id, name, version, task: identity of the model.
        precision: ``"int8"`` or ``"float32"``.
        file: absolute path of the ``.tflite`` file; ``sha256`` its expected hash.
        input: preprocessing of camera frames (see :class:`InputSpec`).
        outputs: output tensor name -> shape.
        decoder: task-specific decoder parameters.
        camera: camera geometry the model was trained for.
        min_firmware_version: oldest firmware that can run the bundle.
        golden_input, golden_output: absolute paths of the self-test files, or None.
        bundle_dir: the folder holding ``manifest.json``.
    """

    id: str
    name: str
    version: str
    task: str
    precision: str
    file: Path
    sha256: str
    input: InputSpec
    outputs: dict[str, tuple[int, ...]]
    decoder: dict[str, Any] = field(default_factory=dict)
    camera: dict[str, Any] = field(default_factory=dict)
    min_firmware_version: str = "0.0.0"
    golden_input: Path | None = None
    golden_output: Path | None = None
    bundle_dir: Path = Path(".")

    @property
    def input_shape(self) -> tuple[int, int, int, int]:
        """The model input shape."""
        return self.input.shape

    def verify_file(self) -> None:
        """Check that the model file exists and has the manifest's sha256.

        Raises:
            BundleError: missing file or hash mismatch.
        """
        if not self.file.is_file():
            raise BundleError(f"model file listed in the manifest is missing: {self.file}")
        got = sha256_file(self.file)
        if got != self.sha256:
            raise BundleError(
                f"sha256 mismatch for {self.file.name}: manifest {self.sha256[:12]}..., file {got[:12]}..."
            )

    def check_firmware(self, firmware_version: str) -> None:
        """Raise :class:`BundleError` when ``firmware_version`` is older than required."""
        if _version_tuple(firmware_version) < _version_tuple(self.min_firmware_version):
            raise BundleError(
                f"model {self.id} needs firmware >= {self.min_firmware_version}, running {firmware_version}"
            )


def _parse_input(d: Any) -> InputSpec:
    try:
        shape = [int(v) for v in d["shape"]]
        if len(shape) != 4 or shape[0] != 1 or shape[3] != 3:
            raise BundleError(f"input shape must be [1, H, W, 3], got {shape}")
        return InputSpec(
            width=shape[2],
            height=shape[1],
            crop_top=float(d.get("crop_top", 0.0)),
            crop_bottom=float(d.get("crop_bottom", 0.0)),
            color_order=str(d.get("color_order", "RGB")),
            mean=float(d.get("mean", 0.0)),
            std=float(d.get("std", 255.0)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise BundleError(f"invalid manifest 'input': {exc}") from exc


def load_manifest(path: str | Path, *, precision: str | None = None, verify: bool = True) -> ModelManifest:
    """Read and validate ``manifest.json`` (a file, or the bundle folder holding it).

    Args:
        path: the manifest file or its folder.
        precision: ``"int8"`` / ``"float32"``; default: the manifest's ``default_precision``.
        verify: also check the model file's presence and sha256.

    Raises:
        BundleError: unreadable JSON, missing/invalid keys, unknown task or
            precision, missing file or sha256 mismatch.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "manifest.json"
    try:
        raw = json.loads(p.read_text())
    except FileNotFoundError as exc:
        raise BundleError(f"manifest not found: {p}") from exc
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: not JSON, or not UTF-8
        raise BundleError(f"unreadable manifest {p}: {str(exc)[:200]}") from exc
    if not isinstance(raw, dict):
        raise BundleError(f"{p}: manifest must be a JSON object")
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise BundleError(f"{p}: manifest lacks {', '.join(missing)}")
    if raw["schema"] != 1:
        raise BundleError(f"{p}: unsupported manifest schema {raw['schema']!r}")
    if raw["task"] not in TASKS:
        raise BundleError(f"{p}: unknown task {raw['task']!r}")
    files = raw["files"]
    prec = precision or raw.get("default_precision", "int8")
    if prec not in PRECISIONS:
        raise BundleError(f"unknown precision {prec!r}; expected one of {PRECISIONS}")
    if not isinstance(files, dict) or prec not in files:
        raise BundleError(f"{p}: no {prec!r} file in the manifest")
    entry = files[prec]
    try:
        outputs = {str(k): tuple(int(x) for x in v) for k, v in raw["outputs"].items()}
        fname, sha = entry["file"], str(entry["sha256"])
        golden_out = entry.get("golden_output")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BundleError(f"{p}: invalid 'files' or 'outputs': {exc}") from exc
    base = p.parent.resolve()
    golden_in = raw.get("golden_input")
    m = ModelManifest(
        id=str(raw["id"]),
        name=str(raw["name"]),
        version=str(raw["version"]),
        task=str(raw["task"]),
        precision=prec,
        file=bundle_file_path(base, fname, "model file"),
        sha256=sha,
        input=_parse_input(raw["input"]),
        outputs=outputs,
        decoder=dict(raw.get("decoder", {})),
        camera=dict(raw.get("camera", {})),
        min_firmware_version=str(raw["min_firmware_version"]),
        golden_input=bundle_file_path(base, golden_in, "golden_input") if golden_in else None,
        golden_output=bundle_file_path(base, golden_out, "golden_output") if golden_out else None,
        bundle_dir=base,
    )
    _version_tuple(m.version)
    _version_tuple(m.min_firmware_version)
    if verify:
        m.verify_file()
    return m

"""The files a VisionSeed client sees: ``listFile``, ``uploadFile`` (chunked) and ``deleteFile``.

The device shows one folder, ``/models``, which is the firmware's models folder
(``models.dir``); ``/`` lists it. Paths outside it, ``..`` components, hidden
names (``.x``: the firmware's own temp files) and symlinks leading out of it are
refused with ``ERROR_INVALID_PATH``.

Only the two halves of a custom model can be uploaded: ``/models/NAME.tflite``
and ``/models/NAME.json`` (``ERROR_INVALID_PATH`` for other names), and never
while a bundle folder ``/models/NAME`` exists (``ERROR_PERMISSION``): an upload
cannot change a bundle, and so never a loaded model, in place.

An upload arrives as ``FilePart{path, totalLength, offset, data}`` chunks, in
order, one RPC each. Chunks go to a hidden ``.<name>.part`` file beside the
target; the last chunk (``offset + len(data) == totalLength``) makes it durable
the crash-safe way (fsync, rename over the target, fsync the folder), so a
power cut leaves either the old file or the new one, never half of one. A
chunk sent again (the Python client retries a chunk whose answer it missed)
is written again at its offset; a chunk that skips ahead is refused.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from seedcam_firmware.storage.atomic import fsync_dir
from seedcam_firmware.visionseed._proto import visionseed_pb2 as vs
from seedcam_firmware.visionseed.errors import VisionSeedRequestError

__all__ = ["MAX_LISTED", "MODELS_FOLDER", "UPLOAD_SUFFIXES", "DeviceFiles", "UploadProgress", "fsync_dir"]

log = logging.getLogger(__name__)

MODELS_FOLDER = "models"  #: the one top-level folder: the models folder
MAX_LISTED = 100  #: listFile returns at most this many entries (``total`` counts them all)
UPLOAD_SUFFIXES = (".tflite", ".json")  #: uploadFile takes /models/NAME.tflite and /models/NAME.json only
_INT32_MAX = 2**31 - 1
_Code = vs.YtRpcResponse


@dataclass(frozen=True)
class UploadProgress:
    """Where an upload stands after a chunk.

    Attributes:
        path: the file being written (its final place).
        received: bytes written so far.
        total: the announced length.
    """

    path: Path
    received: int
    total: int

    @property
    def done(self) -> bool:
        """True once the file is complete and in place."""
        return self.received == self.total


@dataclass
class _Upload:
    target: Path
    part: Path
    total: int
    received: int = 0


class DeviceFiles:
    """The device's file area, rooted at the models folder.

    Args:
        models_dir: the folder shown as ``/models``.
        max_file_size: largest upload accepted (``ERROR_FILE_EXCEED_LIMITS`` above it).
        protected: returns the folders that must not be deleted (the bundles of loaded models).
    """

    def __init__(
        self,
        models_dir: Path,
        *,
        max_file_size: int = 256 * 1024 * 1024,
        protected: Callable[[], Iterable[Path]] = tuple,
    ) -> None:
        self.models_dir = Path(models_dir)
        self.max_file_size = max_file_size
        self._protected = protected
        self._uploads: dict[Path, _Upload] = {}
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- paths

    def resolve(self, path: str) -> Path:
        """The real path of a device path (``/models/x.tflite``, ``models/x``, ``/models``).

        Raises:
            VisionSeedRequestError: ERROR_INVALID_PATH for ``/`` itself, anything outside
                ``/models``, ``..`` components, or a symlink leading out.
        """
        parts = [p for p in PurePosixPath(path.strip() or "/").parts if p not in ("/", ".")]
        if not parts or parts[0] != MODELS_FOLDER or ".." in parts:
            raise VisionSeedRequestError(_Code.ERROR_INVALID_PATH, f"{path!r} is not under /{MODELS_FOLDER}")
        if any(p.startswith(".") for p in parts):
            raise VisionSeedRequestError(_Code.ERROR_INVALID_PATH, f"{path!r}: hidden names are the firmware's own")
        real = self.models_dir.joinpath(*parts[1:])
        root = self.models_dir.resolve()
        # the folder it is in must be inside, whether or not the target exists (a symlinked folder
        # would take a new file out); and a target that is itself a link must lead inside too
        inside = real == self.models_dir or real.parent.resolve().is_relative_to(root)
        if not inside or ((real.exists() or real.is_symlink()) and not real.resolve().is_relative_to(root)):
            raise VisionSeedRequestError(_Code.ERROR_INVALID_PATH, f"{path!r} leads out of /{MODELS_FOLDER}")
        return real

    # ---------------------------------------------------------------- listFile

    def list(self, folder: str) -> vs.FileListResult:
        """List a folder (``/`` shows ``models``); hidden files (partial uploads) are left out.

        Raises:
            VisionSeedRequestError: ERROR_NOT_EXIST (no such folder), ERROR_INVALID_PATH (a file, or outside).
        """
        if not [p for p in PurePosixPath(folder.strip() or "/").parts if p not in ("/", ".")]:
            entry = vs.FileInfo(name=MODELS_FOLDER, isFolder=True, size=0)
            return vs.FileListResult(folder="/", total=1, files=[entry])
        real = self.resolve(folder)
        if not real.exists():
            raise VisionSeedRequestError(_Code.ERROR_NOT_EXIST, f"no folder {folder!r}")
        if not real.is_dir():
            raise VisionSeedRequestError(_Code.ERROR_INVALID_PATH, f"{folder!r} is a file, not a folder")
        entries = sorted(p for p in real.iterdir() if not p.name.startswith("."))
        files = []
        for path in entries[:MAX_LISTED]:
            is_dir = path.is_dir()
            size = 0 if is_dir else min(path.stat().st_size, _INT32_MAX)
            files.append(vs.FileInfo(name=path.name, isFolder=is_dir, size=size))
        return vs.FileListResult(folder=folder, total=len(entries), files=files)

    # ---------------------------------------------------------------- uploadFile

    def write_part(self, part: vs.FilePart) -> UploadProgress:
        """Write one chunk of an upload; the last one puts the file in place (crash-safe).

        Raises:
            VisionSeedRequestError: ERROR_INVALID_PATH (outside /models, a folder, no parent folder),
                ERROR_FILE_EXCEED_LIMITS (over ``max_file_size``), ERROR_PARAMETERS (bad length or
                offset, a chunk out of order), ERROR_OTHER (the disk refused).
        """
        target = self.resolve(part.path)
        if target == self.models_dir or target.is_dir():
            raise VisionSeedRequestError(_Code.ERROR_INVALID_PATH, f"{part.path!r} is a folder")
        if not target.parent.is_dir():
            raise VisionSeedRequestError(_Code.ERROR_INVALID_PATH, f"no folder for {part.path!r}")
        if target.parent != self.models_dir or target.suffix not in UPLOAD_SUFFIXES or not target.stem:
            raise VisionSeedRequestError(
                _Code.ERROR_INVALID_PATH,
                f"{part.path!r}: only /{MODELS_FOLDER}/NAME.tflite and /{MODELS_FOLDER}/NAME.json can be uploaded",
            )
        bundle = target.with_suffix("")
        if bundle.exists() or bundle.is_symlink() or self._is_protected(bundle):
            raise VisionSeedRequestError(
                _Code.ERROR_PERMISSION, f"/{MODELS_FOLDER}/{bundle.name} exists; delete it before uploading a new one"
            )
        total, offset, data = part.totalLength, part.offset, part.data
        if total > self.max_file_size:
            raise VisionSeedRequestError(
                _Code.ERROR_FILE_EXCEED_LIMITS, f"{total} bytes is over the {self.max_file_size}-byte limit"
            )
        if total < 0 or offset < 0 or offset + len(data) > total:
            raise VisionSeedRequestError(
                _Code.ERROR_PARAMETERS, f"chunk at {offset} of {len(data)} bytes does not fit a {total}-byte file"
            )
        with self._lock:
            upload = self._uploads.get(target)
            if offset == 0:
                upload = _Upload(target, target.with_name(f".{target.name}.part"), total)
                self._uploads[target] = upload
            elif upload is None or upload.total != total or offset > upload.received:
                expected = 0 if upload is None or upload.total != total else upload.received
                raise VisionSeedRequestError(
                    _Code.ERROR_PARAMETERS, f"chunk at {offset} out of order: expected offset {expected}"
                )
            try:
                self._write(upload, offset, data)
            except OSError as exc:
                self._uploads.pop(target, None)
                upload.part.unlink(missing_ok=True)
                raise VisionSeedRequestError(_Code.ERROR_OTHER, f"cannot write {part.path!r}: {exc}") from exc
            if upload.received == total:
                del self._uploads[target]
            return UploadProgress(target, upload.received, total)

    @staticmethod
    def _write(upload: _Upload, offset: int, data: bytes) -> None:
        mode = "wb" if offset == 0 else "r+b"
        with upload.part.open(mode) as handle:
            handle.seek(offset)
            handle.write(data)
            handle.truncate(offset + len(data))  # a chunk sent again replaces what followed it
            upload.received = offset + len(data)
            if upload.received == upload.total:
                handle.flush()
                os.fsync(handle.fileno())
        if upload.received == upload.total:
            os.replace(upload.part, upload.target)
            fsync_dir(upload.target.parent)

    # ---------------------------------------------------------------- deleteFile

    def delete(self, path: str) -> Path:
        """Delete a file, or a folder (a model bundle) that no loaded model uses.

        Raises:
            VisionSeedRequestError: ERROR_INVALID_PATH (outside /models), ERROR_NOT_EXIST,
                ERROR_PERMISSION (``/models`` itself, or the bundle of a loaded model).
        """
        real = self.resolve(path)
        if real == self.models_dir:
            raise VisionSeedRequestError(_Code.ERROR_PERMISSION, f"/{MODELS_FOLDER} itself cannot be deleted")
        if not real.exists() and not real.is_symlink():
            raise VisionSeedRequestError(_Code.ERROR_NOT_EXIST, f"no file {path!r}")
        if self._is_protected(real):
            raise VisionSeedRequestError(_Code.ERROR_PERMISSION, f"{path!r} holds a loaded model")
        if real.is_dir() and not real.is_symlink():
            shutil.rmtree(real)
        else:
            real.unlink()
        fsync_dir(real.parent)
        return real

    def _is_protected(self, path: Path) -> bool:
        """True when ``path`` is, holds or lies in the bundle of a loaded model."""
        resolved = path.resolve()
        for folder in self._protected():
            folder = Path(folder).resolve()
            if folder == resolved or folder.is_relative_to(resolved) or resolved.parent == folder:
                return True
        return False

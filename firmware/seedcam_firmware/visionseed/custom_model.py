"""Custom models uploaded the VisionSeed way: a ``.tflite`` plus a ``.json`` descriptor of the same name.

When both ``/models/NAME.tflite`` and ``/models/NAME.json`` are in place (the
second upload completing triggers it), the pair becomes the bundle folder
``/models/NAME/`` (``manifest.json``, ``NAME.tflite``, and the descriptor kept as
``visionseed.json``) and is checked exactly as a shipped bundle is at boot: the
task's own loader builds it (manifest keys, sha256, minimum firmware version,
TFLite identifier, input shape, output names and shapes, the decoder section
against the outputs), and it runs once on a grey frame of the camera's size. A
pair that fails stays as uploaded (so a client retrying the last chunk gets the
same answer) and the error names what is wrong.

The descriptor declares what VisionSeed's custom-model JSON declared — what
the model does, what it eats and how to read its outputs — in our manifest's
vocabulary::

    {"task": "classify",                       # lane | detect | ocr | classify
     "name": "road signs", "version": "1.0.0",  # optional (id defaults to NAME)
     "precision": "float32",                     # optional: int8 | float32 (default: from the input type)
     "input": {"shape": [1, 96, 96, 3], "color_order": "RGB", "mean": 0.0, "std": 255.0},
     "outputs": {"probs": [1, 4]},
     "labels": ["stop", "yield", "left", "right"],  # optional: copied into decoder.labels
     "decoder": {"type": "softmax", "top_k": 3}}

To run it, point the task's ``models.<task>`` key at ``NAME/manifest.json`` (and
``models.<task>_precision`` at its precision) with ``setConfig``, then reboot.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from seedcam.errors import SensorError
from seedcam.types import ModelInfo
from seedcam_firmware.config import FirmwareConfig, config_set
from seedcam_firmware.inference.manifest import PRECISIONS, TASKS, load_manifest, sha256_file
from seedcam_firmware.inference.runtime import load_interpreter
from seedcam_firmware.storage.atomic import fsync_dir
from seedcam_firmware.tasks.base import Task, model_info
from seedcam_firmware.tasks.registry import task_factory
from seedcam_firmware.visionseed._proto import visionseed_pb2 as vs
from seedcam_firmware.visionseed.errors import VisionSeedRequestError

__all__ = ["DESCRIPTOR_SUFFIX", "MODEL_SUFFIX", "bundle_manifest", "import_model_pair", "recover_models_dir"]

log = logging.getLogger(__name__)

MODEL_SUFFIX = ".tflite"
DESCRIPTOR_SUFFIX = ".json"
_KEPT_DESCRIPTOR = "visionseed.json"
_ALLOWED = frozenset(
    {
        "task",
        "id",
        "name",
        "version",
        "precision",
        "min_firmware_version",
        "input",
        "outputs",
        "decoder",
        "labels",
        "camera",
    }
)
_Code = vs.YtRpcResponse


def _refuse(message: str) -> VisionSeedRequestError:
    return VisionSeedRequestError(_Code.ERROR_PARAMETERS, message)


def _read_descriptor(path: Path) -> dict[str, Any]:
    try:
        descriptor = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _refuse(f"{path.name}: not a JSON descriptor: {exc}") from exc
    if not isinstance(descriptor, dict):
        raise _refuse(f"{path.name}: the descriptor must be a JSON object")
    unknown = sorted(set(descriptor) - _ALLOWED)
    if unknown:
        raise _refuse(f"{path.name}: unknown descriptor keys {unknown}; allowed: {sorted(_ALLOWED)}")
    for key in ("task", "input", "outputs"):
        if key not in descriptor:
            raise _refuse(f"{path.name}: the descriptor lacks {key!r}")
    if descriptor["task"] not in TASKS:
        raise _refuse(f"{path.name}: task {descriptor['task']!r} is not one of {list(TASKS)}")
    return descriptor


def _precision(descriptor: dict[str, Any], model_file: Path, name: str) -> str:
    precision = descriptor.get("precision")
    if precision is None:
        try:
            dtype = np.dtype(load_interpreter(model_file, num_threads=1).get_input_details()[0]["dtype"])
        except (SensorError, IndexError, KeyError) as exc:
            raise _refuse(f"{name}: cannot read the model's input type: {exc}") from exc
        precision = "float32" if dtype == np.float32 else "int8"
    if precision not in PRECISIONS:
        raise _refuse(f"{name}: precision {precision!r} is not one of {list(PRECISIONS)}")
    return str(precision)


def bundle_manifest(name: str, descriptor: dict[str, Any], model_file: str, sha256: str, precision: str) -> dict:
    """The ``manifest.json`` (schema 1) of a descriptor: a bundle with one precision."""
    decoder = dict(descriptor.get("decoder", {}))
    if "labels" in descriptor and "labels" not in decoder:
        decoder["labels"] = descriptor["labels"]
    return {
        "schema": 1,
        "id": str(descriptor.get("id", name)),
        "name": str(descriptor.get("name", name)),
        "version": str(descriptor.get("version", "1.0.0")),
        "task": descriptor["task"],
        "min_firmware_version": str(descriptor.get("min_firmware_version", "0.0.0")),
        "default_precision": precision,
        "files": {precision: {"file": model_file, "sha256": sha256}},
        "input": descriptor["input"],
        "outputs": descriptor["outputs"],
        "decoder": decoder,
        "camera": dict(descriptor.get("camera", {})),
    }


def _load_as_at_boot(config: FirmwareConfig, task: str, manifest: Path, precision: str) -> Task:
    """Build the task from the bundle with the task's own loader (the checks of a boot).

    Raises:
        SensorError: BundleError, ModelError or ConfigError from the loader.
    """
    trial = config_set(config, f"models.{task}", str(manifest), source="uploaded model")
    trial = config_set(trial, f"models.{task}_precision", precision, source="uploaded model")
    loaded: dict[str, Task] = {}
    if task == "ocr":  # the OCR task reads the plates of the running detector
        loaded["detect"] = task_factory("detect")(config, loaded)
    try:
        return task_factory(task)(trial, loaded)
    finally:
        for other in loaded.values():
            other.close()


def _self_test(task: Task, config: FirmwareConfig) -> None:
    """Run the model once on a grey frame of the camera's size.

    Raises:
        VisionSeedRequestError: ERROR_PARAMETERS when it fails.
    """
    frame = np.full((config.camera.height, config.camera.width, 3), 128, np.uint8)
    try:
        task.run(frame, {})
    except Exception as exc:  # whatever the runtime or decoder throws: the model cannot run here
        raise _refuse(f"the model does not run: {type(exc).__name__}: {exc}") from exc


def import_model_pair(models_dir: Path, name: str, config: FirmwareConfig) -> ModelInfo | None:
    """Turn ``NAME.tflite`` + ``NAME.json`` in ``models_dir`` into the bundle ``NAME/``, checked.

    Args:
        models_dir: the models folder.
        name: the pair's base name.
        config: the running configuration (interpreter settings, camera size, the detector for OCR).

    Returns:
        The model's info, or None while one of the two files is still missing.

    Raises:
        VisionSeedRequestError: ERROR_PARAMETERS naming what is wrong with the pair
            (the uploaded files are left in place); ERROR_PERMISSION when the bundle
            ``NAME/`` exists (an import never replaces a bundle: it may be loaded or
            shipped); ERROR_OTHER when the disk refuses.
    """
    model_file = models_dir / f"{name}{MODEL_SUFFIX}"
    descriptor_file = models_dir / f"{name}{DESCRIPTOR_SUFFIX}"
    if not (model_file.is_file() and descriptor_file.is_file()):
        return None
    bundle = models_dir / name
    if name.startswith(".") or bundle.exists() or bundle.is_symlink():
        raise VisionSeedRequestError(_Code.ERROR_PERMISSION, f"/models/{name} exists; an upload never replaces it")
    descriptor = _read_descriptor(descriptor_file)
    precision = _precision(descriptor, model_file, name)
    staging = models_dir / f".{name}.import"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        staging.mkdir()
        _link_or_copy(model_file, staging / model_file.name)
        shutil.copyfile(descriptor_file, staging / _KEPT_DESCRIPTOR)
        manifest = bundle_manifest(name, descriptor, model_file.name, sha256_file(model_file), precision)
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        task = _load_as_at_boot(config, descriptor["task"], staging / "manifest.json", precision)
        try:
            _self_test(task, config)
        finally:
            task.close()
        for path in staging.iterdir():
            _fsync_file(path)
        _move_into_place(staging, bundle)
    except SensorError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, VisionSeedRequestError):
            raise
        raise _refuse(f"model {name} refused: {exc}") from exc
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise VisionSeedRequestError(_Code.ERROR_OTHER, f"cannot install model {name}: {exc}") from exc
    model_file.unlink()
    descriptor_file.unlink()
    fsync_dir(models_dir)
    info = model_info(load_manifest(models_dir / name, precision=precision))
    log.info("installed uploaded model %s (%s, %s) as %s", info.id, info.task, precision, models_dir / name)
    return info


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _fsync_file(path: Path) -> None:
    with path.open("rb") as handle:
        os.fsync(handle.fileno())


def _move_into_place(staging: Path, bundle: Path) -> None:
    """Rename the finished ``staging`` folder to ``bundle``, which must not exist (never replaced)."""
    if bundle.exists() or bundle.is_symlink():
        raise VisionSeedRequestError(
            _Code.ERROR_PERMISSION, f"/models/{bundle.name} exists; an upload never replaces it"
        )
    os.rename(staging, bundle)
    fsync_dir(bundle.parent)


def recover_models_dir(models_dir: Path) -> list[str]:
    """Finish or undo what a power cut interrupted in ``models_dir``; returns what was done.

    A partial upload (``.NAME.part``) or import (``.NAME.import``) is removed; a
    bundle caught between its two renames (``.NAME.old`` present, ``NAME`` gone) is
    put back, and a leftover ``.NAME.old`` beside its replacement is removed.
    """
    done: list[str] = []
    if not models_dir.is_dir():
        return done
    for path in sorted(models_dir.glob(".*")):
        try:
            if path.name.endswith(".part") and path.is_file():
                path.unlink()
                done.append(f"removed partial upload {path.name}")
            elif path.name.endswith(".import") and path.is_dir():
                shutil.rmtree(path)
                done.append(f"removed unfinished import {path.name}")
            elif path.name.endswith(".old") and path.is_dir():
                bundle = path.with_name(path.name[1 : -len(".old")])
                if bundle.exists():
                    shutil.rmtree(path)
                    done.append(f"removed replaced bundle {path.name}")
                else:
                    os.replace(path, bundle)
                    done.append(f"restored bundle {bundle.name}")
        except OSError as exc:
            log.warning("cannot clean up %s: %s", path, exc)
    if done:
        fsync_dir(models_dir)
    return done

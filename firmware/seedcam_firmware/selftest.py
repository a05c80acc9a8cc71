"""On-device self-tests of installed bundles, before they may become active.

A model is loaded with the same runtime and manifest checks the tasks use,
run on the bundle's golden input, and its outputs compared with the golden
outputs; a firmware wheel is imported by a fresh interpreter that must report
the bundle's version.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from seedcam.bundle import BundleHeader
from seedcam.errors import BundleError
from seedcam_firmware.errors import ModelError, UpdateRefusal
from seedcam_firmware.inference.manifest import ModelManifest, load_manifest
from seedcam_firmware.inference.runtime import Model

__all__ = ["selftest_firmware", "selftest_model"]

_FIRMWARE_SELFTEST_TIMEOUT_S = 60.0


def _refusal_for(exc: ModelError) -> UpdateRefusal:
    return UpdateRefusal(exc.reason, f"self-test: {exc}")


def selftest_model(slot_dir: Path, header: BundleHeader, *, num_threads: int = 1) -> tuple[ModelManifest, float]:
    """Load the model in ``slot_dir`` and reproduce its golden output.

    Returns:
        The slot's manifest and the largest absolute difference from the golden output.

    Raises:
        UpdateRefusal: ``identity`` (the manifest is another model than the header says),
            ``not_tflite``, ``input_shape``, ``model`` (does not load or
            disagrees with its manifest), ``selftest_nan`` (a non-finite output) or
            ``selftest_mismatch`` (outside the bundle's tolerance).
    """
    precision = str(header.fields.get("precision", "int8"))
    try:
        manifest = load_manifest(slot_dir, precision=precision)
    except BundleError as exc:
        raise UpdateRefusal("model", f"self-test: {exc}") from exc
    _check_identity(manifest, header)
    promised = header.fields.get("input_shape")
    if promised is not None and tuple(promised) != tuple(manifest.input_shape):
        raise UpdateRefusal(
            "input_shape", f"self-test: bundle header promises input {promised}, manifest says {manifest.input_shape}"
        )
    if manifest.golden_input is None or manifest.golden_output is None:
        raise UpdateRefusal("model", "self-test: the bundle has no golden input/output")
    try:
        model = Model(
            manifest.file, input_shape=manifest.input_shape, outputs=manifest.outputs, num_threads=num_threads
        )
        golden_in = np.load(manifest.golden_input, allow_pickle=False)
        outputs = model.invoke(golden_in)
        with np.load(manifest.golden_output, allow_pickle=False) as ref:
            expected = {name: np.asarray(ref[name], dtype=np.float32) for name in ref.files}
    except ModelError as exc:
        raise _refusal_for(exc) from exc
    except (OSError, ValueError, KeyError) as exc:
        raise UpdateRefusal("model", f"self-test: golden files unusable: {exc}") from exc
    atol = float(header.fields.get("selftest", {}).get("atol", 0.02))
    if not math.isfinite(atol) or atol < 0:
        raise UpdateRefusal("model", f"self-test: the bundle's selftest.atol {atol!r} is not a finite tolerance")
    extra = sorted(set(expected) - set(outputs))
    if extra:  # a golden the model cannot reproduce proves nothing: refuse rather than ignore it
        raise UpdateRefusal("selftest_mismatch", f"self-test: golden outputs {extra} are not outputs of the model")
    worst = 0.0
    for name, got in outputs.items():
        if not np.all(np.isfinite(got)):
            raise UpdateRefusal("selftest_nan", f"self-test: output {name!r} has NaN or infinite values")
        if name not in expected:
            raise UpdateRefusal("selftest_mismatch", f"self-test: the golden output lacks {name!r}")
        if not np.all(np.isfinite(expected[name])):  # max(worst, nan) would pass anything
            raise UpdateRefusal("selftest_nan", f"self-test: golden output {name!r} has NaN or infinite values")
        if expected[name].shape != got.shape:
            raise UpdateRefusal(
                "selftest_mismatch", f"self-test: output {name!r} is {got.shape}, golden is {expected[name].shape}"
            )
        error = float(np.max(np.abs(got - expected[name]))) if got.size else 0.0
        if not error <= atol:  # also catches a NaN difference
            raise UpdateRefusal(
                "selftest_mismatch", f"self-test: output {name!r} differs from golden by {error:.4g} > {atol}"
            )
        worst = max(worst, error)
    return manifest, worst


def _check_identity(manifest: ModelManifest, header: BundleHeader) -> None:
    """The header (what was signed and what the slots list) must name the model the manifest describes.

    Raises:
        UpdateRefusal: ``identity`` when id, version or task differ.
    """
    if (manifest.id, manifest.version, manifest.task) != (header.name, header.version, header.task):
        raise UpdateRefusal(
            "identity",
            f"the bundle's manifest is {manifest.id}@{manifest.version} for {manifest.task}, its header says "
            f"{header.id} for {header.task}"[:300],
        )


def selftest_firmware(slot_dir: Path, header: BundleHeader) -> None:
    """Import the firmware unpacked in ``slot_dir`` in a fresh interpreter; it must report the bundle's version.

    Raises:
        UpdateRefusal: ``firmware`` when it does not import, reports another version or hangs.
    """
    path = os.pathsep.join(filter(None, [str(slot_dir), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path, PYTHONDONTWRITEBYTECODE="1")  # no caches naming the staging folder
    probe = (
        "import seedcam_firmware, seedcam_firmware.cli; print(seedcam_firmware.__version__, seedcam_firmware.__file__)"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", probe],
            capture_output=True,
            text=True,
            env=env,
            timeout=_FIRMWARE_SELFTEST_TIMEOUT_S,
            cwd=slot_dir,
        )
    except subprocess.TimeoutExpired as exc:
        raise UpdateRefusal("firmware", "self-test: importing the new firmware hung") from exc
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        raise UpdateRefusal("firmware", f"self-test: the new firmware does not import: {tail[0]}")
    version, _, location = done.stdout.strip().partition(" ")
    if version != header.version or not location.startswith(str(slot_dir)):
        raise UpdateRefusal(
            "firmware", f"self-test: the slot runs firmware {version} from {location}, expected {header.version}"
        )

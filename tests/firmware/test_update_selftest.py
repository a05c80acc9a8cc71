"""The on-device self-test of a model bundle: NaN or infinity anywhere, or a golden it cannot check, fails it."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from helpers import MODELS

from seedcam.bundle import BundleHeader
from seedcam_firmware.errors import UpdateRefusal
from seedcam_firmware.selftest import selftest_model
from seedcam_tools.bundles import build_model_bundle, model_bundle_files

LANE = MODELS / "lane"


def install(tmp_path: Path, **changes: bytes) -> tuple[Path, BundleHeader]:
    """The float32 lane bundle unpacked as into a slot, with some payload files replaced (by role)."""
    files = [(name, role, changes.get(role, data)) for name, role, data in model_bundle_files(LANE, "float32")]
    bundle = build_model_bundle(LANE, precision="float32", files=files)
    for entry in bundle.header.files:
        (tmp_path / entry.name).write_bytes(bundle.file_bytes(entry))
    return tmp_path, bundle.header


def golden(**outputs: np.ndarray) -> bytes:
    data = io.BytesIO()
    np.savez(data, **outputs)
    return data.getvalue()


def reference() -> dict[str, np.ndarray]:
    ((_, _, data),) = [f for f in model_bundle_files(LANE, "float32") if f[1] == "golden_output"]
    with np.load(io.BytesIO(data)) as ref:
        return {name: ref[name] for name in ref.files}


def test_the_shipped_golden_passes(tmp_path: Path) -> None:
    slot, header = install(tmp_path)
    _, error = selftest_model(slot, header)
    assert error <= 0.02


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_non_finite_golden_output_fails_instead_of_passing_everything(tmp_path: Path, bad: float) -> None:
    outputs = reference()
    name = next(iter(outputs))
    outputs[name] = np.full_like(outputs[name], bad)
    slot, header = install(tmp_path, golden_output=golden(**outputs))
    with pytest.raises(UpdateRefusal) as refused:
        selftest_model(slot, header)
    assert refused.value.reason == "selftest_nan"


def test_a_golden_output_the_model_does_not_produce_fails(tmp_path: Path) -> None:
    outputs = reference()
    outputs["not_an_output"] = np.zeros(3, np.float32)
    slot, header = install(tmp_path, golden_output=golden(**outputs))
    with pytest.raises(UpdateRefusal) as refused:
        selftest_model(slot, header)
    assert refused.value.reason == "selftest_mismatch" and "not_an_output" in str(refused.value)


def test_a_non_finite_model_output_fails(tmp_path: Path) -> None:
    ((_, _, data),) = [f for f in model_bundle_files(LANE, "float32") if f[1] == "golden_input"]
    nan_input = io.BytesIO()
    np.save(nan_input, np.full_like(np.load(io.BytesIO(data)), np.nan, dtype=np.float32))
    slot, header = install(tmp_path, golden_input=nan_input.getvalue())
    with pytest.raises(UpdateRefusal) as refused:
        selftest_model(slot, header)
    assert refused.value.reason == "selftest_nan"

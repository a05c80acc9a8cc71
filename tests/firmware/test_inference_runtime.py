"""Inference runtime, manifests and preprocessing, against the shipped lane bundle."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from seedcam_firmware.errors import BundleError, ModelError
from seedcam_firmware.inference.manifest import load_manifest
from seedcam_firmware.inference.preprocess import (
    InputSpec,
    crop_resize,
    normalise,
    preprocess,
)
from seedcam_firmware.inference.runtime import Model, load_interpreter

BUNDLE = Path(__file__).resolve().parents[2] / "models" / "lane"


@pytest.fixture(scope="module", params=["int8", "float32"])
def manifest(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    return load_manifest(BUNDLE, precision=request.param)


def test_manifest_fields(manifest) -> None:  # type: ignore[no-untyped-def]
    assert manifest.task == "lane"
    assert manifest.input_shape == (1, 64, 128, 3)
    assert set(manifest.outputs) == {"mask", "lane_state", "presence"}
    assert manifest.decoder["state_scale"][0] > 0
    assert manifest.camera["width"] == 320
    manifest.check_firmware("9.9.9")
    with pytest.raises(BundleError):
        manifest.check_firmware("0.0.1")


def test_default_precision_is_int8() -> None:
    assert load_manifest(BUNDLE).precision == "int8"


def test_golden_output_reproduces(manifest) -> None:  # type: ignore[no-untyped-def]
    model = Model(manifest.file, input_shape=manifest.input_shape, outputs=manifest.outputs, num_threads=1)
    out = model.invoke(np.load(manifest.golden_input))
    with np.load(manifest.golden_output) as ref:
        for name in manifest.outputs:
            assert out[name].dtype == np.float32
            np.testing.assert_allclose(out[name], ref[name], atol=1e-5)


def test_int8_model_takes_quantized_input_and_dequantizes() -> None:
    m = load_manifest(BUNDLE, precision="int8")
    model = Model(m.file, num_threads=1)
    assert model.input_details["dtype"] == np.uint8
    x = np.load(m.golden_input)
    as_u8 = np.round(x * 255).astype(np.uint8)
    a, b = model.invoke(x), model.invoke(as_u8)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="missing"):
        load_interpreter(tmp_path / "nope.tflite")


def test_not_a_tflite_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"PK\x03\x04 this is a zip, not a flatbuffer")
    with pytest.raises(ModelError, match="not a TFLite"):
        Model(bad)


def test_input_shape_mismatch(manifest) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ModelError, match="input shape"):
        Model(manifest.file, input_shape=(1, 96, 96, 3))


def test_output_mismatch(manifest) -> None:  # type: ignore[no-untyped-def]
    outputs = dict(manifest.outputs, lane_state=(1, 5))
    with pytest.raises(ModelError, match="outputs"):
        Model(manifest.file, outputs=outputs)
    with pytest.raises(ModelError, match="outputs"):
        Model(manifest.file, outputs={"boxes": (1, 10, 4)})


def test_invoke_wrong_shape(manifest) -> None:  # type: ignore[no-untyped-def]
    model = Model(manifest.file, num_threads=1)
    with pytest.raises(ModelError, match="shape"):
        model.invoke(np.zeros((1, 32, 32, 3), np.float32))


def test_bad_delegate(manifest) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ModelError, match="delegate"):
        load_interpreter(manifest.file, delegate="/nonexistent/libnpu_delegate.so")


def _copy_bundle(tmp_path: Path) -> Path:
    dst = tmp_path / "lane"
    shutil.copytree(BUNDLE, dst)
    return dst


def test_manifest_sha_mismatch_and_missing_keys(tmp_path: Path) -> None:
    dst = _copy_bundle(tmp_path)
    with (dst / "lane_int8.tflite").open("ab") as fh:
        fh.write(b"\0")
    with pytest.raises(BundleError, match="sha256"):
        load_manifest(dst)
    load_manifest(dst, precision="float32")  # the other file is still fine
    raw = json.loads((dst / "manifest.json").read_text())
    del raw["outputs"]
    (dst / "manifest.json").write_text(json.dumps(raw))
    with pytest.raises(BundleError, match="outputs"):
        load_manifest(dst, verify=False)
    (dst / "manifest.json").write_text("{not json")
    with pytest.raises(BundleError, match="unreadable"):
        load_manifest(dst)
    with pytest.raises(BundleError, match="not found"):
        load_manifest(tmp_path / "elsewhere")
    with pytest.raises(BundleError, match="precision"):
        load_manifest(BUNDLE, precision="fp16")


def test_preprocess_crops_resizes_and_normalises() -> None:
    spec = InputSpec(width=128, height=64, crop_top=1 / 3, color_order="RGB", mean=0.0, std=255.0)
    img = np.zeros((240, 320, 3), np.uint8)
    img[:80] = (255, 255, 255)  # sky: cropped away
    img[80:, :, 0] = 200  # blue channel in BGR
    x = preprocess(img, spec)
    assert x.shape == (1, 64, 128, 3) and x.dtype == np.float32
    np.testing.assert_allclose(x[0, :, :, 2], 200 / 255, atol=1e-6)  # blue is last in RGB
    np.testing.assert_allclose(x[0, :, :, :2], 0.0)
    np.testing.assert_array_equal(x[0], normalise(crop_resize(img, spec), spec))
    with pytest.raises(ValueError):
        preprocess(np.zeros((240, 320), np.uint8), spec)

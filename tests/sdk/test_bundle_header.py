"""The bounds of a bundle header, checked by the SDK (before sending) and the device (before any data) alike."""

from __future__ import annotations

import json
from typing import Any

import pytest

from seedcam.bundle import BundleHeader, build_bundle
from seedcam.errors import BundleError

FILES = [("manifest.json", "manifest", b"{}"), ("model.tflite", "model", bytes(3000))]


def fields(**changes: Any) -> bytes:
    raw = dict(build_bundle(FILES, kind="model", name="x", version="1.0.0", extra={"task": "lane"}).header.fields)
    raw.update(changes)
    return json.dumps(raw).encode()


@pytest.mark.parametrize("counter", [2**32, 2**64, -1, True, 2.0, "3"])
def test_a_security_counter_outside_u32_is_refused(counter: object) -> None:
    with pytest.raises(BundleError, match="security_counter"):
        BundleHeader.parse(fields(security_counter=counter))
    with pytest.raises(BundleError, match="security_counter"):
        build_bundle(FILES, kind="model", name="x", version="1.0.0", security_counter=counter)  # type: ignore[arg-type]


def test_the_counter_bound_is_inclusive() -> None:
    assert BundleHeader.parse(fields(security_counter=2**32 - 1)).security_counter == 2**32 - 1


@pytest.mark.parametrize(
    "name", ["x" * 101, "a\x00b", "bundle.header", "BUNDLE.SIG", ".x", "a/b", "a\\b", "..", "", "-x", "\u00e9", "a b"]
)
def test_a_file_name_too_long_or_with_odd_characters_is_refused(name: str) -> None:
    with pytest.raises(BundleError, match="file name"):
        build_bundle(
            [("manifest.json", "manifest", b"{}"), (name, "model", b"x")], kind="model", name="x", version="1.0.0"
        )


def test_plain_file_names_up_to_the_limit_pass() -> None:
    names = ["x" * 100, "lane_int8.tflite", "seedcam_firmware-0.2.0-py3-none-any.whl", "golden+output.npz"]
    header = build_bundle([(n, "model", b"x") for n in names], kind="model", name="x", version="1.0.0").header
    assert [f.name for f in header.files] == names


def test_two_files_with_one_name_are_refused() -> None:
    with pytest.raises(BundleError, match="twice"):
        build_bundle(
            [("Model.tflite", "model", b"x"), ("model.tflite", "model", b"y")], kind="model", name="x", version="1.0.0"
        )


@pytest.mark.parametrize(
    "changes",
    [
        {"block_hashes": 7},
        {"block_hashes": ["zz"]},
        {"sha256": 5},
        {"name": 5},
        {"version": ["1"]},
        {"task": 7},
        {"precision": 5},
        {"selftest": [0.1]},
        {"selftest": {"atol": "x"}},
        {"input_shape": 3},
        {"files": {"a": 1}},
        {"files": [{"name": 5, "offset": 0, "size": 2, "sha256": "0" * 64, "role": "model"}]},
    ],
)
def test_ill_typed_fields_are_a_bundle_error(changes: dict[str, Any]) -> None:
    with pytest.raises(BundleError):
        BundleHeader.parse(fields(**changes))


def test_deeply_nested_json_is_a_bundle_error() -> None:
    with pytest.raises(BundleError, match="not JSON"):
        BundleHeader.parse(b"[" * 100_000 + b"]" * 100_000)

"""Hostile bundles: files outside the slot, unbounded counters, odd file names, a header that lies about its manifest.

Every one is refused with a typed reason (never INTERNAL), before any data where the header alone
tells, and without a slot changing.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import REPO
from update_helpers import LANE, begin, call, forged_header, lane_bundle, push, relabelled, service, slot_versions

from seedcam._proto import seedcam_pb2 as pb
from seedcam.bundle import build_bundle
from seedcam.errors import BundleError
from seedcam_firmware.inference.detection import make_detection_decoder
from seedcam_firmware.inference.manifest import load_manifest
from seedcam_firmware.transfer import SUPERVISED_ENV
from seedcam_tools.bundles import wheel_from_source

EMPTY = {"active": None, "previous": None, "a": None, "b": None}
SHIPPED = {
    "model": LANE / "lane_int8.tflite",
    "golden_input": LANE / "golden_input.npy",
    "golden_output": LANE / "golden_output_int8.npz",
}


def naming(role: str, name: str) -> Callable[[dict[str, Any]], None]:
    """A manifest edit: the file of ``role`` is called ``name``."""

    def edit(manifest: dict[str, Any]) -> None:
        if role == "golden_input":
            manifest["golden_input"] = name
        else:
            manifest["files"]["int8"]["file" if role == "model" else "golden_output"] = name

    return edit


# ---------------------------------------------------------------- finding 4: files outside the slot


@pytest.mark.parametrize("how", ["absolute", "dotdot"])
@pytest.mark.parametrize("role", ["model", "golden_input", "golden_output"])
def test_a_manifest_naming_a_file_outside_its_slot_is_refused(tmp_path: Path, role: str, how: str) -> None:
    """The outside file is the very one the slot holds (it would pass): only where it is refuses it."""
    outside = str(SHIPPED[role])
    name = outside if how == "absolute" else "../" * 40 + outside.lstrip("/")
    updates = service(tmp_path / "updates")
    answer = push(updates, lane_bundle("2.0.0", manifest=naming(role, name)))
    assert (answer.status, answer.reason) == (pb.STATUS_INVALID_ARGUMENT, "model"), answer
    assert "outside" in answer.message
    assert slot_versions(updates) == EMPTY


@pytest.mark.parametrize("role", ["model", "golden_input", "golden_output"])
def test_refusing_an_outside_name_does_not_tell_whether_that_file_exists(tmp_path: Path, role: str) -> None:
    exists = tmp_path / "exists.npy"
    np.save(exists, np.zeros((1, 64, 128, 3), np.float32))
    missing = tmp_path / "missing.npy"
    updates = service(tmp_path / "updates")
    answers = []
    for target in (exists, missing):
        answer = push(updates, lane_bundle("2.0.0", manifest=naming(role, str(target))))
        answers.append((answer.status, answer.reason, answer.message.replace(str(target), "NAME")))
    assert answers[0] == answers[1] and answers[0][0] != pb.STATUS_OK
    assert slot_versions(updates) == EMPTY


@pytest.mark.parametrize("name", ["a\x00b.tflite", "a\\..\\b.tflite", "", "."])
def test_a_manifest_file_name_with_nul_or_no_name_is_a_typed_refusal(tmp_path: Path, name: str) -> None:
    updates = service(tmp_path / "updates")
    answer = push(updates, lane_bundle("2.0.0", manifest=naming("model", name)))
    assert (answer.status, answer.reason) == (pb.STATUS_INVALID_ARGUMENT, "model"), answer


def test_a_symlink_out_of_the_bundle_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "bundle"
    shutil.copytree(LANE, folder)
    (folder / "lane_int8.tflite").unlink()
    (folder / "lane_int8.tflite").symlink_to(LANE / "lane_int8.tflite")
    with pytest.raises(BundleError, match="outside"):
        load_manifest(folder, precision="int8")
    assert load_manifest(folder, precision="float32").file == folder.resolve() / "lane_f32.tflite"


def test_an_anchors_file_outside_the_bundle_folder_is_refused(tmp_path: Path) -> None:
    np.save(tmp_path / "anchors.npy", np.full((3, 4), 0.5, np.float32))
    (tmp_path / "bundle").mkdir()
    decoder = {"layout": "ssd_anchors", "labels": ["a", "b", "c"], "anchors": {"file": "../anchors.npy"}}
    with pytest.raises(BundleError, match="outside"):
        make_detection_decoder(
            decoder,
            input_width=64,
            input_height=64,
            outputs={"boxes": (1, 3, 4), "scores": (1, 3, 3)},
            bundle_dir=tmp_path / "bundle",
        )


# ---------------------------------------------------------------- finding 5: the security counter


@pytest.mark.parametrize("counter", [2**32, 2**64, -1, True, 1.5])
def test_a_security_counter_outside_u32_is_refused_at_begin(tmp_path: Path, counter: object) -> None:
    updates = service(tmp_path / "updates")
    answer = call(updates, begin(forged_header(lane_bundle("2.0.0"), security_counter=counter)))
    assert (answer.status, answer.reason) == (pb.STATUS_INVALID_ARGUMENT, "header"), answer
    assert "security_counter" in answer.message
    assert updates.journal.header is None  # refused before any data
    assert call(updates, pb.UpdateRequest(list_slots=pb.ListSlotsRequest())).status == pb.STATUS_OK


def test_the_largest_u32_counter_installs_and_the_slots_still_list(tmp_path: Path) -> None:
    updates = service(tmp_path / "updates")
    assert push(updates, lane_bundle("2.0.0", counter=2**32 - 1)).installed.activated
    listed = call(updates, pb.UpdateRequest(list_slots=pb.ListSlotsRequest()))
    assert listed.status == pb.STATUS_OK and listed.slots.groups[0].security_counter == 2**32 - 1


# ---------------------------------------------------------------- finding 9: payload file names


@pytest.mark.parametrize(
    "name", ["x" * 300, "a\x00b.npy", "bundle.header", "Bundle.Sig", ".hidden", "a\\b", "-rf", "caf\u00e9.npy", " "]
)
def test_a_payload_file_name_too_long_or_odd_is_refused_at_begin(tmp_path: Path, name: str) -> None:
    bundle = lane_bundle("2.0.0")
    files = [dict(f) for f in bundle.header.fields["files"]]
    files[2]["name"] = name
    updates = service(tmp_path / "updates")
    answer = call(updates, begin(forged_header(bundle, files=files)))
    assert (answer.status, answer.reason) == (pb.STATUS_INVALID_ARGUMENT, "header"), answer
    assert updates.journal.header is None


def test_two_payload_files_with_one_name_are_refused_at_begin(tmp_path: Path) -> None:
    bundle = lane_bundle("2.0.0")
    files = [dict(f) for f in bundle.header.fields["files"]]
    files[3]["name"] = files[2]["name"].upper()  # the same file on a case-insensitive disk
    answer = call(service(tmp_path / "updates"), begin(forged_header(bundle, files=files)))
    assert (answer.status, answer.reason) == (pb.STATUS_INVALID_ARGUMENT, "header"), answer


@pytest.mark.parametrize("field", ["header", "signature"])
def test_deeply_nested_json_in_a_header_or_signature_is_a_typed_refusal(tmp_path: Path, field: str) -> None:
    nested = b"[" * 60_000 + b"]" * 60_000
    header = nested if field == "header" else lane_bundle("2.0.0").header.raw
    answer = call(service(tmp_path / "updates"), begin(header, signature=nested if field == "signature" else b""))
    assert (answer.status, answer.reason) == (pb.STATUS_INVALID_ARGUMENT, "header"), answer


@pytest.mark.parametrize(
    "changes",
    [
        {"block_hashes": 7},
        {"selftest": [0.1]},
        {"input_shape": 3},
        {"files": [{"name": 5}]},
        {"precision": ["int8"]},
        {"task": 7},
    ],
)
def test_ill_typed_header_fields_are_refused_at_begin(tmp_path: Path, changes: dict[str, Any]) -> None:
    answer = call(service(tmp_path / "updates"), begin(forged_header(lane_bundle("2.0.0"), **changes)))
    assert (answer.status, answer.reason) == (pb.STATUS_INVALID_ARGUMENT, "header"), answer


# ---------------------------------------------------------------- finding 11: header identity = manifest identity


@pytest.mark.parametrize("identity", [{"name": "lane-v9"}, {"version": "9.0.0"}, {"task": "detect"}])
def test_a_model_header_whose_identity_differs_from_its_manifest_is_refused(
    tmp_path: Path, identity: dict[str, str]
) -> None:
    bundle = relabelled(lane_bundle("2.0.0"), **identity)
    updates = service(tmp_path / "updates")
    answer = push(updates, bundle)
    assert (answer.status, answer.reason) == (pb.STATUS_INVALID_ARGUMENT, "identity"), answer
    assert "lane-v3@2.0.0" in answer.message
    assert slot_versions(updates, bundle.header.task) == EMPTY


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return wheel_from_source(REPO / "firmware" / "seedcam_firmware", tmp_path_factory.mktemp("wheel"), "0.2.0")


@pytest.mark.parametrize(("name", "version"), [("not-seedcam", "0.2.0"), ("seedcam-firmware", "0.9.0")])
def test_a_firmware_header_whose_identity_differs_from_its_wheel_is_refused(
    tmp_path: Path, wheel: Path, monkeypatch: pytest.MonkeyPatch, name: str, version: str
) -> None:
    monkeypatch.setenv(SUPERVISED_ENV, "1")
    bundle = build_bundle([(wheel.name, "wheel", wheel.read_bytes())], kind="firmware", name=name, version=version)
    updates = service(tmp_path / "updates")
    answer = push(updates, bundle)
    assert (answer.status, answer.reason) == (pb.STATUS_INVALID_ARGUMENT, "identity"), answer
    assert "seedcam-firmware@0.2.0" in answer.message
    assert slot_versions(updates, "firmware") == EMPTY

"""Update bundles: format round trip, per-block hashes, ed25519 signatures, the ``bundle`` commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import MODELS

from seedcam.bundle import (
    MAGIC,
    SignatureError,
    read_bundle,
    read_header,
    sign_bundle,
    verify_signature,
    write_bundle,
)
from seedcam.errors import BundleError
from seedcam_tools.bundles import build_model_bundle, generate_keypair, load_public_key
from seedcam_tools.cli import main as tools_main

LANE = MODELS / "lane"


@pytest.fixture(scope="module")
def lane_bundle():  # type: ignore[no-untyped-def]
    return build_model_bundle(LANE, version="1.0.1", security_counter=3)


def test_model_bundle_round_trips_and_describes_its_payload(lane_bundle, tmp_path: Path) -> None:
    path = write_bundle(lane_bundle, tmp_path / "lane.scb")
    assert path.read_bytes()[:8] == MAGIC
    again = read_bundle(path)
    h = again.header
    assert (h.kind, h.name, h.version, h.task, h.security_counter) == ("model", "lane-v3", "1.0.1", "lane", 3)
    assert [f.role for f in h.files] == ["manifest", "model", "golden_input", "golden_output"]
    assert again.file_bytes(h.file("model")) == (LANE / "lane_int8.tflite").read_bytes()
    assert len(h.block_hashes) == -(-h.size // h.block_size)
    inner = json.loads(again.file_bytes(h.file("manifest")))
    assert inner["files"] == {
        "int8": {"file": "model.tflite", "sha256": h.file("model").sha256, "golden_output": "golden_output.npz"}
    }
    header, signature, offset = read_header(path)
    assert header.raw == h.raw and signature is None and offset == path.stat().st_size - h.size


def test_a_flipped_payload_byte_names_its_block(lane_bundle, tmp_path: Path) -> None:
    data = bytearray(lane_bundle.to_bytes())
    data[-100_000] ^= 0x10
    (tmp_path / "bad.scb").write_bytes(bytes(data))
    with pytest.raises(BundleError, match=r"tampered bundle: block \d+"):
        read_bundle(tmp_path / "bad.scb")


def test_truncated_file_is_refused(lane_bundle, tmp_path: Path) -> None:
    (tmp_path / "cut.scb").write_bytes(lane_bundle.to_bytes()[:-1000])
    with pytest.raises(BundleError, match="truncated"):
        read_bundle(tmp_path / "cut.scb")
    (tmp_path / "cut2.scb").write_bytes(lane_bundle.to_bytes()[:20])
    with pytest.raises(BundleError, match="truncated"):
        read_header(tmp_path / "cut2.scb")


def test_signature_verifies_only_with_the_right_key_and_an_untouched_header(lane_bundle) -> None:
    good, other = generate_keypair(), generate_keypair()
    signed = sign_bundle(lane_bundle, good.private)
    assert verify_signature(signed.header, signed.signature, [other.public, good.public]) == good.key_id
    with pytest.raises(SignatureError, match="^unsigned") as err:
        verify_signature(lane_bundle.header, None, [good.public])
    assert err.value.reason == "unsigned" and isinstance(err.value, BundleError)
    with pytest.raises(SignatureError, match="^unknown key") as err:
        verify_signature(signed.header, signed.signature, [other.public])
    assert err.value.reason == "unknown_key"
    forged = type(signed.header).parse(signed.header.raw.replace(b'"security_counter":3', b'"security_counter":9'))
    with pytest.raises(SignatureError, match="^bad signature") as err:
        verify_signature(forged, signed.signature, [good.public])
    assert err.value.reason == "bad_signature"


def test_bundle_commands_keygen_model_sign_verify_inspect(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    key = tmp_path / "release"
    assert tools_main(["bundle", "keygen", str(key)]) == 0
    assert (tmp_path / "release.key").stat().st_mode & 0o077 == 0
    out = tmp_path / "lane.scb"
    assert tools_main(["bundle", "model", str(LANE), "-o", str(out), "--counter", "4"]) == 0
    assert tools_main(["bundle", "verify", str(out), "--pubkey", str(key.with_suffix(".pub"))]) == 1  # unsigned
    assert tools_main(["bundle", "sign", str(out), "--key", str(key.with_suffix(".key"))]) == 0
    assert tools_main(["bundle", "verify", str(out), "--pubkey", str(key.with_suffix(".pub"))]) == 0
    capsys.readouterr()
    assert tools_main(["bundle", "inspect", str(out)]) == 0
    shown = json.loads(capsys.readouterr().out)
    public = load_public_key(key.with_suffix(".pub"))
    assert shown["security_counter"] == 4 and shown["signed_by"] == read_bundle(out).signature.key_id
    assert shown["signed_by"] == __import__("seedcam.bundle").bundle.key_id(public)


def test_sign_file_replaces_the_bundle_atomically(lane_bundle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from seedcam_tools.bundles import sign_file

    path = write_bundle(lane_bundle, tmp_path / "lane.scb")
    before = path.read_bytes()
    pair = generate_keypair()

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError):
        sign_file(path, pair.private)
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["lane.scb"]
    monkeypatch.undo()
    sign_file(path, pair.private)
    assert read_bundle(path).signature is not None and path.read_bytes() != before

"""``seedcam-tools catalog verify``: the index's signature, then every bundle, each bad one named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from catalog_helpers import LANE_VERSION, NEXT_LANE_VERSION, model_at_version, resign_index, tls_catalog_server
from helpers import MODELS

from seedcam.catalog import INDEX_FILE, load_catalog
from seedcam_tools.bundles import KeyPair, generate_keypair
from seedcam_tools.catalog_build import build_catalog
from seedcam_tools.cli import main as tools_main


@pytest.fixture(scope="module")
def key() -> KeyPair:
    return generate_keypair()


@pytest.fixture
def site(tmp_path: Path, key: KeyPair) -> Path:
    """lane-v3 at its shipped and its next version, and road_scene-v1: three bundles."""
    build_catalog(MODELS, tmp_path / "site", key.private, only=["lane", "road_scene"])
    build_catalog(model_at_version(tmp_path / "next", "lane", NEXT_LANE_VERSION), tmp_path / "site", key.private)
    return tmp_path / "site"


def verify(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = tools_main(["catalog", "verify", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_sound_catalog_verifies_as_a_table_and_as_json(
    site: Path, key: KeyPair, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "release.pub").write_text(key.public.hex() + "\n")
    code, out, err = verify(capsys, str(site), "--trust", str(tmp_path / "release.pub"))
    assert (code, err) == (0, ""), err
    lines = out.splitlines()
    assert lines[0] == f"catalog {(site / INDEX_FILE).as_uri()}: 3 bundles, index signed by key {key.key_id}"
    assert [line.split()[0] for line in lines[2:-1]] == [
        f"lane-v3@{LANE_VERSION}",
        f"lane-v3@{NEXT_LANE_VERSION}",
        "road_scene-v1@1.0.0",
    ]
    assert all(line.endswith("  ok") for line in lines[2:-1]) and lines[-1] == "3 of 3 bundles verified"

    code, out, _ = verify(capsys, site.as_uri(), "--trust", key.public.hex(), "--json")
    document = json.loads(out)
    assert code == 0 and document["ok"] and document["key_id"] == key.key_id
    entries = load_catalog(str(site), [key.public]).entries
    assert [(e["id"], e["size"], e["ok"], e["error"]) for e in document["entries"]] == [
        (e.id, e.size, True, "") for e in entries
    ]


def test_bad_bundles_are_named_and_the_good_ones_still_checked(
    site: Path, key: KeyPair, capsys: pytest.CaptureFixture[str]
) -> None:
    cat = load_catalog(str(site), [key.public])
    tampered = site / cat.find("lane-v3", LANE_VERSION).file
    data = bytearray(tampered.read_bytes())
    data[-100] ^= 0x01
    tampered.write_bytes(bytes(data))
    (site / cat.find("road_scene-v1").file).unlink()

    code, out, err = verify(capsys, str(site), "--trust", key.public.hex())
    assert code == 1
    assert (
        err == f"seedcam-tools: error: 2 of 3 bundles failed: lane-v3@{LANE_VERSION} int8, road_scene-v1@1.0.0 int8\n"
    )
    rows = {line.split()[0]: line for line in out.splitlines()[2:-1]}
    assert (
        "sha256" in rows[f"lane-v3@{LANE_VERSION}"] and "differs from the catalog's" in rows[f"lane-v3@{LANE_VERSION}"]
    )
    assert rows[f"lane-v3@{NEXT_LANE_VERSION}"].endswith("  ok")  # checked although another failed
    assert "bundle road_scene-v1@1.0.0 not found: file://" in rows["road_scene-v1@1.0.0"]
    assert out.splitlines()[-1] == "1 of 3 bundles verified"

    code, out, _ = verify(capsys, str(site), "--trust", key.public.hex(), "--json")
    document = json.loads(out)
    assert code == 1 and not document["ok"]
    assert [e["id"] for e in document["entries"] if not e["ok"]] == [f"lane-v3@{LANE_VERSION}", "road_scene-v1@1.0.0"]

    resign_index(site, key, {"sha256": "ab" * 32}, entry="road_scene-v1")  # signed, but lists a wrong hash
    (site / cat.find("road_scene-v1").file).write_bytes(b"x" * cat.find("road_scene-v1").size)
    code, out, err = verify(capsys, str(site), "--trust", key.public.hex())
    assert code == 1 and "road_scene-v1@1.0.0 int8" in err and "differs from the catalog's" in out


def test_an_index_that_does_not_verify_stops_the_check_with_one_line(
    site: Path, key: KeyPair, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stranger = generate_keypair()
    code, out, err = verify(capsys, str(site), "--trust", stranger.public.hex())
    assert (code, out) == (1, "") and f"signed by key {key.key_id}" in err and err.count("\n") == 1, err

    monkeypatch.delenv("SEEDCAM_CATALOG_KEYS", raising=False)
    code, _, err = verify(capsys, str(site))
    assert code == 1 and "catalog verify needs --trust KEY" in err

    index = site / INDEX_FILE
    index.write_bytes(index.read_bytes().replace(b'"lane"', b'"detect"', 1))  # altered after signing
    monkeypatch.setenv("SEEDCAM_CATALOG_KEYS", key.public.hex())
    code, out, err = verify(capsys, str(site))
    assert (code, out) == (1, "") and "altered after it was signed" in err and err.count("\n") == 1, err


def test_verify_over_https(
    site: Path, key: KeyPair, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "certs").mkdir()
    with tls_catalog_server(site, tmp_path / "certs") as (url, ca_pem):
        monkeypatch.setenv("SSL_CERT_FILE", str(ca_pem))
        code, out, err = verify(capsys, url, "--trust", key.public.hex(), "--json")
    document = json.loads(out)
    assert (code, err) == (0, "") and document["catalog"] == f"{url}{INDEX_FILE}"
    assert [e["url"] for e in document["entries"]][0].startswith(f"{url}bundles/")

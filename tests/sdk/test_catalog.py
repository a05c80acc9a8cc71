"""The model catalog without a sensor: building, reading, every refusal, and https with a CA made here."""

from __future__ import annotations

import hashlib
import io
import json
import re
from pathlib import Path

import pytest
from catalog_helpers import (
    DETECT_VERSION,
    LANE_VERSION,
    NEXT_LANE_VERSION,
    OCR_VERSION,
    model_at_version,
    resign_index,
    tls_catalog_server,
)
from helpers import MODELS

from seedcam import catalog
from seedcam.catalog import INDEX_FILE, SIGNATURE_SUFFIX, CatalogError
from seedcam.cli import main as seedcam_main
from seedcam_tools.bundles import KeyPair, generate_keypair
from seedcam_tools.catalog_build import build_catalog
from seedcam_tools.cli import main as tools_main


@pytest.fixture(scope="module")
def key() -> KeyPair:
    return generate_keypair()


@pytest.fixture
def lane_catalog(tmp_path: Path, key: KeyPair) -> Path:
    build_catalog(MODELS, tmp_path / "cat", key.private, only=["lane"])
    return tmp_path / "cat"


def test_build_lists_each_model_with_its_hash_and_headline_metrics_and_grows_by_version(
    tmp_path: Path, key: KeyPair
) -> None:
    (tmp_path / "release.key").write_text(key.private.hex() + "\n")
    out = tmp_path / "cat"
    code = tools_main(
        ["catalog", "build", "--models", str(MODELS), "--out", str(out), "--key", str(tmp_path / "release.key")]
    )
    assert code == 0
    cat = catalog.load_catalog(str(out), [key.public])
    assert cat.key_id == key.key_id
    assert cat.names() == ("detect-v5", "lane-v3", "ocr-v4", "road_scene-v1")
    lane = cat.find("lane-v3")
    data = (out / lane.file).read_bytes()
    assert (lane.task, lane.version, lane.precision, lane.key_id) == ("lane", LANE_VERSION, "int8", key.key_id)
    assert (lane.size, lane.sha256) == (len(data), hashlib.sha256(data).hexdigest())
    shipped = json.loads((MODELS / "lane" / "metrics.json").read_text())
    assert lane.metrics["offset_mae_m"] == pytest.approx(shipped["heldout"]["int8"]["offset_mae_m"], rel=1e-5)
    assert lane.metrics["other_world.offset_mae_m"] == pytest.approx(
        shipped["worlds"]["other"]["int8"]["offset_mae_m"], rel=1e-5
    )
    assert cat.find("detect-v5").metrics["map50"] > 0.9

    build_catalog(model_at_version(tmp_path / "next", "lane", NEXT_LANE_VERSION), out, key.private)  # a later release
    grown = catalog.load_catalog(str(out), [key.public])
    assert [e.version for e in grown.versions("lane-v3")] == [LANE_VERSION, NEXT_LANE_VERSION]
    assert grown.find("lane-v3").version == NEXT_LANE_VERSION and grown.find("lane-v3", LANE_VERSION) == lane
    assert len(grown.entries) == 5
    with pytest.raises(
        CatalogError,
        match=rf"no version 9\.9 of lane-v3 \(it has {re.escape(LANE_VERSION)}, {re.escape(NEXT_LANE_VERSION)}\)",
    ):
        grown.find("lane-v3", "9.9")
    with pytest.raises(
        CatalogError,
        match=rf"no model 'lane' .* it has: detect-v5 \({re.escape(DETECT_VERSION)}\), "
        rf"lane-v3 \({re.escape(LANE_VERSION)}, {re.escape(NEXT_LANE_VERSION)}\)",
    ):
        grown.find("lane")

    out_text = io.StringIO()
    assert seedcam_main(["models", "available", "--catalog", out.as_uri(), "--trust", key.public.hex()], out_text) == 0
    lines = out_text.getvalue().splitlines()
    assert lines[0].endswith(f"5 bundles, signed by key {key.key_id}")
    assert [line.split()[0] for line in lines[1:]] == [
        f"detect-v5@{DETECT_VERSION}",
        f"lane-v3@{NEXT_LANE_VERSION}",
        f"ocr-v4@{OCR_VERSION}",
        "road_scene-v1@1.0.0",
    ]
    out_json = io.StringIO()
    assert (
        seedcam_main(
            ["models", "available", "--catalog", str(out), "--trust", key.public.hex(), "--json", "--all"], out_json
        )
        == 0
    )
    rows = [json.loads(line) for line in out_json.getvalue().splitlines()]
    assert [r["id"] for r in rows if r["name"] == "lane-v3"] == [
        f"lane-v3@{LANE_VERSION}",
        f"lane-v3@{NEXT_LANE_VERSION}",
    ]


def test_a_rebuild_keeps_an_earlier_entry_only_when_its_bundle_passes_every_check(
    lane_catalog: Path, key: KeyPair, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    entry = catalog.load_catalog(str(lane_catalog), [key.public]).find("lane-v3")
    stranger = generate_keypair()
    build_catalog(MODELS, tmp_path / "other", stranger.private, only=["lane"])
    foreign = (tmp_path / "other" / entry.file).read_bytes()  # the same model, signed by another key
    (lane_catalog / entry.file).write_bytes(foreign)
    listed = {"sha256": hashlib.sha256(foreign).hexdigest(), "size": len(foreign)}
    resign_index(lane_catalog, key, listed, entry="lane-v3")  # the index lists its size and sha256, signed
    with caplog.at_level("WARNING", logger="seedcam_tools.catalog_build"):
        rebuilt = build_catalog(MODELS, lane_catalog, key.private, only=["road_scene"])
    assert rebuilt.names() == ("road_scene-v1",)
    assert (
        f"dropping lane-v3@{LANE_VERSION} from the catalog: "
        f"bundle lane-v3@{LANE_VERSION} is signed by key {stranger.key_id}" in caplog.text
    )

    build_catalog(MODELS, lane_catalog, key.private, only=["lane"])
    resign_index(lane_catalog, key, {"task": "detect"}, entry="lane-v3")  # size and sha256 right, the task not
    caplog.clear()
    with caplog.at_level("WARNING", logger="seedcam_tools.catalog_build"):
        rebuilt = build_catalog(MODELS, lane_catalog, key.private, only=["road_scene"])
    assert rebuilt.names() == ("road_scene-v1",) and "for task lane, not what the catalog lists" in caplog.text


def test_the_default_catalog_and_keys_come_from_the_environment_then_the_config_file(
    lane_catalog: Path,
    key: KeyPair,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / "seedcam.toml"
    config.write_text(f'catalog = "{lane_catalog.as_uri()}"\ncatalog_keys = ["{key.public.hex()}"]\n')
    monkeypatch.setenv("SEEDCAM_CONFIG", str(config))
    monkeypatch.delenv(catalog.CATALOG_ENV, raising=False)
    monkeypatch.delenv(catalog.KEYS_ENV, raising=False)
    out = io.StringIO()
    assert seedcam_main(["models", "available"], out) == 0
    assert f"lane-v3@{LANE_VERSION}" in out.getvalue()
    stranger = generate_keypair()
    (tmp_path / "stranger.pub").write_text(stranger.public.hex() + "\n")
    monkeypatch.setenv(catalog.KEYS_ENV, str(tmp_path / "stranger.pub"))  # the environment wins over the file
    assert seedcam_main(["models", "available"], io.StringIO()) == 1
    assert f"signed by key {key.key_id}, which is not trusted (trusted: {stranger.key_id})" in capsys.readouterr().err
    monkeypatch.setenv(catalog.KEYS_ENV, f" {tmp_path / 'stranger.pub'},\t{key.public.hex()} ,")  # commas or spaces
    assert seedcam_main(["models", "available"], io.StringIO()) == 0
    assert catalog.split_keys(" a, b\tc,,") == ["a", "b", "c"] and catalog.split_keys(" ,") == []
    monkeypatch.setenv(catalog.CATALOG_ENV, str(tmp_path / "nowhere"))
    assert seedcam_main(["models", "available", "--trust", key.public.hex()], io.StringIO()) == 1
    assert "catalog.json not found" in capsys.readouterr().err
    config.write_text("catalog_keys = 3\n")
    assert seedcam_main(["models", "available"], io.StringIO()) == 1
    assert "catalog_keys must be a list of strings" in capsys.readouterr().err


def test_an_altered_index_an_unknown_key_and_a_missing_signature_are_refused(lane_catalog: Path, key: KeyPair) -> None:
    index = lane_catalog / INDEX_FILE
    original = index.read_bytes()
    index.write_bytes(original.replace(f'"{LANE_VERSION}"'.encode(), b'"0.0.1"'))
    with pytest.raises(CatalogError, match=f"does not verify with key {key.key_id}: the index was altered"):
        catalog.load_catalog(str(lane_catalog), [key.public])
    index.write_bytes(original)
    stranger = generate_keypair()
    with pytest.raises(CatalogError, match=f"signed by key {key.key_id}, which is not trusted"):
        catalog.load_catalog(str(lane_catalog), [stranger.public])
    with pytest.raises(CatalogError, match="no trusted catalog key"):
        catalog.load_catalog(str(lane_catalog), [])
    (lane_catalog / (INDEX_FILE + SIGNATURE_SUFFIX)).unlink()
    with pytest.raises(CatalogError, match=r"catalog\.json\.sig not found"):
        catalog.load_catalog(str(lane_catalog), [key.public])


def test_a_signed_index_with_a_malformed_entry_names_it(lane_catalog: Path, key: KeyPair) -> None:
    for edit, message in (
        ({"sha256": "xyz"}, r"'sha256' is not valid"),
        ({"size": True}, r"'size' must be a whole number"),
        ({"size": catalog.MAX_BUNDLE_BYTES + 1}, r"'size' must be a whole number"),
        ({"metrics": {"map50": "high"}}, r"metric 'map50' must be a finite number"),
        ({"name": "../x"}, r"'name' is not valid"),
    ):
        resign_index(lane_catalog, key, edit, entry="lane-v3")
        with pytest.raises(CatalogError, match=message):
            catalog.load_catalog(str(lane_catalog), [key.public])
        build_catalog(MODELS, lane_catalog, key.private, only=["lane"])  # a fresh index for the next case


def test_a_bundle_that_differs_from_its_entry_is_refused_by_size_sha256_identity_or_signature(
    lane_catalog: Path, key: KeyPair, tmp_path: Path
) -> None:
    cat = catalog.load_catalog(str(lane_catalog), [key.public])
    entry = cat.find("lane-v3")
    good = catalog.fetch_bundle(cat, entry)
    verified = catalog.verify_entry_bytes(entry, good, [key.public])
    assert verified.entry == entry and verified.bundle.to_bytes() == good  # parsed once, pushed as it is
    assert catalog.fetch_verified(cat, entry).bundle.to_bytes() == good
    other = catalog.VerifiedBundle(catalog.CatalogEntry(**{**vars(entry), "version": "9.9.9"}), verified.bundle)
    with pytest.raises(ValueError, match=rf"verified as lane-v3@9\.9\.9, not as lane-v3@{re.escape(LANE_VERSION)}"):
        catalog.install(None, cat, "lane-v3", data=other)  # refused before the sensor is used
    flipped = bytearray(good)
    flipped[-10] ^= 0xFF
    with pytest.raises(CatalogError, match=r"sha256 .* differs from the catalog's .*nothing was sent"):
        catalog.verify_entry_bytes(entry, bytes(flipped), [key.public])
    with pytest.raises(CatalogError, match=r"is 10 bytes, the catalog says"):
        catalog.verify_entry_bytes(entry, good[:10], [key.public])
    # the index re-signed to match an altered bundle: the bundle's own payload hashes still refuse it
    tampered = {"sha256": hashlib.sha256(bytes(flipped)).hexdigest()}
    with pytest.raises(CatalogError, match=r"tampered bundle"):
        catalog.verify_entry_bytes(catalog.CatalogEntry(**{**vars(entry), **tampered}), bytes(flipped), [key.public])
    # a bundle listed under another name, or signed by a key the host does not trust
    renamed = catalog.CatalogEntry(**{**vars(entry), "name": "lane-v4"})
    with pytest.raises(
        CatalogError,
        match=rf"the bundle is model lane-v3@{re.escape(LANE_VERSION)} for task lane, not what the catalog",
    ):
        catalog.verify_entry_bytes(renamed, good, [key.public])
    with pytest.raises(CatalogError, match=r"signed by key [0-9a-f]{16}, which is not trusted"):
        catalog.verify_entry_bytes(entry, good, [generate_keypair().public])
    # a server sending more than the entry states is cut off at size + 1 bytes
    (lane_catalog / entry.file).write_bytes(good + b"x" * 100)
    with pytest.raises(CatalogError, match=rf"larger than the {entry.size} bytes allowed"):
        catalog.fetch_bundle(cat, entry)


def test_urls_other_than_file_and_https_are_refused() -> None:
    with pytest.raises(CatalogError, match="plain http is not allowed"):
        catalog.load_catalog("http://127.0.0.1:9/", [b"\0" * 32])
    with pytest.raises(CatalogError, match="unsupported catalog URL scheme 'ftp'"):
        catalog.load_catalog("ftp://example.com/", [b"\0" * 32])
    cat = catalog.Catalog((), "0" * 16, "https://example.com/cat/catalog.json")
    entry = catalog.CatalogEntry("m", "lane", "1", "0" * 64, 1, "0" * 16, "0.1.0", file="file:///etc/passwd")
    with pytest.raises(CatalogError, match="may not name a local file"):
        cat.bundle_url(entry)
    assert (
        cat.bundle_url(catalog.CatalogEntry(**{**vars(entry), "file": "b/m.scb"})) == "https://example.com/cat/b/m.scb"
    )
    assert catalog.parse_model_ref("lane-v3@3.0.0") == ("lane-v3", "3.0.0")
    with pytest.raises(ValueError, match="NAME@VERSION"):
        catalog.parse_model_ref("lane-v3@")


def test_https_catalog_with_a_ca_made_in_the_test(
    lane_catalog: Path, key: KeyPair, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    certs = tmp_path / "certs"
    certs.mkdir()
    with tls_catalog_server(lane_catalog, certs) as (url, ca_pem):
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        with pytest.raises(CatalogError, match="TLS certificate not trusted"):
            catalog.load_catalog(url, [key.public], timeout=10)
        monkeypatch.setenv("SSL_CERT_FILE", str(ca_pem))
        cat = catalog.load_catalog(url, [key.public], timeout=10)
        entry = cat.find("lane-v3")
        assert cat.bundle_url(entry) == f"{url}{entry.file}"
        seen: list[int] = []
        data = catalog.fetch_bundle(cat, entry, progress=seen.append)
        assert hashlib.sha256(data).hexdigest() == entry.sha256 and seen[-1] == entry.size
        with pytest.raises(CatalogError, match=r"HTTP 404"):
            catalog.load_catalog(url + "missing/", [key.public], timeout=10)

"""Installing from a model catalog onto the emulated board (the real firmware on a pty, with signing keys).

A catalog is built from the shipped models with a key the board trusts; ``seedcam models install``
puts a model from it on the board. Every bad catalog or bundle is refused before any transfer:
the board's transfer journal (written at the first ``TransferBegin`` it accepts) never appears
and its slots stay empty.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from catalog_helpers import DETECT_VERSION, LANE_VERSION, NEXT_LANE_VERSION, model_at_version, resign_index
from helpers import MODELS

import seedcam
from seedcam import _update_push, catalog, updates
from seedcam.catalog import INDEX_FILE
from seedcam.cli import main as seedcam_main
from seedcam_tools.bundles import KeyPair, generate_keypair
from seedcam_tools.catalog_build import build_catalog

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def key() -> KeyPair:
    return generate_keypair()


def start(firmware_factory, tmp_path: Path, key: KeyPair):  # noqa: ANN001, ANN201
    storage = tmp_path / "storage"
    return firmware_factory(
        "--log-level",
        "info",  # the board logs each TransferBegin it takes ("receiving ...") or refuses ("transfer: ...")
        "--fps",
        "10",
        "--tasks",
        "lane",
        "--set",
        f"updates.dir={storage}",
        "--set",
        f"updates.public_keys={key.public.hex()}",
    )


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return seedcam_main(list(argv), out), out.getvalue()


def counted(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[int]:
    """Count the calls of ``module.name`` (one item per call)."""
    calls: list[int] = []
    function = getattr(module, name)

    def wrapper(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return function(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)
    return calls


def test_install_from_a_catalog_of_the_shipped_models_then_an_older_version(
    firmware_factory, tmp_path: Path, key: KeyPair, monkeypatch: pytest.MonkeyPatch
) -> None:
    cat = tmp_path / "catalog"
    build_catalog(MODELS, cat, key.private)
    build_catalog(model_at_version(tmp_path / "next", "lane", NEXT_LANE_VERSION), cat, key.private)
    fw = start(firmware_factory, tmp_path, key)
    trust = ("--catalog", cat.as_uri(), "--trust", key.public.hex())

    code, text = run("models", "available", *trust, "--json")
    assert code == 0
    assert {json.loads(line)["id"] for line in text.splitlines()} >= {
        f"lane-v3@{NEXT_LANE_VERSION}",
        f"detect-v5@{DETECT_VERSION}",
    }

    parsed = counted(monkeypatch, catalog, "bundle_from_bytes")
    verified = counted(monkeypatch, catalog, "verify_signature")
    read = counted(monkeypatch, _update_push, "read_bundle")
    code, text = run("--port", fw.link, "models", "install", "lane-v3", *trust, "-q")
    assert code == 0, text
    assert (len(parsed), len(verified), len(read)) == (1, 1, 0)  # the bundle checked and parsed once, then pushed
    assert (
        text.startswith(f"lane-v3@{NEXT_LANE_VERSION} from ")
        and "in lane slot a: signature and sha256 verified" in text
    )
    assert (
        f"receiving lane-v3@{NEXT_LANE_VERSION} for lane" in fw.log_path.read_text()
    )  # what the board logs at a TransferBegin
    code, text = run("--port", fw.link, "models", "list", "--json")
    (lane,) = [m for m in map(json.loads, text.splitlines()) if m["task"] == "lane"]
    assert (lane["id"], lane["version"], lane["active"]) == ("lane-v3-int8", NEXT_LANE_VERSION, True)

    with seedcam.open(fw.link, timeout=10) as sensor:  # the SDK call, with progress
        loaded = catalog.load_catalog(cat.as_uri(), [key.public])
        seen: list[tuple[int, int]] = []
        done = catalog.install(
            sensor, loaded, "lane-v3", LANE_VERSION, progress=lambda sent, total: seen.append((sent, total))
        )
        assert done.activated and not done.already_installed
        assert seen and seen[-1] == (done.payload_size, done.payload_size)
        (group,) = [g for g in updates.list_slots(sensor) if g.name == "lane"]
        assert [(s.slot, s.version, s.active) for s in group.slots] == [
            ("a", NEXT_LANE_VERSION, False),
            ("b", LANE_VERSION, True),
        ]
    code, text = run("--port", fw.link, "models", "install", f"lane-v3@{LANE_VERSION}", *trust, "-q")
    assert (code, text) == (0, f"lane-v3@{LANE_VERSION} is already installed in lane slot b; nothing was sent\n")


def test_every_bad_catalog_or_bundle_is_refused_before_any_transfer(
    firmware_factory, tmp_path: Path, key: KeyPair, capsys: pytest.CaptureFixture[str]
) -> None:
    fw = start(firmware_factory, tmp_path, key)
    cat = tmp_path / "catalog"

    def fresh() -> catalog.CatalogEntry:
        build_catalog(MODELS, cat, key.private, only=["lane"])
        return catalog.load_catalog(str(cat), [key.public]).find("lane-v3")

    def refused(expected: str, *extra: str) -> None:
        capsys.readouterr()
        code, _ = run("--port", fw.link, "models", "install", "lane-v3", "--catalog", str(cat), *extra, "-q")
        err = capsys.readouterr().err
        assert code == 1 and expected in err and err.count("\n") == 1, err

    entry = fresh()
    index = cat / INDEX_FILE
    index.write_bytes(index.read_bytes().replace(entry.sha256.encode(), b"0" * 64))  # tampered, not re-signed
    refused("the index was altered after it was signed", "--trust", key.public.hex())

    entry = fresh()
    bundle = cat / entry.file
    data = bytearray(bundle.read_bytes())
    data[-100] ^= 0x01
    bundle.write_bytes(bytes(data))  # a tampered bundle under an intact, signed index
    refused("differs from the catalog's", "--trust", key.public.hex())

    fresh()
    resign_index(cat, key, {"sha256": "ab" * 32}, entry="lane-v3")  # a signed index with a wrong sha256
    refused("differs from the catalog's", "--trust", key.public.hex())

    stranger = generate_keypair()
    build_catalog(MODELS, cat, stranger.private, only=["lane"])  # signed by a key nobody trusts
    refused(f"is signed by key {stranger.key_id}, which is not trusted", "--trust", key.public.hex())
    fresh()
    resign_index(cat, stranger, {}, entry="lane-v3", top={"key_id": stranger.key_id})  # index ok, its bundle not
    refused(
        f"bundle lane-v3@{LANE_VERSION} is signed by key {key.key_id}, which is not trusted",
        "--trust",
        stranger.public.hex(),
    )

    # the board saw no TransferBegin: it logged none (neither accepted nor refused), wrote no journal, filled no slot
    log = fw.log_path.read_text()
    assert "receiving " not in log and "transfer: " not in log, log
    assert not (tmp_path / "storage" / "staging" / "journal.json").exists()
    with seedcam.open(fw.link, timeout=10) as sensor:
        assert all(s.state == "empty" for g in updates.list_slots(sensor) for s in g.slots)
        (lane,) = [m for m in sensor.models() if m.task == "lane"]
        assert lane.version == json.loads((MODELS / "lane" / "manifest.json").read_text())["version"]

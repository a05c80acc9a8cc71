"""What a host may change over the link (issue 14, findings 1, 3 and the config half of 9).

Every key declares its host policy; a host's attempt at a local-only key, or at an allow-list key
outside its folder, is a typed refusal naming the key; ``config_get`` shows no local path.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import MODELS, REPO

import seedcam
from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import RpcError
from seedcam_firmware.config import KEYS, config_from_dict
from seedcam_firmware.daemon import Daemon
from seedcam_firmware.rpc import Dispatcher

KEY = "ab" * 32
WAIT_S = 5.0
#: Keys that load code, name a file or a device: the device's own config file sets them, never a host.
MUST_BE_LOCAL = (
    "runtime.delegate",
    "camera.source",
    "camera.device",
    "camera.path",
    "camera.scene",
    "models.dir",
    "link.url",
    "device.serial_number",
    "updates.dir",
    "updates.public_keys",
)


class Board:
    def __init__(self, tmp_path: Path, *, keys: bool) -> None:
        self.url = f"pair://host-policy-{uuid.uuid4().hex[:12]}"
        config: dict[str, dict[str, Any]] = {
            "link": {"url": self.url},
            "camera": {"source": "synthetic", "width": 160, "height": 120, "fps": 30.0},
            "tasks": {"enabled": []},
            "models": {"dir": str(MODELS)},
            "updates": {"dir": str(tmp_path / "updates"), "public_keys": [KEY] if keys else []},
        }
        self.daemon = Daemon(config_from_dict(config))
        self.daemon.start()
        self.sensor = seedcam.open(self.url, timeout=WAIT_S, reconnect=False)

    def close(self) -> None:
        self.sensor.close()
        self.daemon.stop()


@pytest.fixture(params=[False, True], ids=["no-keys", "keys"])
def board(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Board]:
    b = Board(tmp_path, keys=request.param)
    yield b
    b.close()


def test_every_key_declares_a_host_policy_and_the_security_doc_lists_the_local_only_ones() -> None:
    undeclared = [key for key, spec in KEYS.items() if not spec.host_declared]
    assert not undeclared, f"keys without a declared host policy: {undeclared}"
    doc = (REPO / "docs" / "security.md").read_text(encoding="utf-8")
    for key, spec in KEYS.items():
        if spec.host == "local":
            assert f"`{key}`" in doc, f"docs/security.md does not list the local-only key {key}"
    for key in MUST_BE_LOCAL:
        assert KEYS[key].host == "local", key


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("runtime.delegate", "/tmp/staging/payload.part"),  # finding 1: native code from the host
        ("camera.source", "folder"),  # finding 3: image files from anywhere
        ("camera.path", "/etc"),
        ("camera.scene", "/etc/passwd"),  # finding 2
        ("camera.device", "/dev/video99"),
        ("models.dir", "/tmp"),
        ("link.url", "tcp-listen://0.0.0.0:5760"),
        ("device.serial_number", "SC0000000000"),
    ],
)
def test_a_host_cannot_set_a_local_only_key_with_or_without_keys(board: Board, key: str, value: object) -> None:
    before = board.daemon.config
    with pytest.raises(RpcError) as err:
        board.sensor.config_set(key, value)
    assert err.value.status == "FAILED_PRECONDITION"
    assert key in str(err.value) and "config file" in str(err.value)
    assert board.daemon.config == before


def test_a_section_write_cannot_smuggle_a_local_key(board: Board) -> None:
    with pytest.raises(RpcError) as err:
        board.sensor.config_set("camera", {"fps": 10, "source": "folder", "path": "/etc"})
    assert err.value.status == "FAILED_PRECONDITION" and "camera.source" in str(err.value)
    assert board.daemon.config.camera.source == "synthetic"


def test_a_model_path_outside_the_models_folder_and_slots_is_refused_with_or_without_keys(board: Board) -> None:
    for value in ("/tmp/evil/manifest.json", "../../etc/manifest.json"):
        with pytest.raises(RpcError) as err:
            board.sensor.config_set("models.lane", value)
        assert err.value.status == "FAILED_PRECONDITION" and "models.lane" in str(err.value)
    assert board.sensor.config_set("models.lane", "lane/manifest.json").value == "lane/manifest.json"


def test_config_get_reveals_no_local_path(board: Board, tmp_path: Path) -> None:
    updates = str(tmp_path / "updates")
    assert board.sensor.config_get("updates.dir") != updates
    whole = json.dumps(board.sensor.config_get(""))
    assert updates not in whole and str(MODELS) not in whole
    assert board.sensor.config_get("updates")["public_keys"] == list(board.daemon.config.updates.public_keys)


def _raw_set(board: Board, key: str, value_json: str) -> pb.Response:
    request = pb.Request(config_set=pb.ConfigSetRequest(key=key, value_json=value_json))
    return Dispatcher(board.daemon)(request)


@pytest.mark.parametrize("keys", [False])
def test_deeply_nested_json_is_a_typed_refusal(tmp_path: Path, keys: bool) -> None:
    b = Board(tmp_path, keys=keys)
    try:
        response = _raw_set(b, "detect.score_threshold", "[" * 100_000 + "]" * 100_000)
        assert response.status == pb.STATUS_INVALID_ARGUMENT, response.message
        assert "detect.score_threshold" in response.message
    finally:
        b.close()


@pytest.mark.parametrize(
    "pattern",
    ["(" * 5000 + ")" * 5000, "(" * 100 + "a" + ")" * 100, "a{1000000000}", "x" * 5000, "(unclosed"],
    ids=["nested-long", "nested", "huge-repeat", "long", "bad"],
)
def test_a_pathological_ocr_pattern_is_a_typed_refusal(tmp_path: Path, pattern: str) -> None:
    b = Board(tmp_path, keys=False)
    try:
        response = _raw_set(b, "ocr.pattern", json.dumps(pattern))
        assert response.status == pb.STATUS_INVALID_ARGUMENT, response.message
        assert "ocr.pattern" in response.message and len(response.message) < 400
        assert b.daemon.config.ocr.pattern == ""
        assert re.compile(b.daemon.config.ocr.pattern)
    finally:
        b.close()


def test_a_host_reset_or_section_write_never_removes_local_keys_from_the_persisted_file(tmp_path: Path) -> None:
    path = tmp_path / "fw.toml"
    path.write_text('[device]\nserial_number = "SC1"\nname = "kitchen"\n[updates]\ntarget = "custom"\n')
    url = f"pair://host-policy-{uuid.uuid4().hex[:12]}"
    config = config_from_dict(
        {
            "link": {"url": url},
            "camera": {"width": 160, "height": 120},
            "tasks": {"enabled": []},
            "device": {"serial_number": "SC1", "name": "kitchen"},
            "updates": {"target": "custom"},
        }
    )
    daemon = Daemon(config, config_path=path)
    daemon.start()
    try:
        with seedcam.open(url, timeout=WAIT_S, reconnect=False) as sensor:
            sensor.config_set("device", {"name": "hall"})
            sensor.config_reset("device")
            sensor.config_reset("")  # a host's reset: the device's own keys stay in its file
    finally:
        daemon.stop()
    text = path.read_text()
    assert 'serial_number = "SC1"' in text and 'target = "custom"' in text
    assert "kitchen" not in text and "hall" not in text

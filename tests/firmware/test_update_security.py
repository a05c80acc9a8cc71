"""Update security: a host cannot turn off signature checks or point a task at an unchecked model."""

from __future__ import annotations

import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import MODELS

import seedcam
from seedcam.errors import RpcError
from seedcam_firmware.config import check_host_change, config_from_dict, config_set, load_config
from seedcam_firmware.daemon import Daemon
from seedcam_firmware.errors import ConfigError, ReadOnlyConfigKey

KEY = "ab" * 32
WAIT_S = 5.0


def test_a_public_key_that_is_not_64_hex_digits_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    path = tmp_path / "fw.toml"
    path.write_text(f'[updates]\npublic_keys = ["{KEY}", "xyz"]\n')
    with pytest.raises(ConfigError) as err:
        load_config(path, env={})
    assert "updates.public_keys" in str(err.value) and "'xyz'" in str(err.value) and str(path) in str(err.value)
    path.write_text(f'[updates]\npublic_keys = ["{KEY}"]\n')
    assert load_config(path, env={}).updates.public_keys == (KEY,)


def test_with_keys_provisioned_models_paths_stay_in_the_models_folder_or_the_slots(tmp_path: Path) -> None:
    models = tmp_path / "models"
    updates = tmp_path / "updates"
    signed = config_from_dict({"models": {"dir": str(models)}, "updates": {"dir": str(updates), "public_keys": [KEY]}})
    for value in (str(updates / "slots" / "lane" / "a" / "manifest.json"), "mine/manifest.json"):
        check_host_change(signed, config_set(signed, "models.lane", value))
    for key, value in (
        ("models.lane", "/tmp/evil/manifest.json"),
        ("models.lane", "../x/manifest.json"),
        ("models.dir", "/tmp"),
    ):
        with pytest.raises(ReadOnlyConfigKey, match=key.replace(".", r"\.")):
            check_host_change(signed, config_set(signed, key, value))
    unsigned = config_from_dict({"models": {"dir": str(models)}})
    check_host_change(unsigned, config_set(unsigned, "models.lane", "mine/manifest.json"))
    with pytest.raises(ReadOnlyConfigKey, match=r"models\.lane"):  # issue 14: without keys, too (allow-list)
        check_host_change(unsigned, config_set(unsigned, "models.lane", "/tmp/evil/manifest.json"))


class Board:
    def __init__(self, tmp_path: Path, config_path: Path | None = None, **sections: dict[str, Any]) -> None:
        self.url = f"pair://update-security-{uuid.uuid4().hex[:12]}"
        config: dict[str, dict[str, Any]] = {
            "link": {"url": self.url},
            "camera": {"source": "synthetic", "width": 160, "height": 120, "fps": 30.0},
            "tasks": {"enabled": []},
            "models": {"dir": str(MODELS)},
            "updates": {"dir": str(tmp_path / "updates"), "public_keys": [KEY]},
        }
        for section, table in sections.items():
            config.setdefault(section, {}).update(table)
        self.daemon = Daemon(config_from_dict(config), config_path=config_path)
        self.daemon.start()
        self.sensor = seedcam.open(self.url, timeout=WAIT_S, reconnect=False)

    def close(self) -> None:
        self.sensor.close()
        self.daemon.stop()


@pytest.fixture
def board(tmp_path: Path) -> Iterator[Board]:
    path = tmp_path / "fw.toml"
    path.write_text('[device]\nname = "kitchen"\n')
    b = Board(tmp_path, config_path=path)
    yield b
    b.close()


def test_the_updates_section_is_read_only_over_the_link_and_never_persisted(board: Board, tmp_path: Path) -> None:
    before = board.daemon.config
    for key, value in (
        ("updates.public_keys", []),
        ("updates.dir", ""),
        ("updates.target", "any"),
        ("updates", {"public_keys": []}),
    ):
        with pytest.raises(RpcError) as err:
            board.sensor.config_set(key, value)
        assert err.value.status == "FAILED_PRECONDITION" and "read-only" in str(err.value)
    with pytest.raises(RpcError) as err:
        board.sensor.config_reset("updates.public_keys")
    assert err.value.status == "FAILED_PRECONDITION"
    board.sensor.config_reset("")  # resetting everything keeps the device's [updates]
    assert board.daemon.config.updates == before.updates
    assert "updates" not in tomllib.loads((tmp_path / "fw.toml").read_text())


def test_with_keys_provisioned_a_task_cannot_be_pointed_at_a_manifest_outside_models_or_slots(
    board: Board, tmp_path: Path
) -> None:
    with pytest.raises(RpcError) as err:
        board.sensor.config_set("models.lane", str(tmp_path / "elsewhere" / "manifest.json"))
    assert err.value.status == "FAILED_PRECONDITION" and "models.lane" in str(err.value)
    assert board.sensor.config_get("models.lane") == "lane/manifest.json"
    inside = str(tmp_path / "updates" / "slots" / "lane" / "b" / "manifest.json")
    assert board.sensor.config_set("models.lane", inside).value == inside

"""Where the factory defaults are: the checkout's models and configs, or the copies inside an installed package."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
from helpers import MODELS, REPO

from seedcam_firmware import factory
from seedcam_firmware.config import DEFAULT_MODELS_DIR, FirmwareConfig, load_config


def _installed_copy(site: Path) -> ModuleType:
    """``factory.py`` loaded from ``site/seedcam_firmware/``, a package with no checkout around it."""
    package = site / "seedcam_firmware"
    package.mkdir(parents=True)
    shutil.copy(factory.__file__, package / "factory.py")
    spec = importlib.util.spec_from_file_location("installed_factory", package / "factory.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_in_a_checkout_the_defaults_are_the_repositorys_files() -> None:
    assert factory.checkout_root() == REPO
    assert factory.models_dir() == MODELS
    assert Path(DEFAULT_MODELS_DIR) == MODELS == Path(FirmwareConfig().models.dir)
    assert factory.factory_config() == REPO / "firmware" / "config" / "default.toml"
    assert factory.factory_config("board.toml").parent == REPO / "firmware" / "config"


def test_installed_the_defaults_are_the_packages_factory(tmp_path: Path) -> None:
    installed = _installed_copy(tmp_path / "site-packages")
    own = tmp_path / "site-packages" / "seedcam_firmware" / "_factory"
    (own / "models").mkdir(parents=True)
    (own / "config").mkdir()
    (own / "config" / "board.toml").write_text("[camera]\n")
    assert installed.checkout_root() is None
    assert installed.models_dir() == own / "models"
    assert installed.factory_config("board.toml") == own / "config" / "board.toml"


def test_a_slot_without_factory_models_uses_the_installed_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slot = _installed_copy(tmp_path / "slots" / "firmware" / "a")  # a development wheel: no _factory
    assert slot.models_dir() == tmp_path / "slots" / "firmware" / "a" / "seedcam_firmware" / "_factory" / "models"
    site = tmp_path / "site-packages"
    (site / "seedcam_firmware" / "_factory" / "models").mkdir(parents=True)
    monkeypatch.setattr(sys, "path", ["", str(tmp_path / "slots" / "firmware" / "a"), str(site)])
    assert slot.models_dir() == site / "seedcam_firmware" / "_factory" / "models"


def test_default_toml_works_from_any_folder(tmp_path: Path) -> None:
    """The shipped default.toml names no models folder, so its copy in the package (or anywhere) still finds them."""
    copy = tmp_path / "elsewhere" / "firmware.toml"
    copy.parent.mkdir()
    shutil.copy(factory.factory_config(), copy)
    assert Path(load_config(copy, env={}).models.dir) == MODELS


def test_board_toml_is_a_board_config() -> None:
    cfg = load_config(factory.factory_config("board.toml"), env={})
    assert (cfg.camera.source, cfg.link.url) == ("v4l2", "/dev/serial0")
    assert Path(cfg.updates.dir) == Path(factory.BOARD_STATE_DIR) / "updates"
    assert Path(cfg.models.dir) == MODELS  # not set: the default (the factory models when installed)
    assert cfg.tasks.enabled == ("lane", "detect", "ocr")


def test_factory_config_refuses_unknown_names_and_paths() -> None:
    for name in ("nope.toml", "../config/default.toml", "/etc/passwd"):
        with pytest.raises(FileNotFoundError, match="no factory config"):
            factory.factory_config(name)


def test_main_prints_the_locations_or_a_config(capsys: pytest.CaptureFixture[str]) -> None:
    assert factory.main([]) == 0
    out = capsys.readouterr().out
    assert f"models  {MODELS}" in out and "checkout" in out
    assert factory.main(["board.toml"]) == 0
    assert capsys.readouterr().out == factory.factory_config("board.toml").read_text()
    assert factory.main(["nope.toml"]) == 1
    assert "no factory config 'nope.toml'" in capsys.readouterr().err

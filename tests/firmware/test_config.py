"""Tests of the firmware configuration (TOML -> frozen dataclasses)."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seedcam_firmware.config import (
    KEYS,
    CameraConfig,
    FirmwareConfig,
    ModelsConfig,
    config_from_dict,
    config_get,
    config_reset,
    config_set,
    config_to_dict,
    load_config,
    requires_restart,
    to_toml,
)
from seedcam_firmware.config_schema import (
    check_link_url,
    default_serial_number,
)
from seedcam_firmware.errors import ConfigError
from seedcam_firmware.task_catalog import KNOWN_TASKS

REPO = Path(__file__).resolve().parents[2]
DEFAULT_TOML = REPO / "firmware" / "config" / "default.toml"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fw.toml"
    path.write_text(text)
    return path


def test_empty_file_is_the_defaults(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, ""), env={})
    assert cfg == FirmwareConfig()
    assert cfg.camera.source == "synthetic"
    assert (cfg.camera.width, cfg.camera.height, cfg.camera.fps) == (320, 240, 30.0)
    assert cfg.link.url == "pty" and cfg.link.baudrate == 921600
    assert cfg.tasks.enabled == ("lane", "detect", "ocr")
    assert cfg.pipeline.queue_depth == 2 and cfg.pipeline.jpeg_quality == 80
    assert Path(cfg.models.dir) == REPO / "models"


def test_serial_number_is_stable_and_valid() -> None:
    assert default_serial_number() == default_serial_number()
    assert FirmwareConfig().device.serial_number == default_serial_number()
    assert default_serial_number().startswith("SC")


def test_unknown_key_names_key_and_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "[camera]\nfsp = 30\n")
    with pytest.raises(ConfigError) as err:
        load_config(path, env={})
    assert "camera.fsp" in str(err.value)
    assert str(path) in str(err.value)
    assert "camera.fps" in str(err.value)  # the suggestion


def test_unknown_section_names_section_and_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "[camra]\nfps = 30\n")
    with pytest.raises(ConfigError, match=r"camra.*") as err:
        load_config(path, env={})
    assert str(path) in str(err.value)


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        ('[camera]\nfps = "fast"\n', "camera.fps", "a number"),
        ("[camera]\nwidth = 3.5\n", "camera.width", "an integer"),
        ("[camera]\nloop = 1\n", "camera.loop", "a boolean"),
        ('[tasks]\nenabled = "lane"\n', "tasks.enabled", "a list of strings"),
        ("[camera]\nwidth = 3\n", "camera.width", "between 16 and 4096"),
        ("[camera]\nrotation = 45\n", "camera.rotation", "one of 0, 90, 180, 270"),
        ('[camera]\nsource = "usb"\n', "camera.source", "one of"),
        ('[tasks]\nenabled = ["lane", "teleport"]\n', "tasks.enabled", "teleport"),
        ('[tasks]\nenabled = ["lane", "lane"]\n', "tasks.enabled", "repeat"),
        ("[link]\nhealth_interval_s = 5.0\n", "link.health_interval_s", "between"),
        ('[link]\nurl = "http://x"\n', "link.url", "scheme"),
        ('[models]\nlane_precision = "int4"\n', "models.lane_precision", "float32"),
        ("camera = 3\n", "camera", "must be a table"),
    ],
)
def test_bad_values_name_key_type_and_file(tmp_path: Path, text: str, key: str, words: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_config(path, env={})
    msg = str(err.value)
    assert key in msg and words in msg and str(path) in msg


def test_invalid_toml_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(_write(tmp_path, "[camera\n"), env={})
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml", env={})


def test_precedence_overrides_env_file_defaults(tmp_path: Path) -> None:
    path = _write(tmp_path, "[camera]\nfps = 10\nwidth = 640\nheight = 480\n")
    env = {
        "SEEDCAM_FW_CAMERA_FPS": "12.5",
        "SEEDCAM_FW_CAMERA_WIDTH": "800",
        "SEEDCAM_FW_LINK_HEALTH_INTERVAL_S": "0.5",
        "SEEDCAM_FW_LOG_LEVEL": "debug",  # not a section: left to others
        "OTHER": "x",
    }
    cfg = load_config(path, {"camera.width": 1024, "tasks.enabled": "lane"}, env=env)
    assert cfg.camera.fps == 12.5  # env over file
    assert cfg.camera.width == 1024  # override over env
    assert cfg.camera.height == 480  # file over default
    assert cfg.link.health_interval_s == 0.5
    assert cfg.tasks.enabled == ("lane",)


def test_env_unknown_key_and_bad_text_name_the_variable() -> None:
    with pytest.raises(ConfigError, match="SEEDCAM_FW_CAMERA_FSP.*camera.fsp"):
        load_config(None, env={"SEEDCAM_FW_CAMERA_FSP": "1"})
    with pytest.raises(ConfigError, match="SEEDCAM_FW_CAMERA_LOOP.*camera.loop.*boolean"):
        load_config(None, env={"SEEDCAM_FW_CAMERA_LOOP": "maybe"})


def test_relative_paths_are_relative_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    path = tmp_path / "sub" / "fw.toml"
    path.write_text('[camera]\npath = "clips/a.avi"\n[models]\ndir = "../models"\n')
    cfg = load_config(path, env={})
    assert Path(cfg.camera.path) == tmp_path / "sub" / "clips" / "a.avi"
    assert Path(cfg.models.dir) == tmp_path / "models"
    assert cfg.models.manifest_path("lane") == tmp_path / "models" / "lane" / "manifest.json"


def test_default_toml_loads_and_documents_every_key() -> None:
    cfg = load_config(DEFAULT_TOML, env={})
    assert cfg.camera.source == "synthetic"
    assert Path(cfg.models.dir) == REPO / "models"
    text = DEFAULT_TOML.read_text()
    for key in KEYS:
        assert key.split(".", 1)[1] in text, key


def test_get_set_reset_round_trip() -> None:
    cfg = FirmwareConfig()
    new = config_set(cfg, "camera.fps", 15)  # int -> float
    assert new.camera.fps == 15.0 and isinstance(new.camera.fps, float)
    assert cfg.camera.fps == 30.0  # the original is untouched
    assert config_get(new, "camera.fps") == 15.0
    assert config_get(new, "camera")["fps"] == 15.0
    assert config_get(new, "")["camera"]["fps"] == 15.0
    assert config_get(new, "tasks.enabled") == ["lane", "detect", "ocr"]
    assert config_reset(new, "camera.fps") == cfg
    assert config_reset(config_set(new, "camera.width", 64), "camera") == cfg
    assert config_reset(config_set(new, "link.baudrate", 115200)) == cfg
    assert config_set(cfg, "camera.device", "2").camera.device == 2
    assert config_set(cfg, "camera.device", "/dev/video1").camera.device == "/dev/video1"
    assert config_set(cfg, "tasks.enabled", []).tasks.enabled == ()
    both = config_set(cfg, "pipeline", {"queue_depth": 4, "jpeg_quality": 50})
    assert (both.pipeline.queue_depth, both.pipeline.jpeg_quality) == (4, 50)


def test_set_get_reset_reject_unknown_and_invalid() -> None:
    cfg = FirmwareConfig()
    with pytest.raises(ConfigError, match="camera.fsp"):
        config_get(cfg, "camera.fsp")
    with pytest.raises(ConfigError, match="camera.fsp"):
        config_set(cfg, "camera.fsp", 1)
    with pytest.raises(ConfigError, match="camra"):
        config_reset(cfg, "camra")
    with pytest.raises(ConfigError, match="pipeline.jpeg_quality.*between 1 and 100"):
        config_set(cfg, "pipeline.jpeg_quality", 101)
    with pytest.raises(ConfigError, match="camera.loop.*boolean"):
        config_set(cfg, "camera.loop", 1)
    with pytest.raises(ConfigError, match="section"):
        config_set(cfg, "camera", 3)


def test_sections_validate_on_construction() -> None:
    with pytest.raises(ConfigError, match="CameraConfig: camera.width"):
        CameraConfig(width="wide")  # type: ignore[arg-type]
    with pytest.raises(ValueError):  # ConfigError is a ValueError
        dataclasses.replace(CameraConfig(), rotation=45)
    with pytest.raises(dataclasses.FrozenInstanceError):
        CameraConfig().fps = 1.0  # type: ignore[misc]


def test_requires_restart() -> None:
    assert not requires_restart("tasks.enabled")
    assert not requires_restart("pipeline.jpeg_quality")
    assert not requires_restart("link.health_interval_s")
    assert requires_restart("camera.source")
    assert requires_restart("link.url")
    assert requires_restart("camera")
    assert not requires_restart("tasks")
    assert requires_restart("")
    with pytest.raises(ConfigError):
        requires_restart("camera.nope")


def test_every_known_task_has_a_model_key() -> None:
    for task in KNOWN_TASKS:
        assert f"models.{task}" in KEYS
        ModelsConfig().manifest_path(task)


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("pty", True),
        ("pty:///tmp/seedcam0", True),
        ("pty://relative", False),
        ("/dev/ttyGS0", True),
        ("tcp-listen://127.0.0.1:5760", True),
        ("tcp-listen://127.0.0.1", False),
        ("tcp-listen://:99999", False),
        ("udp://x:1", False),
        ("", False),
    ],
)
def test_link_url(url: str, ok: bool) -> None:
    assert (check_link_url(url) is None) is ok


# ---- TOML round trip ------------------------------------------------------


def _strategy(key: str) -> st.SearchStrategy[Any]:
    spec = KEYS[key]
    rules = spec.rules
    special: dict[str, st.SearchStrategy[Any]] = {
        "device.serial_number": st.from_regex(r"[A-Za-z0-9._-]{1,64}", fullmatch=True),
        "device.name": st.text(max_size=64).filter(str.isprintable),
        "camera.device": st.one_of(st.integers(0, 63), st.text(min_size=1, max_size=20)),
        "camera.pixel_format": st.sampled_from(["", "YUYV", "MJPG", "RGB3"]),
        "link.url": st.sampled_from(["pty", "pty:///tmp/sc", "/dev/ttyAMA0", "tcp-listen://0.0.0.0:5760"]),
        "tasks.enabled": st.lists(st.sampled_from(KNOWN_TASKS), unique=True).map(tuple),
        "updates.public_keys": st.lists(st.from_regex(r"[0-9a-f]{64}", fullmatch=True), max_size=2).map(tuple),
        "ocr.pattern": st.sampled_from(["", "[A-Z]{2}[0-9]{3,4}", r"\d+", "(AB|CD)-?[0-9]+"]),  # checked: a regex
    }
    if key in special:
        return special[key]
    if rules.choices is not None:
        return st.sampled_from(rules.choices)
    if spec.type is bool:
        return st.booleans()
    if spec.type is int:
        return st.integers(int(rules.lo), int(rules.hi))  # type: ignore[arg-type]
    if spec.type is float:
        return st.floats(rules.lo, rules.hi, allow_nan=False)
    return st.text(max_size=40)


@st.composite
def _configs(draw: st.DrawFn) -> FirmwareConfig:
    cfg = FirmwareConfig()
    for key in KEYS:
        cfg = config_set(cfg, key, draw(_strategy(key)))
    return cfg


@settings(max_examples=60, deadline=None)
@given(_configs())
def test_toml_round_trip(cfg: FirmwareConfig) -> None:
    text = to_toml(cfg)
    assert config_from_dict(tomllib.loads(text)) == cfg
    assert config_from_dict(config_to_dict(cfg)) == cfg


def test_to_toml_file_round_trip(tmp_path: Path) -> None:
    cfg = config_set(FirmwareConfig(), "camera.path", str(tmp_path / "v.avi"))
    path = _write(tmp_path, to_toml(cfg))
    assert load_config(path, env={}) == cfg

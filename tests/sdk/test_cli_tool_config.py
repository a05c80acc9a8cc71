"""The CLI's own config file (~/.config/seedcam/seedcam.toml): default port and baud, after flags and environment."""

from __future__ import annotations

# ruff: noqa: F811  (tests take the fixtures imported from fake_device as parameters)
import argparse
import io
from pathlib import Path
from typing import Any

import pytest
from fake_device import FakeDevice, make_device  # noqa: F401 - fixture

from seedcam._cli_config import load_tool_config, tool_config_path
from seedcam._cli_port import sensor_url
from seedcam.cli import EXIT_USER, main


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An XDG config home of its own, no port or baud in the environment."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    for name in ("SEEDCAM_CONFIG", "SEEDCAM_PORT", "SEEDCAM_BAUD"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "seedcam").mkdir()
    return tmp_path


def _write(home: Path, text: str) -> Path:
    path = home / "seedcam" / "seedcam.toml"
    path.write_text(text)
    return path


def _args(**given: Any) -> argparse.Namespace:
    return argparse.Namespace(**{"port": None, "serial": None, "baud": None, "trace": False, **given})


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


def test_the_file_gives_the_port_when_neither_flag_nor_environment_does(
    home: Path, make_device: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    device: FakeDevice = make_device(connect=False)
    _write(home, f'port = "{device.url}"\n')
    code, out = _run("info")
    assert code == 0 and "SC-TEST-0001" in out
    monkeypatch.setenv("SEEDCAM_PORT", "pair://nobody-here")  # the environment wins over the file
    assert sensor_url(_args()) == "pair://nobody-here"
    assert sensor_url(_args(port="/dev/ttyS9")) == "/dev/ttyS9"  # the command line wins over both


def test_precedence_of_baud_flag_environment_file(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(home, 'port = "/dev/ttyUSB7"\nbaud = 115200\n')
    assert sensor_url(_args()) == "/dev/ttyUSB7?baud=115200"
    assert sensor_url(_args(port="/dev/ttyACM3")) == "/dev/ttyACM3?baud=115200"  # the file's baud, another port
    monkeypatch.setenv("SEEDCAM_BAUD", "57600")
    assert sensor_url(_args()) == "/dev/ttyUSB7?baud=57600"
    assert sensor_url(_args(baud="9600")) == "/dev/ttyUSB7?baud=9600"
    assert sensor_url(_args(port="/dev/ttyUSB7?baud=230400", baud="9600")) == "/dev/ttyUSB7?baud=230400"


def test_seedcam_config_names_another_file(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "elsewhere.toml"
    other.write_text('port = "/dev/ttyS3"\n')
    monkeypatch.setenv("SEEDCAM_CONFIG", str(other))
    assert tool_config_path() == other
    assert load_tool_config().port == "/dev/ttyS3"


def test_no_file_is_no_config(home: Path) -> None:
    config = load_tool_config()
    assert (config.path, config.port, config.baud) == (None, None, None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("port = ", "is not TOML"),
        ('prot = "/dev/ttyUSB0"\n', "unknown key prot"),
        ("baud = 0\n", "baud must be a whole number above 0"),
        ('baud = "fast"\n', "baud must be a whole number above 0"),
        ("port = 3\n", "port must be a non-empty string"),
    ],
)
def test_a_bad_file_is_one_line_naming_it_and_exit_1(
    home: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    path = _write(home, text)
    code, _ = _run("info")
    err = capsys.readouterr().err
    assert code == EXIT_USER
    assert message in err and str(path) in err and "Traceback" not in err

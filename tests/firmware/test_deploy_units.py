"""The board's systemd units (deploy/systemd): valid for systemd, and each command they run one the firmware takes."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import REPO

from seedcam_firmware.cli import _parser, persists

UNITS = sorted((REPO / "deploy" / "systemd").glob("*.service"))
#: Board-only commands a unit runs directly, absent on a CI box: replaced by a stub for ``verify``.
_BOARD_ONLY = ("/sbin/modprobe",)


def _section_values(text: str, key: str) -> list[str]:
    return [m.group(1) for m in re.finditer(rf"^{key}=(.*)$", text, flags=re.M)]


def _firmware_commands(unit: Path) -> list[list[str]]:
    """The ``seedcam-firmware`` argument lists of a unit's Exec* lines, its Environment= expanded."""
    text = unit.read_text()
    env = dict(v.split("=", 1) for v in _section_values(text, "Environment"))
    commands = []
    for key in ("ExecStartPre", "ExecStart", "ExecStartPost", "ExecStopPost"):
        for line in _section_values(text, key):
            argv = shlex.split(line)
            if argv[:2] != ["/bin/sh", "-c"]:
                continue
            words = shlex.split(re.sub(r"\$(\w+)", lambda m: env[m.group(1)], argv[2]))
            words = words[1:] if words[0] == "exec" else words
            assert words[0] == env["SEEDCAM_FW"] == "/opt/seedcam/.venv/bin/seedcam-firmware", line
            commands.append(words[1:])
    return commands


def test_there_is_a_unit_for_the_uart_and_for_usb() -> None:
    assert {u.name for u in UNITS} >= {"seedcam.service", "seedcam-uart.service"}


@pytest.mark.parametrize("unit", UNITS, ids=lambda u: u.name)
def test_unit_commands_are_firmware_commands(unit: Path) -> None:
    commands = _firmware_commands(unit)
    assert any(c[0] in ("run", "supervise") for c in commands), commands
    for argv in commands:
        if argv[0] == "supervise":
            assert argv[1] == "--"
            argv = ["run", *argv[2:]]
        args = _parser().parse_args(argv)  # an unknown option exits (SystemExit)
        if args.command == "run":
            assert args.config == Path("/etc/seedcam/firmware.toml") and persists(args)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run"], False),  # no file: nothing to write into
        (["run", "--persist-config"], False),
        (["run", "--config", "fw.toml"], True),  # the default with a config file
        (["run", "--config", "fw.toml", "--persist-config"], True),
        (["run", "--config", "fw.toml", "--no-persist-config"], False),
    ],
)
def test_host_changes_persist_by_default_with_a_config_file(argv: list[str], expected: bool) -> None:
    assert persists(_parser().parse_args(argv)) is expected


def test_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed here")
    stub = tmp_path / "stub"
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    for unit in UNITS:
        text = unit.read_text()
        for command in _BOARD_ONLY:
            if not os.access(command, os.X_OK):
                text = text.replace(f"={command} ", f"={stub} ")
        (tmp_path / unit.name).write_text(text)
    proc = subprocess.run(
        [tool, "verify", *(str(tmp_path / u.name) for u in UNITS)], capture_output=True, text=True, timeout=60
    )
    if proc.returncode != 0 and "Failed to initialize manager" in proc.stderr:
        pytest.skip("systemd-analyze verify cannot run in this container: " + proc.stderr.strip().splitlines()[-1])
    assert proc.returncode == 0, proc.stderr
    assert "seedcam" not in proc.stderr, proc.stderr  # no warning about our units either

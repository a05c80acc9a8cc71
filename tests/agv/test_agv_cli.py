"""``seedcam agv-*`` come from the firmware package through an entry point, and say what to install without it."""

from __future__ import annotations

import io
from importlib import metadata

import pytest

from seedcam import cli
from seedcam.agv.cli import AGV_COMMANDS, AGV_ENTRY_POINT, ENTRY_POINT_GROUP
from seedcam_firmware.agv_sim_cli import add_agv_commands


def test_the_firmware_distribution_declares_the_agv_commands() -> None:
    (entry,) = [ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == AGV_ENTRY_POINT]
    assert entry.load() is add_agv_commands


BROKEN = metadata.EntryPoint(AGV_ENTRY_POINT, "seedcam_no_such_firmware.cli:add", ENTRY_POINT_GROUP)


@pytest.mark.parametrize(("entry_points", "why"), [([], "which is not installed"), ([BROKEN], "does not load")])
@pytest.mark.parametrize("command", sorted(AGV_COMMANDS))
def test_without_the_firmware_the_commands_say_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    entry_points: list[metadata.EntryPoint],
    why: str,
    command: str,
) -> None:
    monkeypatch.setattr(metadata, "entry_points", lambda group: entry_points if group == ENTRY_POINT_GROUP else [])
    out = io.StringIO()
    assert cli.main([command, "--laps", "1", "--json"], out) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err  # one clear line
    assert f"seedcam {command} needs the AGV simulator" in err and why in err
    assert "pip install seedcam-firmware" in err
    assert out.getvalue() == ""
    help_out = io.StringIO()
    assert cli.main(["--help"], help_out) == 0
    assert command in capsys.readouterr().out + help_out.getvalue()  # still listed

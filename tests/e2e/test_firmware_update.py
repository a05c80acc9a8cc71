"""Firmware updates: a wheel bundle into the inactive slot, a trial boot, health confirmation or automatic revert."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import MODELS, REPO

import seedcam
from seedcam import updates
from seedcam.bundle import write_bundle
from seedcam.errors import UpdateRefused
from seedcam_firmware import __version__ as INSTALLED
from seedcam_firmware.launcher import EmulatedBoard
from seedcam_firmware.transfer import CRASH_ENV
from seedcam_tools.bundles import build_firmware_bundle, wheel_from_source

pytestmark = pytest.mark.e2e

HANGS_AT_START = (
    "import threading\n\n\ndef main(argv=None):\n    threading.Event().wait()  # never comes up\n\n\n"
    "if __name__ == '__main__':\n    main()\n"
)


def firmware_bundle(tmp_path: Path, version: str, **replace: str) -> Path:
    wheel = wheel_from_source(REPO / "firmware" / "seedcam_firmware", tmp_path, version, replace=replace)
    return write_bundle(build_firmware_bundle(wheel), tmp_path / f"fw-{version}.scb")


@pytest.fixture
def supervise(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Start ``seedcam-firmware supervise`` (with extra environment variables); returns the link path."""
    boards: list[EmulatedBoard] = []

    def start(**env: str) -> str:
        overrides = {"updates.dir": tmp_path / "storage", "updates.confirm_timeout_s": 8, "models.dir": MODELS}
        board = EmulatedBoard(
            "--fps",
            "15",
            workdir=tmp_path,
            overrides=overrides,
            supervise=True,
            env={**os.environ, **env},
            log_name="fw.log",
        )
        boards.append(board)
        board.start().wait_ready(60.0)  # fails at once when the supervisor exits
        return board.link

    yield start
    for board in boards:
        board.terminate(15.0)


@pytest.fixture
def supervised(supervise: Callable[..., str]) -> str:
    return supervise()


def test_a_firmware_that_confirms_stays_and_one_that_never_does_is_reverted(supervised: str, tmp_path: Path) -> None:
    good = firmware_bundle(tmp_path, "0.1.1")
    hanging = firmware_bundle(tmp_path, "0.1.2", **{"seedcam_firmware/cli.py": HANGS_AT_START})
    with seedcam.open(supervised, timeout=10) as sensor:
        assert sensor.device_info.firmware_version == INSTALLED
        done = updates.flash(sensor, good, confirm_timeout=60)
        assert (done.version, done.slot) == ("0.1.1", "a")
        assert sensor.info().firmware_version == "0.1.1"
        assert sensor.recv(timeout=10) is not None  # the new firmware streams results

        with pytest.raises(UpdateRefused) as refused:
            updates.flash(sensor, hanging, confirm_timeout=60)
        assert refused.value.reason == "reverted"
        assert sensor.info().firmware_version == "0.1.1"  # the previous firmware came back by itself
        (firmware,) = [g for g in updates.list_slots(sensor) if g.name == "firmware"]
        assert firmware.active.slot == "a" and firmware.running == "0.1.1"
        assert sensor.recv(timeout=10) is not None


def test_a_power_cut_during_the_trial_brings_the_old_firmware_back(
    supervise: Callable[..., str], tmp_path: Path
) -> None:
    """The trial firmware dies (kill -9) just before it would confirm: the supervisor boots the old one."""
    link = supervise(**{CRASH_ENV: "firmware_trial"})  # only a firmware on trial reaches that step
    new = firmware_bundle(tmp_path, "0.1.3")
    with seedcam.open(link, timeout=10) as sensor:
        assert sensor.device_info.firmware_version == INSTALLED
        with pytest.raises(UpdateRefused) as refused:
            updates.flash(sensor, new, confirm_timeout=60)
        assert refused.value.reason == "reverted"
        assert sensor.info().firmware_version == INSTALLED
        (firmware,) = [g for g in updates.list_slots(sensor) if g.name == "firmware"]
        assert firmware.active is None and all(s.state != "trial" for s in firmware.slots)
        assert sensor.recv(timeout=10) is not None

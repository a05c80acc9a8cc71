"""Firmware updates: a wheel bundle into the inactive slot, a trial boot, health confirmation or automatic revert."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import MODELS, REPO

import seedcam
from seedcam import updates
from seedcam.bundle import write_bundle
from seedcam.errors import UpdateRefused
from seedcam_tools.bundles import build_firmware_bundle, wheel_from_source

pytestmark = pytest.mark.e2e

HANGS_AT_START = "import threading\n\n\ndef main(argv=None):\n    threading.Event().wait()  # never comes up\n\n\n" \
                 "if __name__ == '__main__':\n    main()\n"


def firmware_bundle(tmp_path: Path, version: str, **replace: str) -> Path:
    wheel = wheel_from_source(REPO / "firmware" / "seedcam_firmware", tmp_path, version, replace=replace)
    return write_bundle(build_firmware_bundle(wheel), tmp_path / f"fw-{version}.scb")


@pytest.fixture
def supervised(tmp_path: Path):  # type: ignore[no-untyped-def]
    link = tmp_path / "sensor"
    proc = subprocess.Popen(
        [sys.executable, "-m", "seedcam_firmware.cli", "supervise", "--", "--pty-link", str(link), "--fps", "15",
         "--set", f"updates.dir={tmp_path / 'storage'}", "--set", "updates.confirm_timeout_s=8",
         "--set", f"models.dir={MODELS}"],
        stdout=subprocess.PIPE, stderr=(tmp_path / "fw.log").open("w"), text=True, cwd=tmp_path,
    )
    ready = threading.Event()

    def watch() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            if re.search(r"link at ", line):
                ready.set()

    threading.Thread(target=watch, daemon=True).start()
    for _ in range(300):  # up to 60 s, failing at once when the supervisor exits
        if ready.wait(0.2) or proc.poll() is not None:
            break
    assert ready.is_set(), (tmp_path / "fw.log").read_text()
    yield str(link)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def test_a_firmware_that_confirms_stays_and_one_that_never_does_is_reverted(supervised: str, tmp_path: Path) -> None:
    good = firmware_bundle(tmp_path, "0.1.1")
    hanging = firmware_bundle(tmp_path, "0.1.2", **{"seedcam_firmware/cli.py": HANGS_AT_START})
    with seedcam.open(supervised, timeout=10) as sensor:
        assert sensor.device_info.firmware_version == "0.1.0"
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

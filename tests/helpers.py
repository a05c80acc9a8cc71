"""Helpers shared by the tests (fixtures live in conftest.py).

``tests/`` is on ``sys.path`` (pytest puts the folder of the rootdir's conftest.py there), so a
test imports these as ``from helpers import wait_until``.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from seedcam.agv import DriveCommand, Motor

__all__ = ["MODELS", "REPO", "WAIT_S", "run_firmware_cli", "wait_until", "wait_until_inside"]

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "models"
#: The default bound of a wait: generous for a loaded 2-core box.
WAIT_S = 5.0


def wait_until(
    condition: Callable[[], object], timeout: float = WAIT_S, what: str = "condition", *, interval: float = 0.01
) -> None:
    """Poll ``condition`` every ``interval`` s until it is truthy; fail the test after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)  # polling a condition with a deadline


def wait_until_inside(thread: threading.Thread, function: str, timeout: float = 5) -> None:
    """Poll the thread's stack until it is executing ``function`` (e.g. blocked in a read)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = sys._current_frames().get(thread.ident or -1)
        while frame is not None:
            if frame.f_code.co_name == function:
                return
            frame = frame.f_back
        time.sleep(0.001)
    pytest.fail(f"thread never entered {function}()")


def run_firmware_cli(*args: str, timeout: float = 60.0, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``seedcam-firmware`` to completion (for error-exit tests)."""
    return subprocess.run(
        [sys.executable, "-m", "seedcam_firmware.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


class RecordingMotor(Motor):
    """A motor that keeps every command it is given, with the time (``stop`` arrives as a "stop" command)."""

    def __init__(self) -> None:
        self.commands: list[tuple[float, DriveCommand]] = []

    def drive(self, command: DriveCommand) -> None:
        self.commands.append((time.monotonic(), command))

    def close(self) -> None:
        pass

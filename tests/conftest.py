"""Shared fixtures: the real firmware process on a pty (the emulated board)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "models"
_READY = re.compile(r"link at (\S+)")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--sensor-url",
        default=None,
        help="run the end-to-end tests against a real board at this URL instead of the emulated one",
    )


class FirmwareProcess:
    """``seedcam-firmware run`` as a child process, with its link on a pty symlink."""

    def __init__(self, workdir: Path, *args: str) -> None:
        self.workdir = workdir
        self.link = str(workdir / "sensor")
        self.args = args
        self.log_path = workdir / "firmware.log"
        self.proc: subprocess.Popen[str] | None = None
        self.ready_line = ""

    def start(self, timeout: float = 60.0) -> FirmwareProcess:
        log = self.log_path.open("a")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "seedcam_firmware.cli", "run", "--pty-link", self.link, *self.args],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            cwd=self.workdir,
        )
        ready = threading.Event()
        threading.Thread(target=self._watch_stdout, args=(ready,), daemon=True).start()
        deadline = time.monotonic() + timeout
        while not ready.wait(0.2):
            if self.proc.poll() is not None:
                raise RuntimeError(f"firmware exited with {self.proc.returncode}: {self.log_path.read_text()}")
            if time.monotonic() > deadline:
                self.kill()
                raise TimeoutError(f"firmware not ready within {timeout} s: {self.log_path.read_text()}")
        return self

    def _watch_stdout(self, ready: threading.Event) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            if _READY.search(line):
                self.ready_line = line.strip()
                ready.set()

    def kill(self) -> None:
        """kill -9: no clean shutdown at all."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def terminate(self, timeout: float = 10.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
                raise
        return self.proc.returncode


@pytest.fixture
def firmware_factory(tmp_path: Path) -> Iterator[type]:
    """Start firmware processes in ``tmp_path``; all are killed at teardown."""
    started: list[FirmwareProcess] = []

    def start(*args: str, timeout: float = 60.0) -> FirmwareProcess:
        fw = FirmwareProcess(tmp_path, *args).start(timeout)
        started.append(fw)
        return fw

    yield start  # type: ignore[misc]
    for fw in started:
        fw.kill()


def run_firmware_cli(*args: str, timeout: float = 60.0, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``seedcam-firmware`` to completion (for error-exit tests)."""
    return subprocess.run(
        [sys.executable, "-m", "seedcam_firmware.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


def wait_until_inside(
    thread: threading.Thread, function: str, timeout: float = 5
) -> None:
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

"""The emulated board: ``seedcam-firmware run`` (or ``supervise``) as a child process, up when its link is.

One launcher for everything that needs the real firmware in another process:
the end-to-end tests, the benchmarks and the AGV simulator. A board is up when
the firmware prints its ready line (``seedcam-firmware 0.1.0: link at /dev/pts/7
(camera synthetic, tasks lane)``); the launcher waits for that line, not for a
fixed time, and fails at once when the process exits first::

    from seedcam_firmware.launcher import emulated_board

    with emulated_board("--fps", "20", workdir=tmp, overrides={"tasks.enabled": "lane"}) as board:
        with seedcam.open(board.link) as sensor:
            ...

The board's stderr, and each line it prints, go to ``<workdir>/firmware.log``
(:attr:`EmulatedBoard.log_path`, :meth:`EmulatedBoard.log_tail`). The link is a
pty with a stable symlink (``<workdir>/sensor``) unless the arguments choose
another (``--link ...`` with ``link_name=None``). :meth:`EmulatedBoard.kill` is a
power cut (SIGKILL to the board's whole process group), :meth:`EmulatedBoard.terminate`
a clean shutdown. The board runs in its own session, so a Ctrl-C meant for the
caller reaches the caller, which then stops the board.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TextIO

from seedcam_firmware import __version__
from seedcam_firmware.errors import FirmwareError

__all__ = [
    "READY_MARK",
    "BoardStartError",
    "BoardStartTimeout",
    "EmulatedBoard",
    "emulated_board",
    "format_ready_line",
    "parse_ready_line",
]

log = logging.getLogger(__name__)

#: What the firmware's ready line says before the link's path. Kept across firmware versions: the
#: supervisor may boot an older or a newer firmware than the launcher's.
READY_MARK = "link at "
_READY = re.compile(re.escape(READY_MARK) + r"(\S+)")
_LOG_TAIL_CHARS = 2000
_EXIT_CHECK_S = 0.2  #: how often wait_ready looks whether the board process has exited


class BoardStartError(FirmwareError):
    """The emulated board exited before its link came up.

    Attributes:
        returncode: the process's exit code (None: still running, see :class:`BoardStartTimeout`).
        log_tail: the end of the board's log.
    """

    def __init__(self, message: str, returncode: int | None, log_tail: str) -> None:
        super().__init__(message)
        self.returncode = returncode
        self.log_tail = log_tail


class BoardStartTimeout(BoardStartError, TimeoutError):
    """The emulated board did not bring its link up in time (it has been killed)."""


def format_ready_line(link: str, details: str) -> str:
    """The line the firmware prints on stdout once its link is open (what :class:`EmulatedBoard` waits for)."""
    return f"seedcam-firmware {__version__}: {READY_MARK}{link} ({details})"


def parse_ready_line(line: str) -> str | None:
    """The link path in a ready line, or None when ``line`` is not one."""
    match = _READY.search(line)
    return match.group(1) if match else None


def _set_options(overrides: Mapping[str, object]) -> list[str]:
    """``--set KEY=VALUE`` for each override, values written as the command line reads them."""
    options: list[str] = []
    for key, value in overrides.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (list, tuple)):
            text = ",".join(str(v) for v in value)
        else:
            text = str(value)
        options += ["--set", f"{key}={text}"]
    return options


class EmulatedBoard:
    """The firmware as a child process; see the module docstring.

    :meth:`start` returns at once and :meth:`wait_ready` waits for the link; used as a context
    manager, the board is terminated on the way out (``with board.start().wait_ready(): ...``).

    Args:
        *args: more options of ``seedcam-firmware run`` (``--fps 20``, ``--tasks lane``...).
        workdir: the board's working directory; its log and its pty symlink go there.
        config: a TOML config file (``--config``).
        overrides: config keys to set (``--set KEY=VALUE`` each).
        link_name: the name of the pty symlink in ``workdir`` (``--pty-link``); None when
            ``args`` choose the link themselves (``--link /dev/ttyGS0``).
        supervise: run ``seedcam-firmware supervise`` (the A/B slot boot loader) instead of ``run``.
        env: the child's whole environment (default: this process's).
        log_name: the log file's name in ``workdir`` (appended to).

    Attributes:
        link: what a host opens: the pty symlink, or (with ``link_name=None``) the path from the
            ready line once the board is up.
        proc: the process (None before :meth:`start`).
        ready_line: the last ready line the board printed ("" before; a reboot prints a new one).
        log_path: the log file (the board's stderr and its stdout lines).
    """

    def __init__(
        self,
        *args: str,
        workdir: Path | str,
        config: Path | str | None = None,
        overrides: Mapping[str, object] | None = None,
        link_name: str | None = "sensor",
        supervise: bool = False,
        env: Mapping[str, str] | None = None,
        log_name: str = "firmware.log",
    ) -> None:
        self.workdir = Path(workdir)
        self.log_path = self.workdir / log_name
        self.link = str(self.workdir / link_name) if link_name is not None else ""
        options: list[str] = ["--pty-link", self.link] if link_name is not None else []
        if config is not None:
            options += ["--config", str(config)]
        options += _set_options(overrides or {})
        options += args
        command: Sequence[str] = ("supervise", "--", *options) if supervise else ("run", *options)
        self.argv = [sys.executable, "-m", "seedcam_firmware.cli", *command]
        self.env = dict(env) if env is not None else None
        self.proc: subprocess.Popen[str] | None = None
        self.ready_line = ""
        self._log: TextIO | None = None
        self._state = threading.Condition()
        self._up = False
        self._output_ended = False
        self._watcher: threading.Thread | None = None

    # ------------------------------------------------------------------ start

    def start(self) -> EmulatedBoard:
        """Start the process and return at once (see :meth:`wait_ready`)."""
        if self.proc is not None:
            raise RuntimeError("this board has been started already")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("a", encoding="utf-8")
        self.proc = subprocess.Popen(
            self.argv,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            encoding="utf-8",
            errors="replace",
            cwd=self.workdir,
            env=self.env,
            start_new_session=True,
        )
        self._watcher = threading.Thread(target=self._watch, name="board-stdout", daemon=True)
        self._watcher.start()
        return self

    def _watch(self) -> None:
        """Read the board's stdout: note each ready line, copy every line into the log."""
        assert self.proc is not None and self.proc.stdout is not None
        log_file = self._log
        with contextlib.suppress(ValueError, OSError):  # the pipe or the log closed under us: the board is gone
            for line in self.proc.stdout:
                if log_file is not None and not log_file.closed:
                    log_file.write(line)
                    log_file.flush()
                link = parse_ready_line(line)
                if link is not None:
                    with self._state:
                        self.ready_line = line.strip()
                        self.link = self.link or link
                        self._up = True
                        self._state.notify_all()
        with self._state:
            self._output_ended = True
            self._state.notify_all()

    def wait_ready(self, timeout: float = 60.0) -> EmulatedBoard:
        """Wait until the board prints its ready line.

        Raises:
            BoardStartError: the board exited first (the message ends with its log).
            BoardStartTimeout: no ready line within ``timeout`` s (the board is killed).
        """
        if self.proc is None:
            raise RuntimeError("start the board first")
        deadline = time.monotonic() + timeout
        proc = self.proc
        with self._state:
            # woken by the ready line or the end of stdout; a process that exits while a child of
            # it still holds stdout (a supervisor) is noticed within one slice
            while not (self._up or self._output_ended or proc.poll() is not None):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._state.wait(min(left, _EXIT_CHECK_S))
            up, ended = self._up, self._output_ended or proc.poll() is not None
        if up:
            return self
        if ended:  # stdout closed: the board is on its way out; let it finish within the time left
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(max(0.5, deadline - time.monotonic()))
        code = self.proc.poll()
        tail, line = self.log_tail(), self.log_tail(one_line=True)
        if code is not None:
            self._release()
            raise BoardStartError(
                f"the emulated board exited with code {code} before its link came up: {line}", code, tail
            )
        self.kill()
        raise BoardStartTimeout(
            f"the emulated board did not bring its link up within {timeout:g} s: {line}", None, tail
        )

    # ------------------------------------------------------------------ stop

    def kill(self) -> None:
        """Power cut: SIGKILL to the board's process group (the firmware, and its supervisor's children)."""
        proc = self.proc
        if proc is not None:
            # the whole group, also when its leader has exited already (its children may live on)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        self._release()

    def terminate(self, timeout: float = 10.0) -> int | None:
        """Clean shutdown: SIGTERM, then a power cut when the board has not exited within ``timeout`` s.

        Idempotent.

        Returns:
            The exit code (negative: the signal that ended it); None when never started.
        """
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                log.warning("the emulated board did not stop within %g s of SIGTERM; killing it", timeout)
        self.kill()
        return proc.returncode

    def _release(self) -> None:
        """Close the pipe and the log once the process is gone."""
        if self._watcher is not None:
            self._watcher.join(timeout=5.0)  # EOF follows the exit at once, unless a grandchild holds the pipe
        if self.proc is not None and self.proc.stdout is not None and not self._watcher_alive():
            self.proc.stdout.close()  # never under a reader blocked in it: that close would wait for the read
        if self._log is not None:
            self._log.close()
            self._log = None

    def _watcher_alive(self) -> bool:
        return self._watcher is not None and self._watcher.is_alive()

    # ------------------------------------------------------------------ log

    def log_tail(self, chars: int = _LOG_TAIL_CHARS, *, one_line: bool = False) -> str:
        """The last ``chars`` characters of the board's log ("" when there is none yet).

        With ``one_line`` the lines are joined with `` | `` (for an error message).
        """
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:]
        except OSError:
            text = ""
        return _one_line(text) if one_line else text

    def __enter__(self) -> EmulatedBoard:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.terminate()


def _one_line(text: str) -> str:
    return " | ".join(line for line in text.strip().splitlines() if line.strip()) or "(the firmware log is empty)"


@contextlib.contextmanager
def emulated_board(
    *args: str,
    workdir: Path | str,
    config: Path | str | None = None,
    overrides: Mapping[str, object] | None = None,
    link_name: str | None = "sensor",
    supervise: bool = False,
    env: Mapping[str, str] | None = None,
    timeout: float = 60.0,
    stop_timeout: float = 10.0,
) -> Iterator[EmulatedBoard]:
    """Start an emulated board, wait (``timeout`` s at most) for its link, and stop it on exit.

    The arguments are those of :class:`EmulatedBoard`; ``stop_timeout`` is how long a clean
    shutdown may take before the board is killed.

    Raises:
        BoardStartError: the board exited before its link came up.
        BoardStartTimeout: the link did not come up within ``timeout`` s.
    """
    board = EmulatedBoard(
        *args, workdir=workdir, config=config, overrides=overrides, link_name=link_name, supervise=supervise, env=env
    )
    board.start()
    try:
        board.wait_ready(timeout)
        yield board
    finally:
        board.terminate(stop_timeout)

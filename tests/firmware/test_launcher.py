"""The emulated-board launcher: up on the firmware's ready line, a typed error with the log when it is not."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

import seedcam
from seedcam_firmware.errors import FirmwareError
from seedcam_firmware.launcher import (
    BoardStartError,
    BoardStartTimeout,
    EmulatedBoard,
    emulated_board,
    format_ready_line,
    parse_ready_line,
)


def test_the_ready_line_names_the_link() -> None:
    line = format_ready_line("/dev/pts/7", "camera synthetic, tasks lane")
    assert line.startswith("seedcam-firmware ") and "(camera synthetic, tasks lane)" in line
    assert parse_ready_line(line + "\n") == "/dev/pts/7"
    assert parse_ready_line("seedcam-firmware: error: camera.fps must be > 0") is None


def test_a_board_that_exits_raises_at_once_with_its_log(tmp_path: Path) -> None:
    with pytest.raises(BoardStartError) as raised, emulated_board(workdir=tmp_path, overrides={"camera.fps": -1}):
        pytest.fail("the board came up")
    error = raised.value
    assert isinstance(error, FirmwareError) and not isinstance(error, BoardStartTimeout)
    assert error.returncode == 1
    assert "camera.fps" in error.log_tail and "camera.fps" in str(error) and "\n" not in str(error)


def test_a_board_late_past_the_timeout_is_killed(tmp_path: Path) -> None:
    board = EmulatedBoard(workdir=tmp_path).start()
    with pytest.raises(BoardStartTimeout) as raised:
        board.wait_ready(0.01)
    assert isinstance(raised.value, TimeoutError) and raised.value.returncode is None
    assert board.proc is not None and board.proc.returncode == -signal.SIGKILL


def test_the_link_comes_from_the_ready_line_and_kill_is_a_power_cut(tmp_path: Path) -> None:
    board = EmulatedBoard("--link", "pty", "--tasks", "", "--fps", "10", workdir=tmp_path, link_name=None)
    with board.start().wait_ready(60.0):
        assert board.link.startswith("/dev/pts/") and board.link in board.ready_line
        with seedcam.open(board.link, timeout=10, reconnect=False) as sensor:
            assert sensor.recv(timeout=10) is not None
        board.kill()
        assert board.proc is not None and board.proc.returncode == -signal.SIGKILL
    assert board.terminate() == -signal.SIGKILL  # idempotent after the power cut
    assert board.ready_line in (tmp_path / "firmware.log").read_text()  # stdout is in the log too

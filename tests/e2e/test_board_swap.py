"""Another board behind the same port: the SDK stops instead of carrying on with it (issue 14, finding 6).

The reproduction of the finding: a firmware dies, its ``--pty-link`` symlink is left dangling,
another board (another serial number, its own storage) comes up on the same path, and the
SDK, reconnecting by itself, reaches it. A call then, or a push that was resuming, must stop
with :class:`seedcam.DeviceMismatch` naming both devices, and the other board must not have
been sent any of the push.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import MODELS, wait_until

import seedcam
from seedcam import DeviceMismatch, updates
from seedcam.bundle import write_bundle
from seedcam_firmware.launcher import EmulatedBoard
from seedcam_tools.bundles import build_model_bundle

pytestmark = pytest.mark.e2e


@pytest.fixture
def boards(tmp_path: Path) -> Iterator[list[EmulatedBoard]]:
    started: list[EmulatedBoard] = []
    yield started
    for board in started:
        board.kill()


def _board(started: list[EmulatedBoard], tmp_path: Path, serial: str, *extra: str) -> EmulatedBoard:
    """A board with its own serial number and storage, on the pty symlink ``tmp_path/sensor``."""
    workdir = tmp_path / serial
    board = EmulatedBoard(
        "--pty-link",
        str(tmp_path / "sensor"),
        "--fps",
        "15",
        "--tasks",
        "lane",
        "--set",
        f"device.serial_number={serial}",
        "--set",
        f"updates.dir={workdir / 'storage'}",
        *extra,
        workdir=workdir,
        link_name=None,
    )
    started.append(board)
    return board.start().wait_ready(60)


def test_a_reconnect_that_reaches_another_board_stops_with_both_named(
    boards: list[EmulatedBoard], tmp_path: Path
) -> None:
    first = _board(boards, tmp_path, "SC-FIRST")
    with seedcam.open(str(tmp_path / "sensor"), timeout=10, reconnect_interval=0.1) as sensor:
        assert sensor.info().serial_number == "SC-FIRST"
        first.kill()  # the symlink dangles now
        _board(boards, tmp_path, "SC-OTHER")
        wait_until(lambda: sensor.session.closed, 30, "the SDK to reconnect and find another board")
        with pytest.raises(DeviceMismatch) as mismatch:
            sensor.models()
        assert (mismatch.value.expected_serial, mismatch.value.found_serial) == ("SC-FIRST", "SC-OTHER")
        assert "SC-FIRST" in str(mismatch.value) and "SC-OTHER" in str(mismatch.value)


def test_a_push_does_not_resume_on_another_board(boards: list[EmulatedBoard], tmp_path: Path) -> None:
    bundle = write_bundle(
        build_model_bundle(MODELS / "lane", precision="int8", version="7.0.0", security_counter=1),
        tmp_path / "lane.scb",
    )
    first = _board(boards, tmp_path, "SC-FIRST", "--throttle", "115200")  # slow: the push is still running
    outcome: dict[str, object] = {}
    seen: list[updates.PushProgress] = []
    with seedcam.open(str(tmp_path / "sensor"), timeout=10, reconnect_interval=0.1) as sensor:

        def push() -> None:
            try:
                outcome["result"] = updates.push_bundle(sensor, bundle, progress=seen.append, timeout=3)
            except Exception as exc:  # noqa: BLE001 - reported below
                outcome["error"] = exc

        pusher = threading.Thread(target=push)
        pusher.start()
        wait_until(lambda: seen and seen[-1].acked >= 30_000, 30, "part of the payload on the first board")
        first.kill()
        other = _board(boards, tmp_path, "SC-OTHER")
        pusher.join(60)
        assert not pusher.is_alive()
    error = outcome.get("error")
    assert isinstance(error, DeviceMismatch), outcome
    assert (error.expected_serial, error.found_serial) == ("SC-FIRST", "SC-OTHER")
    # the other board got none of it: nothing staged, nothing installed
    assert not list((tmp_path / "SC-OTHER" / "storage").rglob("*.part"))
    with seedcam.open(str(tmp_path / "sensor"), timeout=10) as sensor:
        assert sensor.info().serial_number == "SC-OTHER"
        assert all(slot.version != "7.0.0" for group in updates.list_slots(sensor) for slot in group.slots)
        assert all(model.version != "7.0.0" for model in sensor.models())
    assert other.proc is not None and other.proc.poll() is None

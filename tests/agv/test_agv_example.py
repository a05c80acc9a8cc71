"""examples/agv_car.py against the emulated board, with a pty standing in for the motor controller."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
from helpers import REPO

from seedcam.agv.serial_motor import checksum

pytestmark = pytest.mark.e2e


def test_example_drives_the_motor_controller_and_stops_it_at_the_end(firmware_factory) -> None:  # noqa: ANN001
    fw = firmware_factory("--fps", "20")  # the synthetic drive: a lane that wanders smoothly
    master, slave = os.openpty()
    received = bytearray()
    done = threading.Event()

    def drain() -> None:  # the motor controller's side of the wire
        while not done.is_set():
            try:
                received.extend(os.read(master, 4096))
            except OSError:
                return

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        proc = subprocess.run(
            [sys.executable, str(REPO / "examples" / "agv_car.py"), "--sensor", fw.link,
             "--motor", os.ttyname(slave), "--duration", "4"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        done.set()
        os.close(slave)
        os.close(master)
        reader.join(2.0)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in bytes(received).split(b"\n") if line.startswith(b"$D,")]
    speeds = [int(line.split(b",")[2]) for line in lines]
    assert len(lines) > 50
    assert max(speeds) > 100, "the car drove (mm/s)"
    assert speeds[-1] == 0, "the last command stops the car"
    assert "tasks lane" in proc.stdout
    for line in lines:  # every line is well formed
        body, _, given = line.decode().strip()[1:].rpartition("*")
        assert checksum(body) == given

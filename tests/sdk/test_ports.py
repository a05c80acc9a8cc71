"""Port discovery: conversion from pyserial and recognition of seedcam sensors."""

from __future__ import annotations

import dataclasses

import pytest
import serial.tools.list_ports
from serial.tools.list_ports_common import ListPortInfo

from seedcam import ports
from seedcam.ports import (
    SEEDCAM_PID,
    SEEDCAM_VID,
    PortInfo,
    is_seedcam,
    list_ports,
    seedcam_ports,
)


def _fake(device: str, vid: int | None = None, pid: int | None = None, **attrs: str) -> ListPortInfo:
    info = ListPortInfo(device, skip_link_detection=True)
    info.vid, info.pid = vid, pid
    for key, value in attrs.items():
        setattr(info, key, value)
    return info


@pytest.fixture
def fake_ports(monkeypatch: pytest.MonkeyPatch) -> None:
    found = [
        _fake("/dev/ttyS0"),
        _fake(
            "/dev/ttyACM1",
            SEEDCAM_VID,
            SEEDCAM_PID,
            serial_number="SC-0042",
            description="seedcam sensor",
            manufacturer="seedcam",
            location="1-1.2:1.0",
        ),
        _fake("/dev/ttyACM0", 0x2341, 0x0043, description="Arduino Uno"),
        _fake("/dev/ttyUSB0", SEEDCAM_VID, 0x0001),  # same vendor, other product
    ]
    monkeypatch.setattr(serial.tools.list_ports, "comports", lambda *a, **k: found)


def test_list_ports_converts_and_sorts(fake_ports: None) -> None:
    found = list_ports()
    assert [p.device for p in found] == [
        "/dev/ttyACM0",
        "/dev/ttyACM1",
        "/dev/ttyS0",
        "/dev/ttyUSB0",
    ]
    assert found[1] == PortInfo(
        device="/dev/ttyACM1",
        vid=0x1209,
        pid=0x5EED,
        serial_number="SC-0042",
        description="seedcam sensor",
        manufacturer="seedcam",
        location="1-1.2:1.0",
    )
    assert found[2].vid is None and found[2].description is None  # pyserial says "n/a"


def test_is_seedcam_matches_vid_and_pid(fake_ports: None) -> None:
    assert [p.device for p in seedcam_ports()] == ["/dev/ttyACM1"]
    assert is_seedcam(_fake("/dev/x", SEEDCAM_VID, SEEDCAM_PID))  # pyserial objects work too
    assert not is_seedcam(PortInfo("/dev/y", SEEDCAM_VID, None))


def test_port_info_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        PortInfo("/dev/ttyACM0").vid = 1  # type: ignore[misc]


def test_list_ports_on_this_machine_does_not_fail() -> None:
    assert all(isinstance(p, PortInfo) for p in ports.list_ports())

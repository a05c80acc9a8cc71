"""Serial port discovery: which ports exist and which of them are seedcam sensors.

Built on ``serial.tools.list_ports.comports()``; a sensor is recognised by its
USB VID/PID. We use the pid.codes open-source test range until a PID is
allocated.
"""

from __future__ import annotations

from typing import Any

from serial.tools import list_ports as pyserial_ports

from seedcam.port_info import SEEDCAM_PID, SEEDCAM_VID, VENDOR_CLASS, PortInfo
from seedcam.transport.usb import list_usb_sensors

__all__ = [
    "SEEDCAM_PID",
    "SEEDCAM_VID",
    "VENDOR_CLASS",
    "PortInfo",
    "is_seedcam",
    "list_ports",
    "seedcam_ports",
]


def list_ports() -> list[PortInfo]:
    """List the serial ports of this machine, sorted by device name.

    Returns:
        Every port pyserial finds, seedcam or not.
    """
    return sorted((PortInfo.from_pyserial(p) for p in pyserial_ports.comports()), key=lambda p: p.device)


def is_seedcam(port: PortInfo | Any) -> bool:
    """True when ``port`` (a :class:`PortInfo` or pyserial ``ListPortInfo``) is a seedcam sensor."""
    return port.vid == SEEDCAM_VID and port.pid == SEEDCAM_PID


def seedcam_ports() -> list[PortInfo]:
    """The seedcam sensors: serial ports (CDC-ACM) by VID/PID, then raw USB bulk interfaces.

    A raw USB entry's ``device`` is its ``usb://VID:PID/SERIAL`` URL; it is
    listed only when pyusb and libusb are installed (``seedcam[usb]``). One
    sensor with both functions appears twice, with the same serial number.
    """
    return [p for p in list_ports() if is_seedcam(p)] + list_usb_sensors()

"""Serial port discovery: which ports exist and which of them are seedcam sensors.

Built on ``serial.tools.list_ports.comports()``; a sensor is recognised by its
USB VID/PID. We use the pid.codes open-source test range until a PID is
allocated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "SEEDCAM_PID",
    "SEEDCAM_VID",
    "VENDOR_CLASS",
    "PortInfo",
    "is_seedcam",
    "list_ports",
    "seedcam_ports",
]

#: USB vendor id: pid.codes, the open-source hardware vendor id.
SEEDCAM_VID = 0x1209
#: USB product id inside the pid.codes test range.
SEEDCAM_PID = 0x5EED
#: ``bInterfaceClass`` of the sensor's vendor-specific bulk interface (what the host looks for).
VENDOR_CLASS = 0xFF


@dataclass(frozen=True)
class PortInfo:
    """One serial port, as the operating system describes it.

    Attributes:
        device: the path or name to open (``/dev/ttyACM0``, ``COM3``).
        vid: USB vendor id, or None for a non-USB port.
        pid: USB product id, or None.
        serial_number: the USB serial number string, or None.
        description: a human-readable description, or None.
        manufacturer: the USB manufacturer string, or None.
        location: the USB bus location (``1-1.2:1.0``), or None.
    """

    device: str
    vid: int | None = None
    pid: int | None = None
    serial_number: str | None = None
    description: str | None = None
    manufacturer: str | None = None
    location: str | None = None

    @classmethod
    def from_pyserial(cls, info: Any) -> PortInfo:
        """Convert a pyserial ``ListPortInfo``."""
        description = (
            info.description if info.description not in (None, "", "n/a") else None
        )
        return cls(
            device=info.device,
            vid=info.vid,
            pid=info.pid,
            serial_number=info.serial_number,
            description=description,
            manufacturer=info.manufacturer,
            location=info.location,
        )


def list_ports() -> list[PortInfo]:
    """List the serial ports of this machine, sorted by device name.

    Returns:
        Every port pyserial finds, seedcam or not.
    """
    from serial.tools.list_ports import comports

    return sorted(
        (PortInfo.from_pyserial(p) for p in comports()), key=lambda p: p.device
    )


def is_seedcam(port: PortInfo | Any) -> bool:
    """True when ``port`` (a :class:`PortInfo` or pyserial ``ListPortInfo``) is a seedcam sensor."""
    return port.vid == SEEDCAM_VID and port.pid == SEEDCAM_PID


def seedcam_ports() -> list[PortInfo]:
    """The seedcam sensors: serial ports (CDC-ACM) by VID/PID, then raw USB bulk interfaces.

    A raw USB entry's ``device`` is its ``usb://VID:PID/SERIAL`` URL; it is
    listed only when pyusb and libusb are installed (``seedcam[usb]``). One
    sensor with both functions appears twice, with the same serial number.
    """
    from seedcam.transport.usb import list_usb_sensors

    return [p for p in list_ports() if is_seedcam(p)] + list_usb_sensors()

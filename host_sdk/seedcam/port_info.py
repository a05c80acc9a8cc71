"""What a serial port or USB interface is, and the USB ids that make it a seedcam sensor.

A leaf module: :mod:`seedcam.ports` (discovery) and :mod:`seedcam.transport.usb`
(the raw bulk transport, which lists its own interfaces) both build on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["SEEDCAM_PID", "SEEDCAM_VID", "VENDOR_CLASS", "PortInfo"]

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
        description = info.description if info.description not in (None, "", "n/a") else None
        return cls(
            device=info.device,
            vid=info.vid,
            pid=info.pid,
            serial_number=info.serial_number,
            description=description,
            manufacturer=info.manufacturer,
            location=info.location,
        )

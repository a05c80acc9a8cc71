"""Which URL to open when the user names none."""

from __future__ import annotations

import os
from pathlib import Path

from seedcam import ports as port_discovery
from seedcam.errors import NoSensorFound
from seedcam.port_info import PortInfo

__all__ = ["PORT_ENV", "resolve_url"]

#: environment variable holding the default port or URL (like esptool's ESPTOOL_PORT)
PORT_ENV = "SEEDCAM_PORT"


def resolve_url(url: str | None = None, serial: str | None = None) -> str:
    """Return ``url``, else ``$SEEDCAM_PORT``, else the only seedcam sensor plugged in.

    One sensor can be reachable two ways (its CDC-ACM serial port and its raw
    USB bulk interface, same serial number); it counts once, and the bulk
    ``usb://`` URL is preferred: it is faster and finds the sensor again by
    serial number after a re-plug.

    Args:
        url: an explicit port or URL (wins over everything).
        serial: pick the sensor with this USB serial number among those found.

    Raises:
        NoSensorFound: no URL given and zero or several sensors are present
            (the message lists the candidates), or none has ``serial``.
    """
    if url:
        return url
    env = os.environ.get(PORT_ENV, "").strip()
    if env and not serial:
        return env
    by_serial: dict[str, list[PortInfo]] = {}
    for index, port in enumerate(port_discovery.seedcam_ports()):
        by_serial.setdefault(port.serial_number or f"?{index}", []).append(port)
    if serial is not None:
        by_serial = {key: ports for key, ports in by_serial.items() if key == serial}
        if not by_serial:
            raise NoSensorFound(f"no seedcam sensor with serial number {serial} found")
    if len(by_serial) == 1:
        return _best_url(next(iter(by_serial.values())))
    if not by_serial:
        raise NoSensorFound(f"no seedcam sensor found; pass a port or URL, or set {PORT_ENV}")
    names = ", ".join(
        f"{_best_url(ports)} (serial {key if not key.startswith('?') else '?'})" for key, ports in by_serial.items()
    )
    raise NoSensorFound(f"several sensors found, choose one (--port, or --serial): {names}")


def _best_url(ports: list[PortInfo]) -> str:
    """The URL to open for one sensor: raw USB if it has it, else a stable name of its serial port."""
    for port in ports:
        if port.device.startswith("usb://"):
            return port.device
    device = ports[0].device
    by_id = Path("/dev/serial/by-id")  # udev's names survive re-plugging; ttyACM numbers do not
    if by_id.is_dir():
        for link in sorted(by_id.iterdir()):
            if os.path.realpath(link) == os.path.realpath(device):
                return str(link)
    return device

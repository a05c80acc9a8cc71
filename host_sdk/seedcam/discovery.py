"""Which URL to open when the user names none."""

from __future__ import annotations

import os

from seedcam.errors import NoSensorFound

__all__ = ["PORT_ENV", "resolve_url"]

#: environment variable holding the default port or URL (like esptool's ESPTOOL_PORT)
PORT_ENV = "SEEDCAM_PORT"


def resolve_url(url: str | None = None) -> str:
    """Return ``url``, else ``$SEEDCAM_PORT``, else the only seedcam sensor plugged in.

    Raises:
        NoSensorFound: no URL given and zero or several sensors are present
            (the message lists the candidates).
    """
    if url:
        return url
    env = os.environ.get(PORT_ENV, "").strip()
    if env:
        return env
    from seedcam.ports import seedcam_ports

    found = seedcam_ports()
    if len(found) == 1:
        return found[0].device
    if not found:
        raise NoSensorFound(f"no seedcam sensor found; pass a port or URL, or set {PORT_ENV}")
    names = ", ".join(f"{p.device} (serial {p.serial_number or '?'})" for p in found)
    raise NoSensorFound(f"several sensors found, choose one: {names}")

"""Gadget-side echo for the USB VM tests: everything read from a link URL is written back.

Usage: ``python vm_echo.py URL READY_FILE`` with URL ``ffs:///dev/ffs-seedcam`` or
``/dev/ttyGS0``. Writes READY_FILE once the link is open (for FunctionFS: the
descriptors are written, so the gadget can be bound). Survives host
disconnects by reopening; SIGTERM ends it.
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

from seedcam.errors import LinkBroken, SensorError
from seedcam.transport import open_transport, register_backend

register_backend("ffs", "seedcam_firmware.usb.ffs:FfsTransport")


def main(url: str, ready: Path) -> int:
    """Echo until SIGTERM."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    transport = open_transport(url)
    ready.write_text("ready\n")
    while not stop.is_set():
        try:
            data = transport.read(65536, 0.2)
            if data:
                transport.write(data, 30.0)
        except LinkBroken:
            transport.close()
            while not stop.is_set():
                try:
                    transport = open_transport(url)
                    break
                except SensorError:
                    stop.wait(0.1)
    transport.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], Path(sys.argv[2])))

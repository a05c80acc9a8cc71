"""Byte pipes chosen by URL, shared by the host SDK and the firmware daemon.

=========================== ============================================ =====================
URL                         transport                                    options
=========================== ============================================ =====================
``/dev/ttyACM0``, ``COM3``  serial port via pyserial (also a pty slave   ``baudrate`` (921600),
(a plain path, no scheme)   or a symlink to one)                         ``exclusive``
``socket://host:port``      TCP client                                   ``connect_timeout``
``tcp-listen://host:port``  TCP server, one client at a time; drops      -
                            writes while nobody is connected
``loop://``                 loopback: writes are read back               ``capacity``
``pair://NAME``             one end of an in-process pair; the second    ``capacity``
                            open of NAME gets the other end
``pty://[/link/path]``      pty master for the emulated board, with an   -
                            optional stable symlink to the slave
``usb://VID:PID/SERIAL``    the sensor's raw USB bulk interface (pyusb, -
                            ``seedcam[usb]``), found again by serial
``replay://run.mcap``       a recording played back as the sensor       ``?speed=2|max``,
                            (``seedcam[record]``, docs/record.md)        ``?loop=1``
=========================== ============================================ =====================

Any URL may end in ``?throttle=BAUD`` to limit both directions to a UART's
line rate (8N1), e.g. ``pty:///tmp/seedcam0?throttle=115200``; see
:class:`~seedcam.transport.throttle.ThrottledTransport`. A serial port's URL may
carry ``?baud=BAUD``, the rate its UART is opened at (``/dev/ttyUSB0?baud=115200``;
it wins over a ``baudrate`` option), and any URL ``?trace=1``, which logs every
byte in hex on the ``seedcam.trace`` logger
(:class:`~seedcam.transport.trace.TracingTransport`). Options join with ``&``.

Backends are imported lazily from a scheme → ``"module:Class"`` table, so the
SDK imports on a board with only pyserial. Other installed packages add schemes
through the ``seedcam.transports`` entry-point group (the firmware adds
``ffs``, its USB gadget's vendor bulk interface)::

    [project.entry-points."seedcam.transports"]
    ffs = "seedcam_firmware.usb.ffs:FfsTransport"

The group is read once, the first time a URL is opened or the table is listed,
and its targets are imported only when their scheme is opened; built-in schemes
and those added with :func:`register_backend` win over entry points.
"""

from __future__ import annotations

import functools
import importlib
import logging
import re
import threading
from importlib.metadata import entry_points
from typing import Any

from seedcam.transport.base import Transport
from seedcam.transport.memory import pair
from seedcam.transport.throttle import ThrottledTransport
from seedcam.transport.trace import TracingTransport
from seedcam.transport.url_options import parse_transport_url

__all__ = ["ENTRY_POINT_GROUP", "Transport", "backends", "open_transport", "pair", "register_backend"]

log = logging.getLogger(__name__)

#: The key for plain paths (no ``scheme://``).
_PATH = ""
#: The entry-point group through which installed packages add schemes.
ENTRY_POINT_GROUP = "seedcam.transports"

_BACKENDS: dict[str, str] = {
    _PATH: "seedcam.transport.serial_port:SerialTransport",
    "socket": "seedcam.transport.socket_tcp:SocketTransport",
    "tcp-listen": "seedcam.transport.socket_tcp:TcpListenTransport",
    "loop": "seedcam.transport.memory:LoopTransport",
    "pair": "seedcam.transport.memory:PairTransport",
    "pty": "seedcam.transport.pty_device:PtyDeviceTransport",
    "usb": "seedcam.transport.usb:UsbTransport",
    "replay": "seedcam.transport.replay:ReplayTransport",
}
_BACKENDS_LOCK = threading.Lock()

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")


def _well_formed(scheme: str, target: str) -> bool:
    return bool(_SCHEME.match(f"{scheme}://")) and ":" in target


def register_backend(scheme: str, target: str) -> None:
    """Map ``scheme://`` URLs to a transport class, imported on first use.

    Args:
        scheme: the URL scheme, without ``://``.
        target: ``"package.module:ClassName"``; the class must implement
            :meth:`Transport.from_url`.

    Raises:
        ValueError: the scheme or target is malformed.
    """
    if not _well_formed(scheme, target):
        raise ValueError(f"bad backend registration {scheme!r} -> {target!r}")
    with _BACKENDS_LOCK:
        _BACKENDS[scheme.lower()] = target


@functools.cache
def _entry_point_backends() -> dict[str, str]:
    """The schemes installed packages add through the ``seedcam.transports`` entry points (read once)."""
    found: dict[str, str] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if _well_formed(point.name, point.value):
            found.setdefault(point.name.lower(), point.value)
        else:
            log.warning("ignored the malformed %s entry point %s = %r", ENTRY_POINT_GROUP, point.name, point.value)
    return found


def backends() -> dict[str, str]:
    """The registered schemes (``""`` = plain path) and their ``"module:Class"`` targets."""
    plugins = _entry_point_backends()
    with _BACKENDS_LOCK:
        return {**plugins, **_BACKENDS}  # built-in and registered schemes win


def _load(scheme: str) -> type[Transport]:
    table = backends()
    target = table.get(scheme)
    if target is None:
        known = ", ".join(sorted(f"{s}://" for s in table if s))
        raise ValueError(f"unknown transport scheme {scheme + '://'!r}; known: {known} or a device path")
    module_name, _, class_name = target.partition(":")
    cls: type[Transport] = getattr(importlib.import_module(module_name), class_name)
    return cls


def open_transport(url: str, **options: Any) -> Transport:
    """Open the transport a URL names (see the module table).

    Args:
        url: a device path or ``scheme://...``, optionally with ``?throttle=BAUD``,
            ``?baud=BAUD`` (serial ports only) and ``?trace=1``.
        **options: passed to the backend (see the table).

    Returns:
        The open transport; close it (or use ``with``).

    Raises:
        LinkBroken: the device, host or pty cannot be opened; the message
            names it.
        ValueError: unknown scheme, malformed URL, bad option, or ``?baud=`` on a URL
            that is not a serial port.
    """
    parsed = parse_transport_url(url)
    base = parsed.base
    match = _SCHEME.match(base)
    scheme = match.group(1).lower() if match else _PATH
    if parsed.baud is not None:
        if scheme != _PATH:
            raise ValueError(f"{url!r}: ?baud= is for serial ports (a device path), not {scheme}://")
        options = {**options, "baudrate": parsed.baud}
    backend = _load(scheme)
    try:
        transport = backend.from_url(base, **options)
    except TypeError as exc:  # an option this backend does not take
        raise ValueError(f"{url!r}: bad option for {backend.__name__} ({', '.join(sorted(options))}): {exc}") from exc
    if parsed.throttle is not None:
        transport = ThrottledTransport(transport, parsed.throttle, url=url)
    if parsed.trace:
        transport = TracingTransport(transport, url=url)
    return transport

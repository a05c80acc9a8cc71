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
=========================== ============================================ =====================

Any URL may end in ``?throttle=BAUD`` to limit both directions to a UART's
line rate (8N1), e.g. ``pty:///tmp/seedcam0?throttle=115200``; see
:class:`~seedcam.transport.throttle.ThrottledTransport`.

Backends are imported lazily from a scheme → ``"module:Class"`` table, so the
SDK imports on a board with only pyserial, and other packages can add schemes
with :func:`register_backend` (the firmware adds ``ffs``).
"""

from __future__ import annotations

import importlib
import re
import threading
from typing import Any
from urllib.parse import parse_qsl

from seedcam.transport.base import Transport
from seedcam.transport.memory import pair

__all__ = ["Transport", "backends", "open_transport", "pair", "register_backend"]

#: The key for plain paths (no ``scheme://``).
_PATH = ""

_BACKENDS: dict[str, str] = {
    _PATH: "seedcam.transport.serial_port:SerialTransport",
    "socket": "seedcam.transport.socket_tcp:SocketTransport",
    "tcp-listen": "seedcam.transport.socket_tcp:TcpListenTransport",
    "loop": "seedcam.transport.memory:LoopTransport",
    "pair": "seedcam.transport.memory:PairTransport",
    "pty": "seedcam.transport.pty_device:PtyDeviceTransport",
    "usb": "seedcam.transport.usb:UsbTransport",
}
_BACKENDS_LOCK = threading.Lock()

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")


def register_backend(scheme: str, target: str) -> None:
    """Map ``scheme://`` URLs to a transport class, imported on first use.

    Args:
        scheme: the URL scheme, without ``://``.
        target: ``"package.module:ClassName"``; the class must implement
            :meth:`Transport.from_url`.

    Raises:
        ValueError: the scheme or target is malformed.
    """
    if not _SCHEME.match(f"{scheme}://") or ":" not in target:
        raise ValueError(f"bad backend registration {scheme!r} -> {target!r}")
    with _BACKENDS_LOCK:
        _BACKENDS[scheme.lower()] = target


def backends() -> dict[str, str]:
    """The registered schemes (``""`` = plain path) and their ``"module:Class"`` targets."""
    with _BACKENDS_LOCK:
        return dict(_BACKENDS)


def _load(scheme: str) -> type[Transport]:
    with _BACKENDS_LOCK:
        target = _BACKENDS.get(scheme)
    if target is None:
        known = ", ".join(sorted(f"{s}://" for s in _BACKENDS if s))
        raise ValueError(
            f"unknown transport scheme {scheme + '://'!r}; known: {known} or a device path"
        )
    module_name, _, class_name = target.partition(":")
    cls: type[Transport] = getattr(importlib.import_module(module_name), class_name)
    return cls


def _split_query(url: str) -> tuple[str, dict[str, str]]:
    base, sep, query = url.partition("?")
    if not sep:
        return url, {}
    params: dict[str, str] = {}
    for key, value in parse_qsl(query, keep_blank_values=True, strict_parsing=True):
        if key in params:
            raise ValueError(f"query parameter {key!r} given twice in {url!r}")
        params[key] = value
    unknown = set(params) - {"throttle"}
    if unknown:
        raise ValueError(
            f"unknown query parameter(s) {sorted(unknown)} in {url!r}; known: throttle"
        )
    return base, params


def open_transport(url: str, **options: Any) -> Transport:
    """Open the transport a URL names (see the module table).

    Args:
        url: a device path or ``scheme://...``, optionally with ``?throttle=BAUD``.
        **options: passed to the backend (see the table).

    Returns:
        The open transport; close it (or use ``with``).

    Raises:
        LinkBroken: the device, host or pty cannot be opened; the message
            names it.
        ValueError: unknown scheme, malformed URL or bad option.
    """
    base, params = _split_query(url)
    match = _SCHEME.match(base)
    scheme = match.group(1).lower() if match else _PATH
    backend = _load(scheme)
    try:
        transport = backend.from_url(base, **options)
    except TypeError as exc:  # an option this backend does not take
        raise ValueError(f"{url!r}: bad option for {backend.__name__} ({', '.join(sorted(options))}): {exc}") from exc
    if "throttle" in params:
        from seedcam.transport.throttle import ThrottledTransport

        try:
            baud = int(params["throttle"])
            return ThrottledTransport(transport, baud, url=url)
        except ValueError as exc:
            transport.close()
            raise ValueError(f"bad throttle in {url!r}: {exc}") from exc
    return transport

"""Serial ports through pyserial: ``/dev/ttyUSB0``, ``/dev/ttyACM0``, ``COM3``, a pty slave.

pyserial opens and configures the port (baud rate, raw mode, exclusive lock).
On POSIX the I/O then runs on its non-blocking descriptor with ``poll`` and a
waker, so that a read returns as soon as any byte is there, ``close`` from
another thread unblocks it, and per-call timeouts need no ``tcsetattr``. A
vanished device (USB unplugged, pty master closed) reads as EIO or end of file
there, and is reported as :class:`LinkBroken`. Elsewhere (Windows) pyserial's
own blocking calls are used, with its cancel functions for ``close``.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import serial

from seedcam.errors import LinkBroken, SensorTimeout
from seedcam.transport import _fdio
from seedcam.transport.base import Transport, remaining

__all__ = ["DEFAULT_BAUDRATE", "SerialTransport"]

_log = logging.getLogger(__name__)

DEFAULT_BAUDRATE = 921600


class SerialTransport(Transport):
    """A serial port (or anything pyserial opens as one, such as a pty slave).

    Args:
        port: the device path (``/dev/ttyACM0``, ``/dev/pts/5``, a symlink) or
            a Windows port name (``COM3``).
        baudrate: line rate in bit/s; ignored by USB CDC-ACM and ptys.
        exclusive: take an exclusive lock (POSIX ``flock``) so that two
            programs cannot share the port; default True where supported.
        **serial_options: passed to :class:`serial.Serial` (``rtscts``...).

    Raises:
        LinkBroken: the port does not exist, is busy or cannot be configured;
            the message names the port and ``errno`` is set when known.
        ValueError: a bad option value.
    """

    def __init__(
        self,
        port: str,
        baudrate: int = DEFAULT_BAUDRATE,
        exclusive: bool | None = None,
        **serial_options: Any,
    ) -> None:
        super().__init__(port)
        self._posix = os.name == "posix"
        if exclusive is None:
            exclusive = self._posix
        if exclusive:
            serial_options["exclusive"] = True
        try:
            self._serial = serial.Serial(
                port,
                baudrate=baudrate,
                timeout=0 if self._posix else None,
                **serial_options,
            )
        except serial.SerialException as exc:
            code = exc.errno if isinstance(exc.errno, int) else None
            reason = os.strerror(code) if code else str(exc)
            raise LinkBroken(code, f"cannot open serial port {port}: {reason}") from exc
        self._waker: _fdio.Waker | None = None
        if self._posix:
            self._fd = self._serial.fileno()
            os.set_blocking(self._fd, False)
            self._waker = _fdio.Waker()
        _log.debug("opened %s at %d baud", port, baudrate)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> SerialTransport:
        """Open the serial port at the plain path ``url``.

        Raises:
            LinkBroken: see the class.
        """
        return cls(url, **options)

    def _read(self, max_bytes: int, deadline: float | None) -> bytes:
        if self._waker is not None:
            return _fdio.read_ready(
                self._fd,
                lambda n: os.read(self._fd, n),
                max_bytes,
                deadline,
                self._waker,
                self.url,
            )
        return self._read_portable(max_bytes, deadline)

    def _write(self, data: memoryview, deadline: float | None) -> None:
        if self._waker is not None:
            _fdio.write_all(
                self._fd,
                lambda b: os.write(self._fd, b),
                data,
                deadline,
                self._waker,
                self.url,
            )
            return
        self._write_portable(data, deadline)

    def _wake(self) -> None:
        if self._waker is not None:
            self._waker.wake()
            return
        for cancel in ("cancel_read", "cancel_write"):
            if hasattr(self._serial, cancel):
                getattr(self._serial, cancel)()

    def _close(self) -> None:
        try:
            self._serial.close()
        except (serial.SerialException, OSError):
            _log.debug(
                "%s: error while closing (device already gone?)",
                self.url,
                exc_info=True,
            )
        if self._waker is not None:
            self._waker.close()

    # -- non-POSIX: pyserial's own timeouts ------------------------------------

    def _read_portable(self, max_bytes: int, deadline: float | None) -> bytes:
        try:
            self._serial.timeout = remaining(deadline)
            first = self._serial.read(1)
            if not first:
                if self._closed:
                    raise LinkBroken(f"{self.url}: transport closed")
                return b""
            more = min(self._serial.in_waiting, max_bytes - 1)
            return first + (self._serial.read(more) if more else b"")
        except (serial.SerialException, OSError) as exc:
            raise LinkBroken(f"{self.url}: read failed: {exc}") from exc

    def _write_portable(self, data: memoryview, deadline: float | None) -> None:
        try:
            self._serial.write_timeout = remaining(deadline)
            written = self._serial.write(data)
        except serial.SerialTimeoutException as exc:
            raise SensorTimeout(f"{self.url}: write timed out") from exc
        except (serial.SerialException, OSError) as exc:
            raise LinkBroken(f"{self.url}: write failed: {exc}") from exc
        if written is not None and written < len(data):
            raise LinkBroken(f"{self.url}: write cancelled after {written} of {len(data)} bytes")

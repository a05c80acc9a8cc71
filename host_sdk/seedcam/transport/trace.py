"""A transport wrapper that logs every byte it reads and writes, like pyserial's ``spy://``.

Selected with ``?trace=1`` on any URL (``seedcam --trace`` adds it), e.g.
``/dev/ttyACM0?trace=1``; :func:`~seedcam.transport.open_transport` wraps the
transport in :class:`TracingTransport`. Each ``read`` and ``write`` is one DEBUG
record on the :data:`TRACE_LOGGER` logger: direction, URL, byte count and the
bytes in hex, 32 to a line with their offset::

    seedcam.trace: TX /dev/ttyACM0 9 bytes
      0000  00 05 01 02 03 04 05 06 00

Nothing is logged (nor formatted) unless that logger is enabled for DEBUG.
"""

from __future__ import annotations

import logging

from seedcam.transport.base import Transport, WrappingTransport, remaining

__all__ = ["TRACE_LOGGER", "TracingTransport", "hexdump"]

#: the logger the frames go to (DEBUG); ``seedcam --trace`` enables it
TRACE_LOGGER = "seedcam.trace"
_BYTES_PER_LINE = 32

_log = logging.getLogger(TRACE_LOGGER)


def hexdump(data: bytes, bytes_per_line: int = _BYTES_PER_LINE) -> str:
    """``data`` as lines of ``OFFSET  HH HH ...`` (offset in hex), joined by newlines."""
    return "\n".join(
        f"  {start:04x}  {data[start : start + bytes_per_line].hex(' ')}"
        for start in range(0, len(data), bytes_per_line)
    )


class TracingTransport(WrappingTransport):
    """Pass everything through to ``inner`` and log it at DEBUG on :data:`TRACE_LOGGER`.

    Args:
        inner: the transport to wrap; closed with this one.
        url: the URL to report; defaults to ``inner.url``.
        logger: where the records go (default :data:`TRACE_LOGGER`).
    """

    query = "trace=1"

    def __init__(self, inner: Transport, url: str | None = None, logger: logging.Logger | None = None) -> None:
        super().__init__(inner, url or inner.url)
        self._log = logger or _log

    def _trace(self, direction: str, data: bytes) -> None:
        if self._log.isEnabledFor(logging.DEBUG):
            self._log.debug("%s %s %d bytes\n%s", direction, self.inner.url, len(data), hexdump(data))

    def _read(self, max_bytes: int, deadline: float | None) -> bytes:
        data = self.inner.read(max_bytes, remaining(deadline))
        if data:
            self._trace("RX", data)
        return data

    def _write(self, data: memoryview, deadline: float | None) -> None:
        payload = bytes(data)
        self._trace("TX", payload)  # before: a write that fails half-way was still attempted
        self.inner.write(payload, remaining(deadline))

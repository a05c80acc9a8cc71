"""A line-rate limiter that makes any transport as slow as a real UART.

Selected with a URL query on any URL, e.g. ``socket://localhost:7000?throttle=115200``
or ``pty:///tmp/seedcam0?throttle=921600``; :func:`open_transport` strips the
query and wraps the inner transport in :class:`ThrottledTransport`.

The model is the wire itself: each direction has a serialisation clock that
says when the line becomes free. A byte takes ``bits_per_byte / baud`` seconds
(8N1 = 10 bits) and is handed on only once its last bit has "arrived". Bytes
are handed on in slices of about :data:`QUANTUM_S` of line time (at least one
byte), so the added latency is one slice time plus scheduling, and because
sleeps are scheduled against the clock, not against "now", oversleeping is
caught up in the next slice and the long-run rate is exact. Idle line time is
never banked: a write after a pause starts from the present.
"""

from __future__ import annotations

import threading
import time

from seedcam.errors import LinkBroken, SensorTimeout
from seedcam.transport.base import Transport, WrappingTransport, remaining

__all__ = ["QUANTUM_S", "ThrottledTransport"]

#: Line time per slice handed to the inner transport: a compromise between
#: latency (a slice is delivered when its last byte is due) and CPU (one
#: wake-up per slice).
QUANTUM_S = 0.001

#: Bytes pulled from the inner transport at once on the read side.
_RX_CHUNK = 4096


class ThrottledTransport(WrappingTransport):
    """Limit both directions of ``inner`` to a UART's line rate.

    Writing: bytes reach ``inner`` (and so the peer) no faster than the line
    rate. Reading: bytes from ``inner`` are released to the caller no faster
    than the line rate, which models the other direction when the peer is not
    throttled itself (throttling both ends costs only one slice of latency).

    Args:
        inner: the transport to wrap; closed with this one.
        baud: line rate in bit/s (> 0).
        bits_per_byte: bits on the wire per byte, 10 for 8N1.
        url: the URL to report; defaults to ``inner.url?throttle=baud``.

    Raises:
        ValueError: ``baud`` or ``bits_per_byte`` is not positive.
    """

    query = "throttle=BAUD"

    def __init__(
        self,
        inner: Transport,
        baud: int,
        bits_per_byte: int = 10,
        url: str | None = None,
    ) -> None:
        if baud <= 0 or bits_per_byte <= 0:
            raise ValueError(f"baud and bits_per_byte must be > 0, got {baud!r}, {bits_per_byte!r}")
        super().__init__(inner, url or f"{inner.url}?throttle={baud}")
        self.baud = baud
        self.byte_time = bits_per_byte / baud
        self._slice = max(1, int(QUANTUM_S / self.byte_time))
        self._stop = threading.Event()
        self._tx_free_at = 0.0  # monotonic time the outgoing line becomes idle
        self._rx_buf = bytearray()
        self._rx_head_due = 0.0  # when the first byte in _rx_buf has fully arrived

    def _sleep_until(self, when: float, deadline: float | None) -> bool:
        """Sleep until ``when``; False if the deadline comes first (having slept to it)."""
        late = deadline is not None and when > deadline
        target = deadline if deadline is not None and late else when
        delay = target - time.monotonic()
        if delay > 0 and self._stop.wait(delay):
            raise LinkBroken(f"{self.url}: transport closed")
        return not late

    def _write(self, data: memoryview, deadline: float | None) -> None:
        clock = max(time.monotonic(), self._tx_free_at)
        for start in range(0, len(data), self._slice):
            piece = data[start : start + self._slice]
            due = clock + len(piece) * self.byte_time
            if not self._sleep_until(due, deadline):
                raise SensorTimeout(
                    f"{self.url}: wrote {start} of {len(data)} bytes before the timeout "
                    f"(the line needs {len(data) * self.byte_time:.3f} s)"
                )
            self.inner.write(bytes(piece), remaining(deadline))
            clock = due
            self._tx_free_at = clock

    def _read(self, max_bytes: int, deadline: float | None) -> bytes:
        if not self._rx_buf:
            data = self.inner.read(max(max_bytes, _RX_CHUNK), remaining(deadline))
            if not data:
                return b""
            # The line cannot deliver these bytes sooner than their line time
            # after the previous ones ended, nor before we saw them.
            prev_end = self._rx_head_due - self.byte_time
            self._rx_head_due = max(time.monotonic(), prev_end) + self.byte_time
            self._rx_buf += data
        if not self._sleep_until(self._rx_head_due, deadline):
            return b""
        arrived = 1 + int((time.monotonic() - self._rx_head_due) / self.byte_time)
        count = min(arrived, max_bytes, len(self._rx_buf))
        out = bytes(self._rx_buf[:count])
        del self._rx_buf[:count]
        self._rx_head_due += count * self.byte_time
        return out

    def _wake(self) -> None:
        self._stop.set()
        super()._wake()

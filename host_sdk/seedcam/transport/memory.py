"""In-process transports: ``loop://`` (loopback) and ``pair://NAME`` (connected pair).

Both are built on one bounded, thread-safe byte queue per direction, so they
behave like a real link: reads wait with a timeout, a writer that outruns its
reader waits for space (and times out), and closing one end of a pair lets the
other read what was already sent before it raises :class:`~seedcam.errors.PeerClosed`.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from seedcam.errors import LinkBroken, PeerClosed, SensorTimeout
from seedcam.transport.base import Transport, remaining

__all__ = ["DEFAULT_CAPACITY", "LoopTransport", "PairTransport", "pair"]

#: Bytes one direction buffers before a writer has to wait for the reader.
DEFAULT_CAPACITY = 1 << 20


class _ByteQueue:
    """One direction of an in-memory link."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity!r}")
        self._capacity = capacity
        self._buf = bytearray()
        self._cond = threading.Condition()
        self._reader_closed = False
        self._writer_closed = False

    def close_reader(self) -> None:
        with self._cond:
            self._reader_closed = True
            self._cond.notify_all()

    def close_writer(self) -> None:
        with self._cond:
            self._writer_closed = True
            self._cond.notify_all()

    def get(self, max_bytes: int, deadline: float | None, name: str) -> bytes:
        with self._cond:
            while not self._buf:
                if self._reader_closed:
                    raise LinkBroken(f"{name}: transport closed")
                if self._writer_closed:
                    raise PeerClosed(f"{name}: peer closed the link")
                left = remaining(deadline)
                if left == 0.0:
                    return b""
                self._cond.wait(left)
            if self._reader_closed:
                raise LinkBroken(f"{name}: transport closed")
            out = bytes(self._buf[:max_bytes])
            del self._buf[:max_bytes]
            self._cond.notify_all()
            return out

    def put(self, data: memoryview, deadline: float | None, name: str) -> None:
        view = data
        with self._cond:
            while view:
                if self._writer_closed:
                    raise LinkBroken(f"{name}: transport closed during write")
                if self._reader_closed:
                    raise PeerClosed(f"{name}: peer closed the link")
                space = self._capacity - len(self._buf)
                if space > 0:
                    self._buf += view[:space]
                    view = view[space:]
                    self._cond.notify_all()
                    continue
                left = remaining(deadline)
                if left == 0.0:
                    raise SensorTimeout(
                        f"{name}: wrote {len(data) - len(view)} of {len(data)} bytes "
                        "before the timeout (is anyone reading?)"
                    )
                self._cond.wait(left)


class _QueueTransport(Transport):
    def __init__(self, url: str, rx: _ByteQueue, tx: _ByteQueue) -> None:
        super().__init__(url)
        self._rx = rx
        self._tx = tx

    def _read(self, max_bytes: int, deadline: float | None) -> bytes:
        return self._rx.get(max_bytes, deadline, self.url)

    def _write(self, data: memoryview, deadline: float | None) -> None:
        self._tx.put(data, deadline, self.url)

    def _wake(self) -> None:
        self._rx.close_reader()
        self._tx.close_writer()

    def _close(self) -> None:
        pass


class LoopTransport(_QueueTransport):
    """``loop://``: what is written is read back, as pyserial's ``loop://``.

    Args:
        url: the URL to report.
        capacity: bytes buffered before ``write`` waits for a ``read``.
    """

    def __init__(self, url: str = "loop://", capacity: int = DEFAULT_CAPACITY) -> None:
        queue = _ByteQueue(capacity)
        super().__init__(url, queue, queue)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> LoopTransport:
        """Open ``loop://`` (options: ``capacity``).

        Raises:
            ValueError: anything follows ``loop://``.
        """
        if url != "loop://":
            raise ValueError(f"loop:// takes no host or path, got {url!r}")
        return cls(url, **options)


class PairTransport(_QueueTransport):
    """One end of an in-process connected pair; create pairs with :func:`pair`."""

    @classmethod
    def from_url(cls, url: str, **options: Any) -> PairTransport:
        """Open one end of the pair named in ``pair://NAME``.

        The first open of a name creates the pair and returns one end; the
        next open of the same name returns the other end. Once both ends were
        handed out (or the first end was closed), the name is free again.

        Raises:
            ValueError: the name is empty.
        """
        name = url[len("pair://") :]
        if not name:
            raise ValueError("pair:// needs a name, e.g. pair://sensor0")
        with _named_lock:
            waiting = _named.pop(name, None)
            if waiting is not None and not waiting[0].closed:
                return waiting[1]
            first, second = pair(name, **options)
            _named[name] = (first, second)
            return first


_named: dict[str, tuple[PairTransport, PairTransport]] = {}
_named_lock = threading.Lock()
_anonymous = itertools.count(1)


def pair(name: str | None = None, capacity: int = DEFAULT_CAPACITY) -> tuple[PairTransport, PairTransport]:
    """Create two connected in-process transports: bytes written to one are read from the other.

    Args:
        name: shown in the URLs (``pair://NAME``); a unique one when None.
            This does not register the name for :func:`open_transport`.
        capacity: bytes each direction buffers before ``write`` waits.

    Returns:
        The two ends ``(a, b)``.
    """
    label = name if name is not None else f"anonymous-{next(_anonymous)}"
    a_to_b = _ByteQueue(capacity)
    b_to_a = _ByteQueue(capacity)
    url = f"pair://{label}"
    return PairTransport(url, b_to_a, a_to_b), PairTransport(url, a_to_b, b_to_a)

"""Deadline-bounded I/O on non-blocking file descriptors and sockets.

Shared by the serial (POSIX), pty and TCP backends. Every wait also watches a
:class:`Waker`, which :meth:`Transport.close` fires so that a thread blocked in
a read or write returns at once.
"""

from __future__ import annotations

import errno
import select
import socket
from collections.abc import Callable, Sequence

from seedcam.errors import LinkBroken, PeerClosed, SensorTimeout
from seedcam.transport.base import remaining

__all__ = ["Waker", "read_ready", "wait_io", "write_all"]

#: read errors that mean the other end went away: the other side of a pty closed, a connection reset
_PEER_CLOSED_ERRNOS = frozenset({errno.EIO, errno.ECONNRESET})


class Waker:
    """A one-shot wake-up source that ``select``/``poll`` can watch (a socketpair)."""

    def __init__(self) -> None:
        self._r, self._w = socket.socketpair()
        self._r.setblocking(False)
        self._w.setblocking(False)

    def fileno(self) -> int:
        """The descriptor that becomes readable once :meth:`wake` was called."""
        return self._r.fileno()

    def wake(self) -> None:
        """Make :meth:`fileno` readable (for good: nothing ever drains it)."""
        try:
            self._w.send(b"\x00")
        except OSError:  # already woken and full, or closed
            pass

    def close(self) -> None:
        """Release both sockets."""
        self._r.close()
        self._w.close()


def wait_io(readers: Sequence[int], writers: Sequence[int], deadline: float | None) -> tuple[set[int], set[int]]:
    """Wait until a descriptor is ready or ``deadline`` passes.

    Args:
        readers: descriptors to watch for readability (or EOF/error).
        writers: descriptors to watch for writability.
        deadline: absolute ``time.monotonic()`` deadline, or None.

    Returns:
        The ready readers and writers (both empty on timeout).
    """
    timeout = remaining(deadline)
    if hasattr(select, "poll"):
        poller = select.poll()
        for fd in readers:
            poller.register(fd, select.POLLIN)
        for fd in writers:
            poller.register(fd, select.POLLOUT | (select.POLLIN if fd in readers else 0))
        events = poller.poll(None if timeout is None else int(timeout * 1000 + 0.999))
        bad = select.POLLHUP | select.POLLERR | select.POLLNVAL
        r = {fd for fd, ev in events if fd in readers and ev & (select.POLLIN | bad)}
        w = {fd for fd, ev in events if fd in writers and ev & (select.POLLOUT | bad)}
        return r, w
    rl, wl, _ = select.select(list(readers), list(writers), [], timeout)
    return set(rl), set(wl)


def read_ready(
    fd: int,
    recv: Callable[[int], bytes],
    max_bytes: int,
    deadline: float | None,
    waker: Waker,
    name: str,
) -> bytes:
    """Wait for ``fd`` to be readable and read what is there.

    Args:
        fd: the descriptor to wait on (non-blocking).
        recv: reads up to n bytes from it, e.g. ``sock.recv`` or ``os.read``
            bound to ``fd``.
        max_bytes: the most bytes to return.
        deadline: absolute monotonic deadline, or None.
        waker: fired by close.
        name: the transport's URL, for error messages.

    Returns:
        The bytes read, or ``b""`` on timeout.

    Raises:
        PeerClosed: end of file, EIO (the other side of a pty closed), connection reset.
        LinkBroken: another read error (ENXIO: the device is gone), or woken by close.
    """
    wake_fd = waker.fileno()
    while True:
        ready, _ = wait_io((fd, wake_fd), (), deadline)
        if wake_fd in ready:
            raise LinkBroken(f"{name}: transport closed")
        if not ready:
            return b""
        try:
            data = recv(max_bytes)
        except (BlockingIOError, InterruptedError):
            continue  # spurious wake-up
        except OSError as exc:
            kind = PeerClosed if exc.errno in _PEER_CLOSED_ERRNOS else LinkBroken
            raise kind(exc.errno, f"{name}: read failed: {exc.strerror or exc}") from exc
        if not data:
            raise PeerClosed(f"{name}: peer closed the link (end of file)")
        return data


def write_all(
    fd: int,
    send: Callable[[memoryview], int],
    data: memoryview,
    deadline: float | None,
    waker: Waker,
    name: str,
) -> None:
    """Write all of ``data`` to a non-blocking ``fd`` before ``deadline``.

    Args:
        fd: the descriptor to wait on for writability.
        send: writes a prefix of its argument and returns the count, raising
            BlockingIOError when the kernel buffer is full.
        data: the bytes to write.
        deadline: absolute monotonic deadline, or None.
        waker: fired by close.
        name: the transport's URL, for error messages.

    Raises:
        SensorTimeout: the deadline passed with bytes left to write.
        LinkBroken: the peer or device is gone, or woken by close.
    """
    wake_fd = waker.fileno()
    view = data
    while view:
        try:
            sent = send(view)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as exc:
            raise LinkBroken(exc.errno, f"{name}: write failed: {exc.strerror or exc}") from exc
        view = view[sent:]
        if not view:
            return
        if sent:
            continue
        readable, writable = wait_io((wake_fd,), (fd,), deadline)
        if wake_fd in readable:
            raise LinkBroken(f"{name}: transport closed during write")
        if not writable:
            raise SensorTimeout(
                f"{name}: wrote {len(data) - len(view)} of {len(data)} bytes before the timeout (is anyone reading?)"
            )

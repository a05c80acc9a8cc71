"""The transport base class: a byte pipe with timeouts, shared by SDK and firmware.

A backend implements only :meth:`Transport._read`, :meth:`Transport._write`,
:meth:`Transport._wake` and :meth:`Transport._close`; the base class owns the
argument checks, the closed state, the locks that keep concurrent writes whole
and the close protocol that unblocks a reader in another thread.
"""

from __future__ import annotations

import abc
import logging
import threading
import time
from types import TracebackType
from typing import Any, ClassVar, TypeVar

from seedcam.errors import LinkBroken, SensorTimeout

__all__ = ["Transport", "WrappingTransport", "deadline_after", "remaining"]

_log = logging.getLogger(__name__)

_T = TypeVar("_T", bound="Transport")

#: How long :meth:`Transport.close` waits for an in-flight read/write to leave
#: after waking it; backends wake them promptly, this only bounds a bug.
_CLOSE_GRACE_S = 2.0


def deadline_after(timeout: float | None) -> float | None:
    """Turn a relative timeout into an absolute ``time.monotonic()`` deadline.

    Args:
        timeout: seconds, or None for "wait forever".

    Returns:
        The deadline, or None when ``timeout`` is None.

    Raises:
        ValueError: ``timeout`` is negative.
    """
    if timeout is None:
        return None
    if timeout < 0:
        raise ValueError(f"timeout must be >= 0 or None, got {timeout!r}")
    return time.monotonic() + timeout


def remaining(deadline: float | None) -> float | None:
    """Seconds left until ``deadline`` (never negative), or None for no deadline."""
    if deadline is None:
        return None
    return max(0.0, deadline - time.monotonic())


def _acquire(lock: threading.Lock, deadline: float | None) -> bool:
    left = remaining(deadline)
    return lock.acquire(timeout=-1 if left is None else left)


class Transport(abc.ABC):
    """A bidirectional byte pipe chosen by URL (see :func:`open_transport`).

    ``read`` may run in one thread while ``write`` and ``close`` run in others.
    Concurrent writes never interleave: each ``write`` is delivered whole or
    fails. Use as a context manager to close it reliably.

    Attributes:
        url: the URL the transport was opened with (shown by ``repr``).
    """

    url: str

    def __init__(self, url: str) -> None:
        self.url = url
        self._closed = False
        self._state_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._released = threading.Event()  # set once the underlying port is closed

    # -- public API ----------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has been called."""
        return self._closed

    def read(self, max_bytes: int, timeout: float | None) -> bytes:
        """Wait up to ``timeout`` s for at least one byte; return what is available.

        Args:
            max_bytes: the most bytes to return (>= 1).
            timeout: seconds to wait; 0 polls; None waits until data or close.

        Returns:
            Between 1 and ``max_bytes`` bytes, or ``b""`` when the timeout expired.

        Raises:
            LinkBroken: the peer closed, the device vanished, or this transport
                is (or became, while waiting) closed.
            ValueError: ``max_bytes`` < 1 or ``timeout`` < 0.
        """
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be >= 1, got {max_bytes!r}")
        deadline = deadline_after(timeout)
        self._check_open()
        if not _acquire(self._read_lock, deadline):
            return b""
        try:
            self._check_open()
            return self._read(max_bytes, deadline)
        finally:
            self._read_lock.release()

    def write(self, data: bytes, timeout: float | None = 5.0) -> None:
        """Write all of ``data`` or raise.

        Args:
            data: the bytes to send (any bytes-like object).
            timeout: seconds allowed for the whole write; None waits forever.

        Raises:
            SensorTimeout: not everything could be written within ``timeout``
                (a prefix may have been sent).
            LinkBroken: the peer closed, the device vanished, or this transport
                is closed.
            ValueError: ``timeout`` < 0.
        """
        deadline = deadline_after(timeout)
        self._check_open()
        view = memoryview(data).cast("B")
        if not view:
            return
        if not _acquire(self._write_lock, deadline):
            raise SensorTimeout(f"{self.url}: another write did not finish within {timeout} s")
        try:
            self._check_open()
            self._write(view, deadline)
        finally:
            self._write_lock.release()

    def close(self) -> None:
        """Close the transport; idempotent and safe from any thread.

        A ``read`` or ``write`` blocked in another thread returns promptly
        (``read`` raises :class:`LinkBroken`). Every caller returns only once the port is
        released, also when another thread's close is still under way, so the port can be
        reopened (an exclusive serial port included) as soon as any ``close`` returned.
        """
        with self._state_lock:
            first = not self._closed
            self._closed = True
        if not first:
            # the first close is bounded by two grace periods plus the port's own close
            if not self._released.wait(timeout=3 * _CLOSE_GRACE_S):
                _log.warning("%s: another thread's close has not finished", self.url)
            return
        try:
            self._wake()
        except Exception:  # noqa: BLE001 - closing must not fail half-way
            _log.debug("%s: waking blocked I/O failed", self.url, exc_info=True)
        got_read = self._read_lock.acquire(timeout=_CLOSE_GRACE_S)
        got_write = self._write_lock.acquire(timeout=_CLOSE_GRACE_S)
        if not (got_read and got_write):
            _log.warning("%s: blocked I/O did not return on close; closing anyway", self.url)
        try:
            self._close()
        finally:
            self._released.set()
            if got_write:
                self._write_lock.release()
            if got_read:
                self._read_lock.release()
        _log.debug("%s: closed", self.url)

    def __enter__(self: _T) -> _T:  # noqa: PYI019 - typing.Self needs 3.11
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = " closed" if self._closed else ""
        return f"<{type(self).__name__} {self.url!r}{state}>"

    @classmethod
    def from_url(cls, url: str, **options: Any) -> Transport:
        """Open this backend from its URL (used by :func:`open_transport`).

        Raises:
            ValueError: the backend has no URL form, or the URL is malformed.
        """
        raise ValueError(f"{cls.__name__} cannot be opened from a URL ({url!r})")

    # -- backend hooks -------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise LinkBroken(f"{self.url}: transport is closed")

    @abc.abstractmethod
    def _read(self, max_bytes: int, deadline: float | None) -> bytes:
        """Read like :meth:`read`, until the absolute monotonic ``deadline``.

        Called with the read lock held and the transport open. Must return
        promptly after :meth:`_wake` and then raise :class:`LinkBroken`.
        """

    @abc.abstractmethod
    def _write(self, data: memoryview, deadline: float | None) -> None:
        """Write all of ``data`` (non-empty) before ``deadline``, like :meth:`write`.

        Called with the write lock held. Must return promptly after :meth:`_wake`.
        """

    def _wake(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Unblock an in-flight ``_read``/``_write``; called once, before ``_close``."""

    @abc.abstractmethod
    def _close(self) -> None:
        """Release the resources; called once, with no read or write in flight."""


class WrappingTransport(Transport):
    """A transport that adds a behaviour to another one, ``inner``, chosen by a query on its URL.

    ``?throttle=BAUD`` and ``?trace=1`` are such queries: :func:`open_transport` opens the
    inner transport and wraps it. Closing the wrapper closes ``inner`` (which wakes a read or
    write in flight there).

    Args:
        inner: the transport to wrap; closed with this one.
        url: the URL to report.
    """

    #: the URL query that selects this wrapper (``from_url`` names it)
    query: ClassVar[str] = ""

    def __init__(self, inner: Transport, url: str) -> None:
        super().__init__(url)
        self.inner = inner

    def _wake(self) -> None:
        self.inner.close()

    def _close(self) -> None:
        pass  # inner is closed by _wake

    @classmethod
    def from_url(cls, url: str, **options: Any) -> Transport:
        """Not used: a wrapper is a query on another transport's URL.

        Raises:
            ValueError: always.
        """
        raise ValueError(f"use ?{cls.query} on another transport's URL")

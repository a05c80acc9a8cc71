"""TCP transports: ``socket://host:port`` (client) and ``tcp-listen://host:port`` (server).

Our own small implementation on the ``socket`` module rather than pyserial's
``socket://`` handler: pyserial's ``read(n)`` waits for all n bytes or the
timeout and reports a closed peer as a generic ``SerialException``, whereas we
need "return what is available", :class:`LinkBroken` on a closed peer, a close
that unblocks a reader in another thread, ``TCP_NODELAY`` for small frames,
and the same code path for the server side.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from typing import Any
from urllib.parse import urlsplit

from seedcam.errors import LinkBroken
from seedcam.transport import _fdio
from seedcam.transport.base import Transport, deadline_after

__all__ = ["SocketTransport", "TcpListenTransport"]

_log = logging.getLogger(__name__)


def _host_port(url: str, default_host: str | None) -> tuple[str, int]:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"bad port in {url!r}") from exc
    host = parts.hostname or default_host
    if port is None or host is None or parts.path not in ("", "/"):
        raise ValueError(f"expected {parts.scheme}://host:port, got {url!r}")
    return host, port


def _tune(sock: socket.socket) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setblocking(False)


class SocketTransport(Transport):
    """A TCP client, e.g. to a firmware serving ``tcp-listen://``.

    Args:
        url: ``socket://host:port``.
        connect_timeout: seconds allowed to connect.

    Raises:
        LinkBroken: the connection failed (refused, unreachable, timed out).
        ValueError: the URL is malformed.
    """

    def __init__(self, url: str, connect_timeout: float = 5.0) -> None:
        super().__init__(url)
        host, port = _host_port(url, None)
        try:
            self._sock = socket.create_connection((host, port), timeout=connect_timeout)
        except OSError as exc:
            raise LinkBroken(exc.errno, f"cannot connect to {url}: {exc.strerror or exc}") from exc
        _tune(self._sock)
        self._waker = _fdio.Waker()

    @classmethod
    def from_url(cls, url: str, **options: Any) -> SocketTransport:
        """Connect to ``socket://host:port`` (options: ``connect_timeout``).

        Raises:
            LinkBroken: the connection failed.
            ValueError: the URL is malformed.
        """
        return cls(url, **options)

    def _read(self, max_bytes: int, deadline: float | None) -> bytes:
        return _fdio.read_ready(
            self._sock.fileno(),
            self._sock.recv,
            max_bytes,
            deadline,
            self._waker,
            self.url,
        )

    def _write(self, data: memoryview, deadline: float | None) -> None:
        _fdio.write_all(self._sock.fileno(), self._sock.send, data, deadline, self._waker, self.url)

    def _wake(self) -> None:
        self._waker.wake()

    def _close(self) -> None:
        _shutdown(self._sock)
        self._waker.close()


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


class TcpListenTransport(Transport):
    """A TCP server that serves one client at a time (the firmware's network link).

    Until a client connects, writes are dropped silently and reads return
    ``b""`` at their timeout, so the firmware never blocks when nobody
    listens. When the client leaves, the next one is accepted. A second client
    that connects while one is being served is disconnected at once.
    Connections are accepted inside ``read``, ``write`` and
    :meth:`wait_for_client`; there is no background thread.

    Args:
        url: ``tcp-listen://host:port``; port 0 picks a free port (see
            :attr:`address`); an empty host listens on all interfaces.

    Raises:
        LinkBroken: the address cannot be bound.
        ValueError: the URL is malformed.
    """

    def __init__(self, url: str) -> None:
        super().__init__(url)
        host, port = _host_port(url, "0.0.0.0")
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            if os.name == "posix":  # rebind at once after a firmware restart
                self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._listener.bind((host, port))
            self._listener.listen(1)
        except OSError as exc:
            self._listener.close()
            raise LinkBroken(exc.errno, f"cannot listen on {url}: {exc.strerror or exc}") from exc
        self._listener.setblocking(False)
        self._client: socket.socket | None = None
        self._client_lock = threading.Lock()
        self._retired: list[socket.socket] = []
        self._waker = _fdio.Waker()

    @classmethod
    def from_url(cls, url: str, **options: Any) -> TcpListenTransport:
        """Listen on ``tcp-listen://host:port``.

        Raises:
            LinkBroken: the address cannot be bound.
            ValueError: the URL is malformed or options were given.
        """
        if options:
            raise ValueError(f"tcp-listen:// takes no options, got {sorted(options)}")
        return cls(url)

    @property
    def address(self) -> tuple[str, int]:
        """The bound ``(host, port)``; the real port when the URL said 0."""
        host, port = self._listener.getsockname()[:2]
        return host, port

    @property
    def has_client(self) -> bool:
        """True while a client is connected (as far as the last I/O knows)."""
        return self._client is not None

    def wait_for_client(self, timeout: float | None) -> bool:
        """Wait until a client is connected.

        Args:
            timeout: seconds to wait; None waits until a client or close.

        Returns:
            True when a client is connected, False on timeout.

        Raises:
            LinkBroken: the transport is or becomes closed.
        """
        deadline = deadline_after(timeout)
        self._check_open()
        while self._client is None:
            ready, _ = _fdio.wait_io((self._listener.fileno(), self._waker.fileno()), (), deadline)
            if self._waker.fileno() in ready or self._closed:
                raise LinkBroken(f"{self.url}: transport closed")
            if not ready:
                return False
            self._accept()
        return True

    def _accept(self) -> None:
        try:
            sock, peer = self._listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            _log.debug("%s: accept failed", self.url, exc_info=True)
            return
        with self._client_lock:
            if self._client is None:
                _tune(sock)
                self._client = sock
                _log.info("%s: client %s connected", self.url, peer)
                return
        _log.warning("%s: refusing %s, already serving a client", self.url, peer)
        _shutdown(sock)

    def _drop_client(self, client: socket.socket, why: str) -> None:
        # The reader and the writer may both notice that a client left. Only
        # shut it down here (which fails the other side's I/O at once); the
        # descriptor is closed under the write lock, when no write can use it.
        with self._client_lock:
            if self._client is not client:
                return
            self._client = None
            self._retired.append(client)
        _log.info("%s: client left (%s); waiting for the next one", self.url, why)
        try:
            client.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _close_retired(self) -> None:
        with self._client_lock:
            retired, self._retired = self._retired, []
        for sock in retired:
            sock.close()

    def _read(self, max_bytes: int, deadline: float | None) -> bytes:
        wake = self._waker.fileno()
        listen = self._listener.fileno()
        while True:
            client = self._client
            fds = (wake, listen) if client is None else (wake, listen, client.fileno())
            ready, _ = _fdio.wait_io(fds, (), deadline)
            if wake in ready:
                raise LinkBroken(f"{self.url}: transport closed")
            if not ready:
                return b""
            if listen in ready:
                self._accept()
            if client is not None and client.fileno() in ready:
                try:
                    data = client.recv(max_bytes)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError as exc:
                    self._drop_client(client, str(exc))
                    continue
                if data:
                    return data
                self._drop_client(client, "end of file")

    def _write(self, data: memoryview, deadline: float | None) -> None:
        self._close_retired()
        if self._client is None:
            self._accept()
        client = self._client
        if client is None:
            return  # nobody listens: drop, like a UART with no cable
        try:
            _fdio.write_all(client.fileno(), client.send, data, deadline, self._waker, self.url)
        except LinkBroken as exc:
            if self._closed:
                raise
            self._drop_client(client, str(exc))

    def _wake(self) -> None:
        self._waker.wake()

    def _close(self) -> None:
        client = self._client
        if client is not None:
            self._drop_client(client, "transport closed")
        self._close_retired()
        self._listener.close()
        self._waker.close()

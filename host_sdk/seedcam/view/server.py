"""Running the viewer's app with uvicorn: in the foreground (the CLI) or on a thread (tests, notebooks)."""

from __future__ import annotations

import ipaddress
import logging
import secrets
import socket
import threading

import uvicorn

from seedcam.sensor import Sensor
from seedcam.view.app import LOOPBACK_NAMES, ViewOptions, create_app

__all__ = ["ViewServer", "is_loopback", "serve"]

log = logging.getLogger(__name__)


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ViewServer:
    """The viewer served by uvicorn on ``host:port`` (port 0: any free one).

    Off a loopback address a token is required; one is made when ``options.token`` is None.

    Args:
        sensor: the open sensor (closed by the caller).
        host: the address to bind.
        port: the TCP port (0: a free one, see :attr:`port`).
        options: what to serve (read-only, preview, catalog).

    Raises:
        OSError: the address cannot be bound.
    """

    def __init__(self, sensor: Sensor, host: str = "127.0.0.1", port: int = 8765, options: ViewOptions | None = None):
        self.options = options or ViewOptions()
        if not is_loopback(host) and self.options.token is None:
            self.options.token = secrets.token_urlsafe(18)
        self.host = host
        self._socket = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.port = self._socket.getsockname()[1]
        self.app = create_app(sensor, self.options)
        config = uvicorn.Config(self.app, log_level="warning", lifespan="on", ws="websockets-sansio")
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The page's URL (with the token when one is needed)."""
        host = socket.gethostname() if self.host in ("0.0.0.0", "::", "") else self.host  # any address: this one's name
        name = f"[{host}]" if ":" in host else host
        query = f"/?token={self.options.token}" if self.options.token else "/"
        return f"http://{name}:{self.port}{query}"

    def run(self) -> None:
        """Serve until :meth:`stop` (or Ctrl-C in the main thread)."""
        self._server.run(sockets=[self._socket])

    def start(self) -> ViewServer:
        """Serve on a thread; returns once the server is listening."""
        self._thread = threading.Thread(target=self.run, name="seedcam-view", daemon=True)
        self._thread.start()
        started = threading.Event()

        def wait() -> bool:
            return self._server.started or not (self._thread and self._thread.is_alive())

        while not wait():
            started.wait(0.02)
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread (idempotent)."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        self._socket.close()


def serve(sensor: Sensor, host: str = "127.0.0.1", port: int = 8765, options: ViewOptions | None = None) -> None:
    """Serve the viewer in the foreground until interrupted."""
    server = ViewServer(sensor, host, port, options)
    log.info("seedcam view on %s", server.url)
    server.run()

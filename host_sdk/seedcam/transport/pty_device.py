"""The device side of a pseudo-terminal: the emulated board's "UART" (POSIX only).

The firmware holds the pty master; a host opens the slave path (or a stable
symlink to it) as if it were ``/dev/ttyACM0``. The slave is put in raw mode and
one slave descriptor stays open inside this transport, so the master never
reads EIO while no host is attached and hosts may come and go. Writes are
non-blocking: when nobody drains the slave and the kernel buffer fills up,
``write`` raises :class:`SensorTimeout` at its deadline instead of hanging.
"""

from __future__ import annotations

import logging
import os
import secrets
import tty
from typing import Any

from seedcam.errors import LinkBroken
from seedcam.transport import _fdio
from seedcam.transport.base import Transport

__all__ = ["PtyDeviceTransport"]

_log = logging.getLogger(__name__)


class PtyDeviceTransport(Transport):
    """A pty master, opened with :meth:`create` or ``open_transport("pty://[LINK]")``.

    Attributes:
        slave_path: the slave device a host opens, e.g. ``/dev/pts/5``.
        link_path: the symlink pointing at ``slave_path``, or None.
    """

    def __init__(
        self,
        url: str,
        master_fd: int,
        slave_fd: int,
        slave_path: str,
        link_path: str | None,
    ) -> None:
        """Wrap already-open descriptors; prefer :meth:`create`."""
        super().__init__(url)
        self._master = master_fd
        self._slave = slave_fd
        self.slave_path = slave_path
        self.link_path = link_path
        self._waker = _fdio.Waker()

    @classmethod
    def create(cls, link_path: str | None = None) -> PtyDeviceTransport:
        """Open a new raw pty and optionally point ``link_path`` at its slave.

        The symlink is created or atomically replaced (write a temporary link
        next to it, then rename), like socat's ``link=``, so a host can reopen
        the same path after a firmware restart.

        Args:
            link_path: where to create the symlink, or None for none.

        Returns:
            The open transport.

        Raises:
            LinkBroken: no pty could be allocated or the symlink not created.
        """
        try:
            master, slave = os.openpty()
        except OSError as exc:
            raise LinkBroken(exc.errno, f"cannot allocate a pty: {exc.strerror}") from exc
        try:
            tty.setraw(slave)
            os.set_blocking(master, False)
            slave_path = os.ttyname(slave)
            if link_path is not None:
                _replace_symlink(link_path, slave_path)
        except OSError as exc:
            os.close(master)
            os.close(slave)
            raise LinkBroken(exc.errno, f"cannot set up pty link {link_path}: {exc.strerror}") from exc
        _log.info(
            "pty device at %s%s",
            slave_path,
            f" (link {link_path})" if link_path else "",
        )
        return cls(f"pty://{link_path or ''}", master, slave, slave_path, link_path)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> PtyDeviceTransport:
        """Open ``pty://`` (no link) or ``pty:///path/to/link``.

        Raises:
            LinkBroken: see :meth:`create`.
            ValueError: options were given (there are none).
        """
        if options:
            raise ValueError(f"pty:// takes no options, got {sorted(options)}")
        return cls.create(url[len("pty://") :] or None)

    def __repr__(self) -> str:
        state = " closed" if self._closed else ""
        return f"<{type(self).__name__} {self.url!r} slave={self.slave_path!r}{state}>"

    def _read(self, max_bytes: int, deadline: float | None) -> bytes:
        return _fdio.read_ready(
            self._master,
            lambda n: os.read(self._master, n),
            max_bytes,
            deadline,
            self._waker,
            self.url,
        )

    def _write(self, data: memoryview, deadline: float | None) -> None:
        _fdio.write_all(
            self._master,
            lambda b: os.write(self._master, b),
            data,
            deadline,
            self._waker,
            self.url,
        )

    def _wake(self) -> None:
        self._waker.wake()

    def _close(self) -> None:
        if self.link_path is not None:
            try:
                if os.readlink(self.link_path) == self.slave_path:
                    os.unlink(self.link_path)
            except OSError:  # gone or replaced by a newer firmware: leave it
                pass
        os.close(self._master)  # the host's next read of the slave fails (EIO)
        os.close(self._slave)
        self._waker.close()


def _replace_symlink(link_path: str, target: str) -> None:
    directory = os.path.dirname(os.path.abspath(link_path))
    tmp = os.path.join(directory, f".{os.path.basename(link_path)}.{secrets.token_hex(4)}.tmp")
    os.symlink(target, tmp)
    try:
        os.replace(tmp, link_path)
    except OSError:
        os.unlink(tmp)
        raise

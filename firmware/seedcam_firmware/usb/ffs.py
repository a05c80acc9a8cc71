"""The vendor bulk interface through FunctionFS, and the ``ffs:///mountpoint`` link transport.

A FunctionFS instance (``mount -t functionfs seedcam /dev/ffs-seedcam``, made
by ``seedcam-firmware usb-gadget up``) comes alive when a process writes the
descriptor and string blobs to its ``ep0``; only then can the gadget be bound
to a UDC. Closing ``ep0`` removes the function and unbinds the gadget, so
:class:`FunctionFs` keeps ``ep0`` open for the life of the process, across any
number of host connections, while :class:`FfsTransport` objects come and go
with the link server's reopen cycle.

Three daemon threads per instance:

* ep0 events (``poll`` + non-blocking reads): ENABLE starts a host connection,
  DISABLE/UNBIND end it (the *epoch* counts ends); SETUP requests are stalled.
* bulk OUT reader: blocking reads of up to 64 KiB into a buffer.
* bulk IN writer: drains a bounded queue in writes of up to 64 KiB and follows
  any write that is a multiple of the packet size with a zero-length packet, so
  the host's read completes at once instead of waiting for more.

Endpoint files do not support ``poll``, so the blocking calls live on those
threads and transports wait on a condition variable with deadlines. A
transport whose connection ended raises :class:`~seedcam.errors.LinkBroken`,
and the link server reopens it, which gives the next host a fresh decoder.
"""

from __future__ import annotations

import collections
import errno
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

from seedcam.errors import LinkBroken, PeerClosed, SensorTimeout
from seedcam.transport import _fdio
from seedcam.transport.base import Transport, remaining
from seedcam_firmware.usb.descriptors import (
    EVENT_SIZE,
    FULL_SPEED_PACKET,
    EventType,
    descriptors_blob,
    parse_events,
    strings_blob,
)

__all__ = ["FfsTransport", "FunctionFs"]

log = logging.getLogger(__name__)

#: Largest single transfer on either endpoint (a multiple of every packet size).
CHUNK = 65536
#: Bytes the IN queue may hold before a write waits (like a socket's send buffer).
TX_CAPACITY = 1 << 20
#: Unread bytes kept from the host before the OUT reader stops reading.
RX_CAPACITY = 8 << 20
_RETRY_S = 0.1


class FunctionFs:
    """One FunctionFS instance, alive (descriptors written) for the life of the process.

    Use :meth:`get`; a second call with the same mountpoint returns the same object.

    Attributes:
        mountpoint: where the functionfs instance is mounted.
        enabled: True while a host has configured the function.
        epoch: how many host connections have ended so far.
    """

    _instances: ClassVar[dict[str, FunctionFs]] = {}
    _instances_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, mountpoint: str) -> None:
        self.mountpoint = mountpoint
        self.enabled = False
        self.epoch = 0
        self.cond = threading.Condition()
        self.rx = bytearray()
        self.tx: collections.deque[bytes] = collections.deque()
        self.tx_bytes = 0
        self.bytes_in = 0
        self.bytes_out = 0
        self._stop = threading.Event()
        self._waker = _fdio.Waker()
        root = Path(mountpoint)
        try:
            self._ep0 = os.open(root / "ep0", os.O_RDWR)
        except OSError as exc:
            raise LinkBroken(
                exc.errno,
                f"cannot open {root / 'ep0'}: {exc.strerror} (is functionfs mounted there? "
                "see 'seedcam-firmware usb-gadget up')",
            ) from exc
        try:
            os.write(self._ep0, descriptors_blob())
            os.write(self._ep0, strings_blob())
            self._in = os.open(root / "ep1", os.O_WRONLY)
            self._out = os.open(root / "ep2", os.O_RDONLY)
        except OSError as exc:
            os.close(self._ep0)
            raise LinkBroken(exc.errno, f"{mountpoint}: FunctionFS setup failed: {exc.strerror}") from exc
        os.set_blocking(self._ep0, False)
        for name, target in (("ep0", self._events), ("rx", self._reader), ("tx", self._writer)):
            threading.Thread(target=target, name=f"ffs-{name} {mountpoint}", daemon=True).start()
        log.info("FunctionFS at %s ready (descriptors written)", mountpoint)

    @classmethod
    def get(cls, mountpoint: str) -> FunctionFs:
        """The instance for ``mountpoint``, set up on first use.

        Raises:
            LinkBroken: ep0 cannot be opened or refuses the descriptors.
        """
        key = os.path.realpath(mountpoint)
        with cls._instances_lock:
            ffs = cls._instances.get(key)
            if ffs is None:
                ffs = cls._instances[key] = cls(mountpoint)
            return ffs

    # -- threads ----------------------------------------------------------------

    def _events(self) -> None:
        wake = self._waker.fileno()
        while not self._stop.is_set():
            ready, _ = _fdio.wait_io((self._ep0, wake), (), None)
            if wake in ready:
                return
            try:
                data = os.read(self._ep0, EVENT_SIZE * 8)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError as exc:
                log.error("%s: ep0 read failed: %s", self.mountpoint, exc)
                time.sleep(_RETRY_S)  # a kernel error on ep0: back off, do not spin
                continue
            for event in parse_events(data):
                self._on_event(event.type, event.request_type)

    def _on_event(self, kind: EventType | int, request_type: int) -> None:
        log.debug("%s: ep0 event %r", self.mountpoint, kind)
        if kind == EventType.ENABLE:
            with self.cond:
                self.enabled = True
                self.cond.notify_all()
        elif kind in (EventType.DISABLE, EventType.UNBIND):
            with self.cond:
                if self.enabled:
                    self.epoch += 1
                self.enabled = False
                self.rx.clear()
                self.tx.clear()
                self.tx_bytes = 0
                self.cond.notify_all()
        elif kind == EventType.SETUP:
            # No class or vendor requests are defined: stall by answering in the wrong direction.
            try:
                if request_type & 0x80:
                    os.read(self._ep0, 0)
                else:
                    os.write(self._ep0, b"")
            except OSError:
                pass  # the stall itself reports an error (EL2HLT)

    def _reader(self) -> None:
        while not self._stop.is_set():
            with self.cond:
                self.cond.wait_for(lambda: len(self.rx) < RX_CAPACITY or self._stop.is_set())
            try:
                data = os.read(self._out, CHUNK)
            except InterruptedError:
                continue
            except OSError as exc:  # ESHUTDOWN when the host goes away mid-read
                log.debug("%s: bulk OUT read: %s", self.mountpoint, exc)
                with self.cond:
                    self.cond.wait(_RETRY_S)
                continue
            if data:  # a zero-length packet ends a transfer and carries nothing
                with self.cond:
                    self.rx += data
                    self.bytes_in += len(data)
                    self.cond.notify_all()

    def _writer(self) -> None:
        while not self._stop.is_set():
            with self.cond:
                self.cond.wait_for(lambda: self.tx or self._stop.is_set())
                if self._stop.is_set():
                    return
                epoch = self.epoch
                pieces = [self.tx.popleft()]  # coalesce small frames into one transfer
                size = len(pieces[0])
                while self.tx and size + len(self.tx[0]) <= CHUNK:
                    pieces.append(self.tx.popleft())
                    size += len(pieces[-1])
            data = b"".join(pieces)
            try:
                for start in range(0, len(data), CHUNK):
                    piece = data[start : start + CHUNK]
                    os.write(self._in, piece)
                    if len(piece) % FULL_SPEED_PACKET == 0:
                        os.write(self._in, b"")  # ZLP: the host's read ends here, not at its timeout
                sent_ok = True
            except OSError as exc:  # ESHUTDOWN: the host went away; the queue is cleared on DISABLE
                log.debug("%s: bulk IN write: %s", self.mountpoint, exc)
                sent_ok = False
            with self.cond:
                if epoch == self.epoch:
                    self.tx_bytes -= size
                if sent_ok:
                    self.bytes_out += len(data)
                self.cond.notify_all()


class FfsTransport(Transport):
    """The firmware end of the bulk link: ``ffs:///dev/ffs-seedcam``.

    Opening never waits for a host: reads return nothing until one has
    configured the device, and writes meanwhile raise :class:`LinkBroken` (the
    link server drops and counts the frame). When the host's connection ends
    (unplugged, unbound, reset), reads raise :class:`LinkBroken`.

    Args:
        mountpoint: the functionfs mount (its ``ep0`` must exist).

    Raises:
        LinkBroken: the FunctionFS instance cannot be set up.
    """

    def __init__(self, mountpoint: str) -> None:
        super().__init__(f"ffs://{mountpoint}")
        self._ffs = FunctionFs.get(mountpoint)
        with self._ffs.cond:
            self._epoch = self._ffs.epoch

    @classmethod
    def from_url(cls, url: str, **options: Any) -> FfsTransport:
        """Open ``ffs:///absolute/mountpoint``.

        Raises:
            ValueError: the URL has no absolute path, or options were given.
            LinkBroken: see the class.
        """
        path = url.partition("://")[2]
        if not path.startswith("/") or options:
            raise ValueError(f"expected ffs:///absolute/mountpoint and no options, got {url!r} {options or ''}")
        return cls(path)

    def _check_connection(self) -> None:
        if self._closed:
            raise LinkBroken(f"{self.url}: transport closed")
        if self._ffs.epoch != self._epoch:
            raise PeerClosed(errno.ESHUTDOWN, f"{self.url}: the host disconnected")

    def _read(self, max_bytes: int, deadline: float | None) -> bytes:
        ffs = self._ffs
        with ffs.cond:
            while True:
                self._check_connection()
                if ffs.rx:
                    data = bytes(ffs.rx[:max_bytes])
                    del ffs.rx[:max_bytes]
                    ffs.cond.notify_all()
                    return data
                left = remaining(deadline)
                if left == 0:
                    return b""
                ffs.cond.wait(left)

    def _write(self, data: memoryview, deadline: float | None) -> None:
        ffs = self._ffs
        with ffs.cond:
            while True:
                self._check_connection()
                if not ffs.enabled:
                    raise LinkBroken(errno.ENOTCONN, f"{self.url}: no host has configured the device")
                if ffs.tx_bytes + len(data) <= TX_CAPACITY or not ffs.tx:
                    ffs.tx.append(bytes(data))
                    ffs.tx_bytes += len(data)
                    ffs.cond.notify_all()
                    return
                left = remaining(deadline)
                if left == 0:
                    raise SensorTimeout(f"{self.url}: the host is not reading ({ffs.tx_bytes} bytes queued)")
                ffs.cond.wait(left)

    def _wake(self) -> None:
        with self._ffs.cond:
            self._ffs.cond.notify_all()

    def _close(self) -> None:
        """Nothing to release: the FunctionFS instance outlives its transports."""

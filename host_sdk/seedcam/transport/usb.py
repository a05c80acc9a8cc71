"""Raw USB bulk: ``usb://[VID:PID][/SERIAL]`` through pyusb (the ``seedcam[usb]`` extra).

The sensor's composite gadget has a CDC-ACM function (a serial port, handled
by the OS) and a vendor-specific interface (class 0xFF) with one bulk IN and
one bulk OUT endpoint, which this transport claims. Interface numbers and
endpoint addresses depend on the composite's layout, so both are *found*: the
interface by its class, the endpoints by direction.

* ``usb://`` — the only seedcam sensor (VID:PID 1209:5EED) with a bulk interface;
* ``usb://1209:5eed`` — the only device with these ids;
* ``usb://1209:5eed/SC0123456789`` or ``usb:///SC0123456789`` — the one with this serial
  number, found again by serial after a re-plug (bus and address may change).

Bulk transfers end with a short packet: a write whose length is a multiple of
``wMaxPacketSize`` is followed by a zero-length packet, and reads ask for a
multiple of it (a smaller request would overflow). A background thread keeps
reading into a buffer, so the device is drained even when the application is
busy and a read returns as soon as anything arrived. A vanished device (EIO,
ENODEV, a stall) raises :class:`~seedcam.errors.LinkBroken`, which the SDK's
auto-reconnect handles by searching again.

libusb comes from the ``libusb-package`` wheel when installed (it finds a
re-plugged device without a udev daemon), else from the system.
"""

from __future__ import annotations

import errno
import logging
import re
import threading
from array import array
from typing import Any

from seedcam.errors import LinkBroken, NoSensorFound, SensorError, SensorTimeout
from seedcam.port_info import SEEDCAM_PID, SEEDCAM_VID, VENDOR_CLASS, PortInfo
from seedcam.transport.base import Transport, remaining

__all__ = ["VENDOR_CLASS", "UsbTransport", "list_usb_sensors", "map_usb_error", "parse_usb_url"]

log = logging.getLogger(__name__)

#: Bytes asked for per bulk read (a multiple of every packet size).
READ_SIZE = 65536
#: Unread bytes buffered before the reader thread pauses.
RX_CAPACITY = 8 << 20
#: Longest single libusb call, so that close never waits longer than this.
SLICE_MS = 250
#: Bytes per libusb write call.
WRITE_CHUNK = 1 << 20

#: errno values that mean "the device is gone or unusable until it is found again".
_GONE = {errno.ENODEV, errno.EIO, errno.EPIPE, errno.ESHUTDOWN, errno.EPROTO, errno.ENOENT, errno.EOVERFLOW}

_URL = re.compile(r"^usb://(?:(?P<vid>[0-9A-Fa-f]{1,4}):(?P<pid>[0-9A-Fa-f]{1,4}))?(?:/(?P<serial>[^/?#]*))?$")


def parse_usb_url(url: str) -> tuple[int, int, str | None]:
    """Split ``usb://[VID:PID][/SERIAL]`` into ``(vid, pid, serial)`` (hex ids, default 1209:5EED).

    Raises:
        ValueError: the URL is malformed.
    """
    match = _URL.match(url)
    if match is None:
        raise ValueError(f"expected usb://[VID:PID][/SERIAL] with hex ids, e.g. usb://1209:5eed/SC0123, got {url!r}")
    vid = int(match["vid"], 16) if match["vid"] else SEEDCAM_VID
    pid = int(match["pid"], 16) if match["pid"] else SEEDCAM_PID
    return vid, pid, match["serial"] or None


def usb_url(vid: int, pid: int, serial: str | None) -> str:
    """The URL that opens a device (by serial when it has one)."""
    return f"usb://{vid:04x}:{pid:04x}" + (f"/{serial}" if serial else "")


def map_usb_error(exc: BaseException, what: str) -> SensorError:
    """Turn a pyusb error into the seedcam error a caller should see.

    Args:
        exc: a ``usb.core.USBError`` (or ``USBTimeoutError``).
        what: what was being done, for the message (``"usb://1209:5eed: read"``).

    Returns:
        :class:`SensorTimeout` for a timeout; otherwise :class:`LinkBroken`
        with ``errno`` set, and a hint for permission and busy errors.
    """
    code = getattr(exc, "errno", None)
    if code == errno.ETIMEDOUT or type(exc).__name__ == "USBTimeoutError":
        return SensorTimeout(f"{what}: timed out")
    hint = ""
    if code == errno.EACCES:
        hint = " (permission denied: install deploy/udev/70-seedcam.rules, or run as root)"
    elif code == errno.EBUSY:
        hint = " (another program has claimed the sensor's bulk interface)"
    elif code in _GONE:
        hint = " (device gone)"
    return LinkBroken(code, f"{what}: {getattr(exc, 'strerror', None) or exc}{hint}")


def _usb() -> tuple[Any, Any]:
    """Import pyusb and pick the libusb backend.

    Raises:
        LinkBroken: pyusb or libusb is missing (the message says how to install it).
    """
    try:
        import usb.core
        import usb.util  # noqa: F401 - used by callers through the usb package
    except ImportError as exc:
        raise LinkBroken(errno.ENOSYS, "usb:// needs pyusb: pip install 'seedcam[usb]'") from exc
    backend = None
    try:
        import libusb_package

        backend = libusb_package.get_libusb1_backend()
    except ImportError:
        pass
    if backend is None:
        import usb.backend.libusb1

        backend = usb.backend.libusb1.get_backend()
    if backend is None:
        raise LinkBroken(errno.ENOSYS, "usb:// found no libusb: pip install libusb-package, or install libusb-1.0")
    return usb, backend


def _string(usb: Any, dev: Any, index: int) -> str | None:
    """A string descriptor, or None when the device cannot be asked (gone, no permission)."""
    if not index:
        return None
    try:
        return str(usb.util.get_string(dev, index))
    except (usb.core.USBError, ValueError, NotImplementedError, OSError):
        return None


def _bulk_interface(usb: Any, dev: Any) -> tuple[Any, Any, Any] | None:
    """The first class-0xFF interface of the active configuration and its (IN, OUT) bulk endpoints."""
    try:
        config = dev.get_active_configuration()
    except (usb.core.USBError, NotImplementedError):
        return None
    for intf in config:
        if intf.bInterfaceClass != VENDOR_CLASS:
            continue
        ep_in = ep_out = None
        for ep in intf:
            if usb.util.endpoint_type(ep.bmAttributes) != usb.util.ENDPOINT_TYPE_BULK:
                continue
            if usb.util.endpoint_direction(ep.bEndpointAddress) == usb.util.ENDPOINT_IN:
                ep_in = ep_in or ep
            else:
                ep_out = ep_out or ep
        if ep_in is not None and ep_out is not None:
            return intf, ep_in, ep_out
    return None


def _candidates(usb: Any, backend: Any, vid: int, pid: int) -> list[tuple[Any, str | None]]:
    """Devices with these ids and a bulk interface, with their serial numbers (None if unreadable)."""
    try:
        devices = list(usb.core.find(find_all=True, idVendor=vid, idProduct=pid, backend=backend))
    except usb.core.USBError as exc:
        raise map_usb_error(exc, "usb: device search") from exc
    found = []
    for dev in devices:
        if _bulk_interface(usb, dev) is None:
            continue
        found.append((dev, _string(usb, dev, dev.iSerialNumber)))
    return found


def list_usb_sensors(vid: int = SEEDCAM_VID, pid: int = SEEDCAM_PID) -> list[PortInfo]:
    """Sensors reachable over raw USB bulk, as :class:`PortInfo` whose ``device`` is the ``usb://`` URL.

    Returns:
        One entry per device with a bulk interface; empty when pyusb or libusb
        is not installed.
    """
    try:
        usb, backend = _usb()
        candidates = _candidates(usb, backend, vid, pid)
    except SensorError as exc:
        log.debug("raw USB discovery unavailable: %s", exc)
        return []
    ports = []
    for dev, serial in candidates:
        path = getattr(dev, "port_numbers", None) or ()
        location = f"{dev.bus}-{'.'.join(map(str, path))}" if path else f"bus {dev.bus} address {dev.address}"
        ports.append(
            PortInfo(
                device=usb_url(vid, pid, serial),
                vid=vid,
                pid=pid,
                serial_number=serial,
                description=_string(usb, dev, dev.iProduct),
                manufacturer=_string(usb, dev, dev.iManufacturer),
                location=location,
            )
        )
        usb.util.dispose_resources(dev)
    return sorted(ports, key=lambda p: p.device)


class UsbTransport(Transport):
    """The sensor's vendor bulk interface, claimed through pyusb.

    Args:
        vid: USB vendor id.
        pid: USB product id.
        serial: the serial number to match, or None for "the only one".
        url: the URL to report (default: built from the ids and serial).

    Raises:
        LinkBroken: no such device, pyusb/libusb missing, no permission, or
            the interface is claimed by another program.
        NoSensorFound: ``serial`` is None and several devices match (the
            message lists their URLs).
    """

    def __init__(
        self, vid: int = SEEDCAM_VID, pid: int = SEEDCAM_PID, serial: str | None = None, *, url: str | None = None
    ) -> None:
        super().__init__(url or usb_url(vid, pid, serial))
        self._usb, backend = _usb()
        usb = self._usb
        found = [(d, s) for d, s in _candidates(usb, backend, vid, pid) if serial is None or s == serial]
        if not found:
            which = f" with serial {serial}" if serial else ""
            raise LinkBroken(
                errno.ENODEV, f"{self.url}: no USB device {vid:04x}:{pid:04x}{which} with a bulk interface"
            )
        if len(found) > 1:
            urls = ", ".join(usb_url(vid, pid, s) for _, s in found)
            raise NoSensorFound(f"{self.url}: several sensors, choose one: {urls}")
        self._dev, self.serial_number = found[0]
        bulk = _bulk_interface(usb, self._dev)
        if bulk is None:  # vanished between the search and now
            raise LinkBroken(errno.ENODEV, f"{self.url}: device gone")
        intf, ep_in, ep_out = bulk
        self._interface = intf.bInterfaceNumber
        self._ep_in = ep_in.bEndpointAddress
        self._ep_out = ep_out.bEndpointAddress
        self.max_packet = int(ep_out.wMaxPacketSize) or 512
        self._read_size = max(READ_SIZE // int(ep_in.wMaxPacketSize or 512), 1) * int(ep_in.wMaxPacketSize or 512)
        try:
            usb.util.claim_interface(self._dev, self._interface)
        except usb.core.USBError as exc:
            usb.util.dispose_resources(self._dev)
            raise map_usb_error(exc, f"{self.url}: claiming interface {self._interface}") from exc
        self._cond = threading.Condition()
        self._rx = bytearray()
        self._error: LinkBroken | None = None
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._read_loop, name=f"usb-rx {self.url}", daemon=True)
        self._reader.start()
        log.debug(
            "%s: interface %d, endpoints IN 0x%02x OUT 0x%02x, %d-byte packets",
            self.url,
            self._interface,
            self._ep_in,
            self._ep_out,
            self.max_packet,
        )

    @classmethod
    def from_url(cls, url: str, **options: Any) -> UsbTransport:
        """Open ``usb://[VID:PID][/SERIAL]``.

        Raises:
            ValueError: malformed URL or an unknown option.
            LinkBroken, NoSensorFound: see the class.
        """
        vid, pid, serial = parse_usb_url(url)
        if options:
            raise ValueError(f"usb:// takes no options, got {sorted(options)}")
        return cls(vid, pid, serial, url=url)

    # -- reading: a thread keeps the IN endpoint drained ---------------------------------

    def _read_loop(self) -> None:
        usb = self._usb
        buf = array("B", bytes(self._read_size))
        while not self._stop.is_set():
            with self._cond:
                self._cond.wait_for(lambda: len(self._rx) < RX_CAPACITY or self._stop.is_set())
            try:
                count = self._dev.read(self._ep_in, buf, SLICE_MS)  # partial data comes back, not an error
            except usb.core.USBTimeoutError:
                continue
            except usb.core.USBError as exc:
                error = map_usb_error(exc, f"{self.url}: read")
                with self._cond:
                    self._error = error if isinstance(error, LinkBroken) else LinkBroken(str(error))
                    self._cond.notify_all()
                return
            if count:  # a zero-length packet ends a transfer and carries nothing
                with self._cond:
                    self._rx += memoryview(buf)[:count]
                    self._cond.notify_all()

    def _read(self, max_bytes: int, deadline: float | None) -> bytes:
        with self._cond:
            while True:
                if self._closed:
                    raise LinkBroken(f"{self.url}: transport closed")
                if self._rx:
                    data = bytes(self._rx[:max_bytes])
                    del self._rx[:max_bytes]
                    self._cond.notify_all()
                    return data
                if self._error is not None:
                    raise self._error
                left = remaining(deadline)
                if left == 0:
                    return b""
                self._cond.wait(left)

    # -- writing ---------------------------------------------------------------------

    def _write(self, data: memoryview, deadline: float | None) -> None:
        usb = self._usb
        # pyusb turns anything but an array('B') into one element by element (~0.2 s per MiB); frombytes is a memcpy
        buf = array("B")
        buf.frombytes(data)
        sent = 0
        while sent < len(data):
            if self._closed:
                raise LinkBroken(f"{self.url}: transport closed during write")
            left = remaining(deadline)
            if left == 0:
                raise SensorTimeout(f"{self.url}: wrote {sent} of {len(data)} bytes before the timeout")
            ms = SLICE_MS if left is None else max(1, min(SLICE_MS, int(left * 1000)))
            try:
                sent += self._dev.write(self._ep_out, buf[sent : sent + WRITE_CHUNK], ms)
            except usb.core.USBTimeoutError:
                continue  # nothing went out in this slice; the deadline decides
            except usb.core.USBError as exc:
                raise map_usb_error(exc, f"{self.url}: write") from exc
        if len(data) % self.max_packet == 0:
            try:  # zero-length packet: without it the device's read waits for more
                self._dev.write(self._ep_out, array("B"), SLICE_MS)
            except usb.core.USBError as exc:
                raise map_usb_error(exc, f"{self.url}: write (zero-length packet)") from exc

    # -- closing ---------------------------------------------------------------------

    def _wake(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()

    def _close(self) -> None:
        self._reader.join(timeout=SLICE_MS / 1000 + 1.0)
        if self._reader.is_alive():  # stuck in libusb: leave the handle alone rather than free it under the thread
            log.warning("%s: reader thread did not stop; not releasing the device", self.url)
            return
        usb = self._usb
        try:
            usb.util.release_interface(self._dev, self._interface)
        except usb.core.USBError:
            pass  # the device is gone: nothing to release
        usb.util.dispose_resources(self._dev)

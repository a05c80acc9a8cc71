"""USB pieces that need no bus: FunctionFS blobs, URLs, discovery choices, error mapping.

The transport tests here drive :class:`UsbTransport` and :class:`FfsTransport`
with FAKE backends (an in-memory pyusb device, an in-memory FunctionFS
instance): they check our logic (interface choice, zero-length packets, error
mapping, disconnect handling), not the kernel or libusb. The real bus is
tested in test_usb_vm.py.
"""

from __future__ import annotations

import errno
import struct
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest
import usb.core
import usb.util
from helpers import wait_until_inside

import seedcam.ports
from seedcam.discovery import resolve_url
from seedcam.errors import LinkBroken, NoSensorFound, PeerClosed, SensorTimeout
from seedcam.ports import PortInfo
from seedcam.transport import usb as usb_transport
from seedcam.transport.usb import UsbTransport, map_usb_error, parse_usb_url
from seedcam_firmware.config_schema import check_link_url
from seedcam_firmware.usb import descriptors, ffs

# ----------------------------------------------------------------------------- FunctionFS blobs


def test_descriptor_blob_layout() -> None:
    blob = descriptors.descriptors_blob()
    magic, length, flags, fs_count, hs_count = struct.unpack_from("<IIIII", blob)
    assert (magic, length, flags, fs_count, hs_count) == (3, len(blob), 0b11, 3, 3)
    body = blob[20:]
    for speed, packet in enumerate((64, 512)):
        intf = body[speed * 23 : speed * 23 + 9]
        ep_in = struct.unpack("<BBBBHB", body[speed * 23 + 9 : speed * 23 + 16])
        ep_out = struct.unpack("<BBBBHB", body[speed * 23 + 16 : speed * 23 + 23])
        assert intf == bytes([9, 4, 0, 0, 2, 0xFF, 0, 0, 1])  # vendor class, 2 endpoints, string 1
        assert ep_in == (7, 5, 0x81, 2, packet, 0)
        assert ep_out == (7, 5, 0x02, 2, packet, 0)


def test_string_blob_layout() -> None:
    blob = descriptors.strings_blob(("one", "two"))
    assert struct.unpack_from("<IIIIH", blob) == (2, len(blob), 2, 1, 0x0409)
    assert blob[18:] == b"one\0two\0"
    with pytest.raises(ValueError):
        descriptors.strings_blob(("bad\0",))


def test_events_parse_and_ignore_trailing_bytes() -> None:
    setup = struct.pack("<BBHHH", 0xC0, 6, 0x0300, 2, 255) + bytes([descriptors.EventType.SETUP, 0, 0, 0])
    enable = bytes(8) + bytes([descriptors.EventType.ENABLE, 0, 0, 0])
    events = descriptors.parse_events(setup + enable + b"\x01\x02")
    assert [e.type for e in events] == [descriptors.EventType.SETUP, descriptors.EventType.ENABLE]
    assert (events[0].request_type, events[0].request, events[0].value, events[0].length) == (0xC0, 6, 0x300, 255)


def test_link_url_check_knows_ffs() -> None:
    assert check_link_url("ffs:///dev/ffs-seedcam") is None
    assert "absolute" in (check_link_url("ffs://dev/ffs") or "")


# ----------------------------------------------------------------------------- URLs and discovery


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("usb://", (0x1209, 0x5EED, None)),
        ("usb://1209:5eed", (0x1209, 0x5EED, None)),
        ("usb://1209:5EED/SC0123", (0x1209, 0x5EED, "SC0123")),
        ("usb:///SC0123", (0x1209, 0x5EED, "SC0123")),
        ("usb://cafe:1/x-y_z", (0xCAFE, 0x0001, "x-y_z")),
    ],
)
def test_usb_url_parses(url: str, expected: tuple[int, int, str | None]) -> None:
    assert parse_usb_url(url) == expected


@pytest.mark.parametrize("url", ["usb://12345:1", "usb://zz:01", "usb://1209", "usb://1209:5eed/a/b", "usb:1209"])
def test_bad_usb_url_is_a_value_error(url: str) -> None:
    with pytest.raises(ValueError, match="usb://"):
        parse_usb_url(url)


def _sensor_ports(monkeypatch: pytest.MonkeyPatch, ports: list[PortInfo]) -> None:
    monkeypatch.delenv("SEEDCAM_PORT", raising=False)
    monkeypatch.setattr(seedcam.ports, "seedcam_ports", lambda: ports)


def test_one_sensor_on_two_paths_counts_once_and_bulk_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    _sensor_ports(
        monkeypatch,
        [PortInfo("/dev/ttyACM0", 0x1209, 0x5EED, "SC1"), PortInfo("usb://1209:5eed/SC1", 0x1209, 0x5EED, "SC1")],
    )
    assert resolve_url() == "usb://1209:5eed/SC1"


def test_several_sensors_are_listed_and_serial_selects(monkeypatch: pytest.MonkeyPatch) -> None:
    _sensor_ports(
        monkeypatch,
        [PortInfo("/dev/ttyACM0", 0x1209, 0x5EED, "SC1"), PortInfo("usb://1209:5eed/SC2", 0x1209, 0x5EED, "SC2")],
    )
    with pytest.raises(NoSensorFound, match=r"/dev/ttyACM0 \(serial SC1\).*usb://1209:5eed/SC2 \(serial SC2\)"):
        resolve_url()
    assert resolve_url(serial="SC1") == "/dev/ttyACM0"
    assert resolve_url(serial="SC2") == "usb://1209:5eed/SC2"
    with pytest.raises(NoSensorFound, match="SC3"):
        resolve_url(serial="SC3")


def test_serial_wins_over_the_environment_port(monkeypatch: pytest.MonkeyPatch) -> None:
    _sensor_ports(monkeypatch, [PortInfo("usb://1209:5eed/SC2", 0x1209, 0x5EED, "SC2")])
    monkeypatch.setenv("SEEDCAM_PORT", "/dev/ttyUSB9")
    assert resolve_url() == "/dev/ttyUSB9"
    assert resolve_url(serial="SC2") == "usb://1209:5eed/SC2"


# ----------------------------------------------------------------------------- pyusb transport on a FAKE backend


def _usb_error(code: int, text: str) -> usb.core.USBError:
    return usb.core.USBError(text, errno=code)


@pytest.mark.parametrize(
    ("code", "kind", "hint"),
    [
        (errno.ENODEV, LinkBroken, "device gone"),
        (errno.EIO, LinkBroken, "device gone"),
        (errno.EPIPE, LinkBroken, "device gone"),
        (errno.EACCES, LinkBroken, "udev"),
        (errno.EBUSY, LinkBroken, "another program"),
    ],
)
def test_usb_errors_map_to_link_broken(code: int, kind: type, hint: str) -> None:
    error = map_usb_error(_usb_error(code, "boom"), "usb://x: read")
    assert isinstance(error, kind) and error.errno == code and hint in str(error)


def test_usb_timeout_maps_to_sensor_timeout() -> None:
    error = map_usb_error(usb.core.USBTimeoutError("t", errno=errno.ETIMEDOUT), "w")
    assert isinstance(error, SensorTimeout)


class FakeEndpoint(SimpleNamespace):
    """An endpoint descriptor as pyusb shows it."""


class FakeDevice:
    """A FAKE pyusb device: ACM interfaces 0-1 and the vendor interface 2 with renumbered endpoints."""

    def __init__(self, serial: str, packet: int = 512) -> None:
        self.serial = serial
        self.iSerialNumber, self.iProduct, self.iManufacturer = 3, 2, 1
        self.bus, self.address, self.port_numbers = 1, 4, (1,)
        ep_in = FakeEndpoint(bEndpointAddress=0x86, bmAttributes=2, wMaxPacketSize=packet)
        ep_out = FakeEndpoint(bEndpointAddress=0x07, bmAttributes=2, wMaxPacketSize=packet)
        acm_ep = FakeEndpoint(bEndpointAddress=0x81, bmAttributes=3, wMaxPacketSize=16)
        self.config = [
            _Intf(0, 0x02, [acm_ep]),
            _Intf(1, 0x0A, [FakeEndpoint(bEndpointAddress=0x82, bmAttributes=2, wMaxPacketSize=packet)]),
            _Intf(2, 0xFF, [ep_in, ep_out]),
        ]
        self.writes: list[tuple[int, bytes]] = []
        self.to_host: list[bytes | BaseException] = []
        self.claimed: list[int] = []
        self.lock = threading.Lock()

    def get_active_configuration(self) -> list[Any]:
        return self.config

    def read(self, endpoint: int, buf: Any, timeout: int) -> int:
        assert endpoint == 0x86 and len(buf) % 512 == 0  # reads ask for whole packets
        with self.lock:
            item = self.to_host.pop(0) if self.to_host else None
        if item is None:
            time.sleep(timeout / 1000 / 10)  # an idle bus: the fake's stand-in for libusb's wait
            raise usb.core.USBTimeoutError("timeout", errno=errno.ETIMEDOUT)
        if isinstance(item, BaseException):
            with self.lock:
                self.to_host.insert(0, item)  # every later call fails the same way
            raise item
        buf[: len(item)] = __import__("array").array("B", item)
        return len(item)

    def write(self, endpoint: int, data: Any, timeout: int) -> int:
        self.writes.append((endpoint, bytes(data)))
        return len(data)


class _Intf(list):
    def __init__(self, number: int, cls: int, endpoints: list[FakeEndpoint]) -> None:
        super().__init__(endpoints)
        self.bInterfaceNumber, self.bInterfaceClass = number, cls


@pytest.fixture
def fake_usb(monkeypatch: pytest.MonkeyPatch) -> list[FakeDevice]:
    """Replace pyusb's device search with a FAKE list of devices (the returned list, editable)."""
    devices: list[FakeDevice] = []
    fake = SimpleNamespace(
        core=SimpleNamespace(
            find=lambda **kw: iter(list(devices)), USBError=usb.core.USBError, USBTimeoutError=usb.core.USBTimeoutError
        ),
        util=SimpleNamespace(
            get_string=lambda dev, index: {1: "seedcam", 2: "seedcam AI vision sensor", 3: dev.serial}[index],
            claim_interface=lambda dev, number: dev.claimed.append(number),
            release_interface=lambda dev, number: None,
            dispose_resources=lambda dev: None,
            endpoint_direction=usb.util.endpoint_direction,
            endpoint_type=usb.util.endpoint_type,
            ENDPOINT_IN=usb.util.ENDPOINT_IN,
            ENDPOINT_TYPE_BULK=usb.util.ENDPOINT_TYPE_BULK,
        ),
    )
    monkeypatch.setattr(usb_transport, "_usb", lambda: (fake, object()))
    return devices


def test_fake_transport_finds_interface_by_class_and_endpoints_by_direction(fake_usb: list[FakeDevice]) -> None:
    device = FakeDevice("SC1")
    fake_usb.append(device)
    with UsbTransport.from_url("usb://") as link:
        assert device.claimed == [2]
        assert (link._ep_in, link._ep_out, link.max_packet) == (0x86, 0x07, 512)
        assert link.serial_number == "SC1"


def test_fake_transport_sends_zlp_only_after_packet_multiples(fake_usb: list[FakeDevice]) -> None:
    device = FakeDevice("SC1")
    fake_usb.append(device)
    with UsbTransport.from_url("usb://1209:5eed/SC1") as link:
        for size in (511, 512, 513, 1024):
            device.writes.clear()
            link.write(b"x" * size, 1.0)
            assert [len(d) for _, d in device.writes] == ([size, 0] if size % 512 == 0 else [size])


def test_fake_transport_reads_data_then_maps_disconnect_to_link_broken(fake_usb: list[FakeDevice]) -> None:
    device = FakeDevice("SC1")
    device.to_host = [b"hello", _usb_error(errno.ENODEV, "No such device")]
    fake_usb.append(device)
    with UsbTransport.from_url("usb://") as link:
        assert link.read(100, 2.0) == b"hello"
        with pytest.raises(LinkBroken, match="device gone") as caught:
            link.read(100, 2.0)
        assert caught.value.errno == errno.ENODEV


def test_fake_transport_open_errors(fake_usb: list[FakeDevice]) -> None:
    with pytest.raises(LinkBroken, match="no USB device 1209:5eed"):
        UsbTransport.from_url("usb://")
    fake_usb.extend([FakeDevice("SC1"), FakeDevice("SC2")])
    with pytest.raises(NoSensorFound, match="usb://1209:5eed/SC1, usb://1209:5eed/SC2"):
        UsbTransport.from_url("usb://")
    with UsbTransport.from_url("usb:///SC2") as link:
        assert link.serial_number == "SC2"
    with pytest.raises(ValueError):
        UsbTransport.from_url("usb://", timeout=3)


def test_fake_usb_sensors_are_discovered_with_urls(fake_usb: list[FakeDevice]) -> None:
    fake_usb.append(FakeDevice("SC7"))
    (port,) = usb_transport.list_usb_sensors()
    assert (port.device, port.vid, port.pid, port.serial_number) == ("usb://1209:5eed/SC7", 0x1209, 0x5EED, "SC7")
    assert port.description == "seedcam AI vision sensor" and port.location == "1-1"


def test_fake_transport_close_wakes_a_blocked_reader(fake_usb: list[FakeDevice]) -> None:
    fake_usb.append(FakeDevice("SC1"))
    link = UsbTransport.from_url("usb://")
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            link.read(10, None)
        except LinkBroken as exc:
            errors.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    wait_until_inside(thread, "wait")  # really blocked, not about to find the link closed on entry
    link.close()
    thread.join(5)
    assert not thread.is_alive() and errors


# ----------------------------------------------------------------------------- ffs:// transport on a FAKE FunctionFS


@pytest.fixture
def fake_ffs(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """A FAKE FunctionFS instance: the state its threads keep, with no kernel behind it."""
    state = SimpleNamespace(
        cond=threading.Condition(),
        rx=bytearray(),
        tx=__import__("collections").deque(),
        tx_bytes=0,
        epoch=0,
        enabled=False,
    )
    monkeypatch.setattr(ffs.FunctionFs, "get", classmethod(lambda cls, mountpoint: state))
    return state


def test_fake_ffs_transport_waits_for_a_host_and_drops_writes_meanwhile(fake_ffs: SimpleNamespace) -> None:
    link = ffs.FfsTransport.from_url("ffs:///dev/ffs-x")
    assert link.read(10, 0.05) == b""
    with pytest.raises(LinkBroken, match="no host"):
        link.write(b"frame", 0.1)
    with fake_ffs.cond:
        fake_ffs.enabled = True
        fake_ffs.rx += b"request"
    assert link.read(3, 0.1) == b"req" and link.read(10, 0.1) == b"uest"
    link.write(b"answer", 0.1)
    assert list(fake_ffs.tx) == [b"answer"] and fake_ffs.tx_bytes == 6


def test_fake_ffs_transport_breaks_when_the_host_connection_ends(fake_ffs: SimpleNamespace) -> None:
    fake_ffs.enabled = True
    link = ffs.FfsTransport.from_url("ffs:///dev/ffs-x")
    with fake_ffs.cond:
        fake_ffs.epoch += 1  # what a DISABLE or UNBIND event does
        fake_ffs.enabled = False
        fake_ffs.cond.notify_all()
    with pytest.raises(PeerClosed, match="disconnected"):  # a LinkBroken: the host left
        link.read(10, 1.0)
    fresh = ffs.FfsTransport.from_url("ffs:///dev/ffs-x")  # the link server's reopen: the next connection
    assert fresh.read(10, 0.01) == b""


def test_fake_ffs_write_times_out_when_the_host_stops_reading(fake_ffs: SimpleNamespace) -> None:
    fake_ffs.enabled = True
    link = ffs.FfsTransport.from_url("ffs:///dev/ffs-x")
    link.write(b"x" * ffs.TX_CAPACITY, 0.1)
    with pytest.raises(SensorTimeout, match="not reading"):
        link.write(b"y", 0.05)


def test_ffs_url_needs_an_absolute_path() -> None:
    with pytest.raises(ValueError, match="absolute"):
        ffs.FfsTransport.from_url("ffs://relative")

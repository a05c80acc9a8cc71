"""Transport layer: one back-to-back suite re-run on every backend, then per-backend specifics."""

from __future__ import annotations

import errno
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_until_inside

from seedcam.errors import LinkBroken, PeerClosed, SensorError, SensorTimeout
from seedcam.transport import Transport, open_transport, pair, register_backend
from seedcam.transport.memory import LoopTransport
from seedcam.transport.pty_device import PtyDeviceTransport
from seedcam.transport.socket_tcp import TcpListenTransport
from seedcam.transport.throttle import ThrottledTransport

pytestmark = pytest.mark.timeout(20)

FAST_BAUD = 10_000_000  # throttled backend in the shared suite: 64 KiB in ~65 ms


# -- helpers ---------------------------------------------------------------------


def read_exactly(t: Transport, n: int, timeout: float = 5.0) -> bytes:
    """Read n bytes, polling against a deadline; fails the test if they do not come."""
    deadline = time.monotonic() + timeout
    out = bytearray()
    while len(out) < n:
        left = deadline - time.monotonic()
        assert left > 0, f"got {len(out)} of {n} bytes before the deadline"
        out += t.read(n - len(out), min(left, 0.5))
    return bytes(out)


def in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """Run fn in a daemon thread; the result dict gets 'value' or 'error' and 'elapsed'."""
    result: dict[str, Any] = {}
    started = threading.Event()

    def run() -> None:
        started.set()
        t0 = time.monotonic()
        try:
            result["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            result["error"] = exc
        result["elapsed"] = time.monotonic() - t0

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(5)
    return thread, result


def transfer(src: Transport, dst: Transport, data: bytes) -> bytes:
    writer, result = in_thread(lambda: src.write(data, timeout=10))
    got = read_exactly(dst, len(data), timeout=10)
    writer.join(10)
    assert "error" not in result, result.get("error")
    return got


def payloads() -> list[bytes]:
    rng = random.Random(20240521)
    big = bytearray(rng.randbytes(64 * 1024))
    big[::97] = bytes(len(big[::97]))  # plenty of 0x00, the COBS delimiter
    return [
        b"\x00",
        b"\x00" * 300,
        b"\xff\x00\x01",
        *(rng.randbytes(rng.randint(1, 2000)) for _ in range(5)),
        bytes(big),
    ]


# -- backends -------------------------------------------------------------------


@dataclass
class Link:
    """Two connected transports: left plays the device, right the host."""

    left: Transport
    right: Transport
    has_peer: bool = True  # closing left makes right raise LinkBroken
    keeps_data_on_close: bool = True  # right can still read what left wrote before closing

    def close(self) -> None:
        self.left.close()
        self.right.close()


def _loop(tmp_path: Path) -> Link:
    t = open_transport("loop://")
    return Link(t, t, has_peer=False)


def _pair(tmp_path: Path) -> Link:
    a, b = pair()
    return Link(a, b)


def _tcp(tmp_path: Path) -> Link:
    server = open_transport("tcp-listen://127.0.0.1:0")
    assert isinstance(server, TcpListenTransport)
    client = open_transport(f"socket://127.0.0.1:{server.address[1]}")
    assert server.wait_for_client(5)
    return Link(server, client)


def _pty(tmp_path: Path) -> Link:
    device = PtyDeviceTransport.create(link_path=str(tmp_path / "seedcam0"))
    host = open_transport(str(tmp_path / "seedcam0"))  # the serial backend, through the symlink
    return Link(device, host, keeps_data_on_close=False)


def _throttled(tmp_path: Path) -> Link:
    name = f"throttled-{tmp_path.name}"
    a = open_transport(f"pair://{name}?throttle={FAST_BAUD}")
    b = open_transport(f"pair://{name}?throttle={FAST_BAUD}")
    assert isinstance(a, ThrottledTransport) and isinstance(b, ThrottledTransport)
    return Link(a, b)


BACKENDS = {
    "loop": _loop,
    "pair": _pair,
    "tcp": _tcp,
    "pty": _pty,
    "throttled": _throttled,
}


@pytest.fixture(params=sorted(BACKENDS))
def link(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Link]:
    made = BACKENDS[request.param](tmp_path)
    try:
        yield made
    finally:
        made.close()


class TestBackToBack:
    """The contract every transport keeps."""

    def test_round_trip_both_directions(self, link: Link) -> None:
        for data in payloads():
            assert transfer(link.left, link.right, data) == data
            assert transfer(link.right, link.left, data) == data

    def test_read_returns_what_is_available_up_to_max_bytes(self, link: Link) -> None:
        link.left.write(b"abcdef")
        first = link.right.read(4, timeout=2)
        assert 1 <= len(first) <= 4
        assert first + read_exactly(link.right, 6 - len(first)) == b"abcdef"

    def test_read_timeout_returns_empty_promptly(self, link: Link) -> None:
        t0 = time.monotonic()
        assert link.right.read(100, timeout=0.05) == b""
        assert 0.045 <= time.monotonic() - t0 < 0.5
        t0 = time.monotonic()
        assert link.right.read(100, timeout=0) == b""
        assert time.monotonic() - t0 < 0.2

    @pytest.mark.parametrize("side", ["left", "right"])
    def test_close_from_another_thread_unblocks_reader(self, link: Link, side: str) -> None:
        t: Transport = getattr(link, side)
        reader, result = in_thread(lambda: t.read(100, timeout=10))
        wait_until_inside(reader, "_read")
        t.close()
        reader.join(2)
        assert not reader.is_alive()
        assert result["elapsed"] < 1.5
        assert result.get("value") == b"" or isinstance(result.get("error"), LinkBroken)

    def test_use_after_close_raises_and_close_is_idempotent(self, link: Link) -> None:
        link.right.close()
        link.right.close()
        assert link.right.closed
        with pytest.raises(LinkBroken):
            link.right.read(1, timeout=0)
        with pytest.raises(LinkBroken):
            link.right.write(b"x")

    def test_peer_gone_raises_peer_closed(self, link: Link) -> None:
        """A peer that closes is told apart from a failing link (PeerClosed, a LinkBroken)."""
        if not link.has_peer:
            pytest.skip("loopback has no peer")
        link.left.write(b"last words")
        link.left.close()
        got = bytearray()
        deadline = time.monotonic() + 5
        with pytest.raises(PeerClosed):
            while time.monotonic() < deadline:
                got += link.right.read(100, timeout=0.5)
        if link.keeps_data_on_close:
            assert got == b"last words"

    def test_write_times_out_when_nobody_reads(self, link: Link) -> None:
        data = bytes(32 * 1024 * 1024)  # more than any buffer in the way
        t0 = time.monotonic()
        with pytest.raises(SensorTimeout):
            link.left.write(data, timeout=0.2)
        assert time.monotonic() - t0 < 1.5

    def test_concurrent_writes_do_not_interleave(self, link: Link) -> None:
        block = 1000
        writers = [in_thread(lambda v=v: [link.left.write(bytes([v]) * block) for _ in range(50)]) for v in (1, 2)]
        got = read_exactly(link.right, 2 * 50 * block, timeout=10)
        for thread, result in writers:
            thread.join(5)
            assert "error" not in result
        for i in range(0, len(got), block):
            assert len(set(got[i : i + block])) == 1, f"block at {i} is mixed"

    def test_repr_shows_url_and_context_manager_closes(self, link: Link) -> None:
        assert link.right.url in repr(link.right)
        with link.right as t:
            assert t is link.right
        assert link.right.closed


# -- opening by URL --------------------------------------------------------------


def test_nonexistent_path_raises_link_broken_naming_it(tmp_path: Path) -> None:
    path = str(tmp_path / "ttyNOPE0")
    with pytest.raises(LinkBroken) as info:
        open_transport(path)
    assert path in str(info.value)
    assert isinstance(info.value, OSError) and info.value.errno == errno.ENOENT


def test_connection_refused_raises_link_broken_naming_url() -> None:
    server = open_transport("tcp-listen://127.0.0.1:0")
    assert isinstance(server, TcpListenTransport)
    port = server.address[1]
    server.close()
    with pytest.raises(LinkBroken, match=f"127.0.0.1:{port}"):
        open_transport(f"socket://127.0.0.1:{port}", connect_timeout=2)


@pytest.mark.parametrize(
    "url",
    [
        "nosuch://x",
        "loop://?speed=3",
        "loop://?throttle=fast",
        "loop://?throttle=0",
        "socket://host-without-port",
        "pair://",
    ],
)
def test_bad_urls_raise_value_error(url: str) -> None:
    with pytest.raises(ValueError):
        open_transport(url)


def test_errors_belong_to_the_hierarchy() -> None:
    assert issubclass(LinkBroken, SensorError) and issubclass(LinkBroken, OSError)
    assert issubclass(SensorTimeout, TimeoutError)


class _Custom(LoopTransport):
    @classmethod
    def from_url(cls, url: str, **options: Any) -> _Custom:
        return cls(url)


def test_register_backend_adds_a_scheme() -> None:
    register_backend("test-custom", f"{__name__}:_Custom")
    with open_transport("test-custom://anything") as t:
        assert isinstance(t, _Custom) and t.url == "test-custom://anything"


# -- pair -------------------------------------------------------------------------


def test_named_pair_second_open_gets_other_end() -> None:
    a = open_transport("pair://named-test")
    b = open_transport("pair://named-test")
    c = open_transport("pair://named-test")  # a fresh pair: the name was used up
    try:
        assert a is not b
        b.write(b"ping")
        assert read_exactly(a, 4) == b"ping"
        c.write(b"lost")
        assert a.read(10, timeout=0.05) == b""
        assert b.read(10, timeout=0) == b""
    finally:
        for t in (a, b, c):
            t.close()


def test_named_pair_whose_first_end_closed_starts_over() -> None:
    a = open_transport("pair://closed-test")
    a.close()
    b = open_transport("pair://closed-test")
    c = open_transport("pair://closed-test")
    try:
        c.write(b"x")
        assert b.read(1, timeout=2) == b"x"
    finally:
        b.close()
        c.close()


# -- tcp-listen ---------------------------------------------------------------------


def test_tcp_listen_without_client_drops_writes_and_reads_nothing() -> None:
    with open_transport("tcp-listen://127.0.0.1:0") as server:
        server.write(b"nobody hears this", timeout=0.1)
        assert server.read(10, timeout=0.05) == b""


def test_tcp_listen_serves_the_next_client_after_one_leaves() -> None:
    with open_transport("tcp-listen://127.0.0.1:0") as server:
        assert isinstance(server, TcpListenTransport)
        url = f"socket://127.0.0.1:{server.address[1]}"
        with open_transport(url) as first:
            assert server.wait_for_client(5)
            first.write(b"one")
            assert read_exactly(server, 3) == b"one"
        # the server notices on its next read; it must not raise
        deadline = time.monotonic() + 5
        while server.has_client and time.monotonic() < deadline:
            assert server.read(10, timeout=0.05) == b""
        assert not server.has_client
        with open_transport(url) as second:
            assert server.wait_for_client(5)
            server.write(b"two")
            assert read_exactly(second, 3) == b"two"


def test_tcp_listen_refuses_a_second_client_while_serving_one() -> None:
    with open_transport("tcp-listen://127.0.0.1:0") as server:
        assert isinstance(server, TcpListenTransport)
        url = f"socket://127.0.0.1:{server.address[1]}"
        with open_transport(url) as first, open_transport(url) as second:
            assert server.wait_for_client(5)
            reader, result = in_thread(lambda: server.read(10, timeout=0.3))
            with pytest.raises(LinkBroken):
                read_exactly(second, 1, timeout=5)
            reader.join(2)
            assert result == {"value": b"", "elapsed": pytest.approx(0.3, abs=0.25)}
            server.write(b"ok")
            assert read_exactly(first, 2) == b"ok"


# -- pty device -----------------------------------------------------------------------


def test_pty_symlink_replaced_atomically_and_removed_on_close(tmp_path: Path) -> None:
    link_path = tmp_path / "seedcam0"
    os.symlink("/dev/stale-from-a-crashed-run", link_path)
    with PtyDeviceTransport.create(str(link_path)) as dev:
        assert os.readlink(link_path) == dev.slave_path
        assert dev.slave_path in repr(dev)
    assert not os.path.lexists(link_path)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_pty_close_keeps_a_link_that_a_newer_device_took_over(tmp_path: Path) -> None:
    link_path = str(tmp_path / "seedcam0")
    old = open_transport(f"pty://{link_path}")
    new = PtyDeviceTransport.create(link_path)
    old.close()
    assert os.readlink(link_path) == new.slave_path
    new.close()
    assert not os.path.lexists(link_path)


def test_pty_device_survives_hosts_coming_and_going(tmp_path: Path) -> None:
    link_path = str(tmp_path / "seedcam0")
    with PtyDeviceTransport.create(link_path) as dev:
        dev.write(b"nobody attached yet", timeout=1)  # buffered, not an error
        for _ in range(2):
            with open_transport(link_path) as host:  # pyserial flushes stale input on open
                assert host.read(100, timeout=0.05) == b""
                host.write(b"hi")
                assert read_exactly(dev, 2) == b"hi"
                dev.write(b"yo")
                assert read_exactly(host, 2) == b"yo"
            assert dev.read(100, timeout=0.05) == b""  # no EIO once the host left


def test_pty_write_times_out_instead_of_blocking_when_no_host() -> None:
    with PtyDeviceTransport.create() as dev:
        t0 = time.monotonic()
        with pytest.raises(SensorTimeout):
            dev.write(bytes(4 * 1024 * 1024), timeout=0.2)
        assert time.monotonic() - t0 < 1.5


def test_serial_port_is_exclusive(tmp_path: Path) -> None:
    with (
        PtyDeviceTransport.create() as dev,
        open_transport(dev.slave_path),
        pytest.raises(LinkBroken, match=dev.slave_path),
    ):
        open_transport(dev.slave_path)


class _SlowToRelease(LoopTransport):
    """A transport whose port takes until ``release`` is set to close."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.releasing = threading.Event()
        self.release = threading.Event()

    def _close(self) -> None:
        self.releasing.set()
        assert self.release.wait(10)
        super()._close()


def test_a_second_close_returns_only_once_the_port_is_released() -> None:
    """Two threads closing one link (a failed link check and the user's ``with``): neither may return
    while the port is still open, or an exclusive serial port reopened at once is refused as busy."""
    transport = _SlowToRelease("slow-release://x")
    first, _ = in_thread(transport.close)
    assert transport.releasing.wait(5)
    second, second_result = in_thread(transport.close)
    second.join(0.3)
    assert second.is_alive(), "the second close returned while the first still held the port"
    transport.release.set()
    first.join(5)
    second.join(5)
    assert not first.is_alive() and not second.is_alive()
    assert "error" not in second_result


# -- throttle ---------------------------------------------------------------------------


def _measure(sender: Transport, receiver: Transport, n: int) -> float:
    data = random.Random(7).randbytes(n)
    t0 = time.monotonic()
    writer, result = in_thread(lambda: sender.write(data, timeout=10))
    got = read_exactly(receiver, n, timeout=10)
    elapsed = time.monotonic() - t0
    writer.join(5)
    assert "error" not in result
    assert got == data
    return elapsed


def test_throttle_holds_115200_when_writing() -> None:
    a, b = pair()
    with ThrottledTransport(a, 115200) as slow, b:
        n = 23040  # 2.0 s of line time at 8N1
        line_time = n * 10 / 115200
        elapsed = _measure(slow, b, n)
        assert abs(elapsed / line_time - 1) <= 0.05, f"{elapsed:.3f} s for {line_time:.3f} s of line time"


def test_throttle_holds_115200_when_reading() -> None:
    a, b = pair()
    with ThrottledTransport(a, 115200) as slow, b:
        n = 11520  # 1.0 s of line time
        line_time = n * 10 / 115200
        elapsed = _measure(b, slow, n)
        assert abs(elapsed / line_time - 1) <= 0.05, f"{elapsed:.3f} s for {line_time:.3f} s of line time"


def test_throttle_adds_little_latency_to_a_small_write() -> None:
    a, b = pair()
    with ThrottledTransport(a, 921600) as slow, b:
        for _ in range(5):
            t0 = time.monotonic()
            slow.write(b"\x00")
            assert b.read(1, timeout=1) == b"\x00"
            assert time.monotonic() - t0 < 0.02


def test_throttle_write_longer_than_timeout_raises() -> None:
    a, b = pair()
    with ThrottledTransport(a, 9600) as slow, b:
        t0 = time.monotonic()
        with pytest.raises(SensorTimeout):
            slow.write(bytes(10_000), timeout=0.1)  # needs ~10 s of line time
        assert time.monotonic() - t0 < 0.5

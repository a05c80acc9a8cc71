"""``?trace=1``: a transport wrapper that logs every byte read and written, in hex, on ``seedcam.trace``."""

from __future__ import annotations

import logging
import threading

import pytest
from helpers import wait_until_inside

from seedcam.errors import LinkBroken
from seedcam.transport import open_transport
from seedcam.transport.throttle import ThrottledTransport
from seedcam.transport.trace import TRACE_LOGGER, TracingTransport, hexdump

pytestmark = pytest.mark.timeout(30)


def test_hexdump_has_offsets_and_32_bytes_a_line() -> None:
    lines = hexdump(bytes(range(40))).splitlines()
    assert lines[0] == "  0000  " + " ".join(f"{b:02x}" for b in range(32))
    assert lines[1] == "  0020  20 21 22 23 24 25 26 27"
    assert hexdump(b"") == ""


def test_reads_and_writes_are_logged_with_their_bytes(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=TRACE_LOGGER)
    with open_transport("loop://?trace=1") as transport:
        assert isinstance(transport, TracingTransport)
        transport.write(b"\x00\x01abc\xff")
        assert transport.read(100, 1.0) == b"\x00\x01abc\xff"  # what passes through is unchanged
        assert transport.read(100, 0) == b""  # a timeout is not logged
    messages = [r.getMessage() for r in caplog.records if r.name == TRACE_LOGGER]
    assert messages == [
        "TX loop:// 6 bytes\n  0000  00 01 61 62 63 ff",
        "RX loop:// 6 bytes\n  0000  00 01 61 62 63 ff",
    ]
    assert all(r.levelno == logging.DEBUG for r in caplog.records if r.name == TRACE_LOGGER)


def test_nothing_is_logged_unless_the_logger_wants_debug(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=TRACE_LOGGER)
    with open_transport("loop://?trace=1") as transport:
        transport.write(b"abc")
        assert transport.read(10, 1.0) == b"abc"
    assert not [r for r in caplog.records if r.name == TRACE_LOGGER]


def test_trace_wraps_a_throttled_transport() -> None:
    with open_transport("loop://?throttle=115200&trace=1") as transport:
        assert isinstance(transport, TracingTransport) and isinstance(transport.inner, ThrottledTransport)
        assert transport.url == "loop://?throttle=115200&trace=1"


def test_close_unblocks_a_reader_in_another_thread() -> None:
    transport = open_transport("loop://?trace=1")
    failed: list[BaseException] = []

    def reader() -> None:
        try:
            transport.read(10, None)
        except LinkBroken as exc:
            failed.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    wait_until_inside(thread, "_read")
    transport.close()
    thread.join(5)
    assert not thread.is_alive() and failed
    assert isinstance(transport, TracingTransport) and transport.inner.closed

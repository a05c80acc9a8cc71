"""The one parser of transport URL options (``?throttle=BAUD``), shared by the SDK and the firmware."""

from __future__ import annotations

import pytest

from seedcam.transport import open_transport
from seedcam.transport.throttle import ThrottledTransport
from seedcam.transport.url_options import TransportUrl, parse_transport_url
from seedcam_firmware.config_schema import check_link_url


@pytest.mark.parametrize(
    ("url", "base", "throttle"),
    [
        ("/dev/ttyS0", "/dev/ttyS0", None),
        ("pty:///tmp/seedcam0?throttle=115200", "pty:///tmp/seedcam0", 115200),
        ("socket://localhost:7000?throttle=300", "socket://localhost:7000", 300),
        ("pty", "pty", None),
    ],
)
def test_urls_split_into_base_and_throttle(url: str, base: str, throttle: int | None) -> None:
    parsed = parse_transport_url(url)
    assert (parsed.base, parsed.throttle) == (base, throttle)
    assert str(parsed) == url


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("loop://?speed=3", "unknown query parameter"),
        ("loop://?throttle=9600&throttle=300", "given twice"),
        ("loop://?throttle=fast", "whole number"),
        ("loop://?throttle=299", "at least 300"),
        ("loop://?throttle", "malformed"),
    ],
)
def test_bad_options_are_value_errors_naming_the_problem(url: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_transport_url(url)
    with pytest.raises(ValueError, match=match):
        open_transport(url)
    assert (
        check_link_url(url.replace("loop://", "pty")) == "may only carry ?throttle=BAUD (a baud rate of at least 300)"
    )


def test_with_throttle_replaces_or_removes_the_option() -> None:
    url = parse_transport_url("pty:///tmp/x?throttle=9600")
    assert str(url.with_throttle(115200)) == "pty:///tmp/x?throttle=115200"
    assert str(url.with_throttle(None)) == "pty:///tmp/x"
    with pytest.raises(ValueError, match="at least 300"):
        TransportUrl("pty").with_throttle(10)


def test_open_transport_throttles_what_the_option_says() -> None:
    with open_transport("loop://?throttle=9600") as transport:
        assert isinstance(transport, ThrottledTransport) and transport.baud == 9600


@pytest.mark.parametrize(
    ("url", "base", "baud", "trace"),
    [
        ("/dev/ttyUSB0?baud=115200", "/dev/ttyUSB0", 115200, False),
        ("/dev/ttyUSB0?baud=250000&trace=1", "/dev/ttyUSB0", 250000, True),
        ("socket://h:1?trace=1", "socket://h:1", None, True),
    ],
)
def test_baud_and_trace_options(url: str, base: str, baud: int | None, trace: bool) -> None:
    parsed = parse_transport_url(url)
    assert (parsed.base, parsed.baud, parsed.trace) == (base, baud, trace)
    assert parse_transport_url(str(parsed)) == parsed
    assert parsed.with_throttle(9600).baud == baud  # replacing one option keeps the others


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("/dev/ttyS0?baud=fast", "whole number"),
        ("/dev/ttyS0?baud=0", "above 0"),
        ("/dev/ttyS0?baud=9600&baud=300", "given twice"),
        ("/dev/ttyS0?baudrate=9600", "did you mean 'baud'"),
        ("loop://?trace=yes", "trace=1 or trace=0"),
    ],
)
def test_bad_baud_and_trace_options(url: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_transport_url(url)


def test_with_baud_sets_checks_and_removes() -> None:
    url = parse_transport_url("/dev/ttyS0?trace=1")
    assert str(url.with_baud(57600)) == "/dev/ttyS0?baud=57600&trace=1"
    assert str(url.with_baud(57600).with_baud(None).with_trace(False)) == "/dev/ttyS0"
    with pytest.raises(ValueError, match="above 0"):
        url.with_baud(0)


def test_baud_is_for_serial_ports_only() -> None:
    with pytest.raises(ValueError, match="for serial ports"):
        open_transport("loop://?baud=9600")


def test_a_serial_url_opens_at_its_baud_rate() -> None:
    import os
    import pty
    import termios

    master, slave = pty.openpty()
    try:
        with open_transport(f"{os.ttyname(slave)}?baud=57600", baudrate=9600):  # the URL wins over the option
            assert termios.tcgetattr(slave)[5] == termios.B57600
    finally:
        os.close(master)
        os.close(slave)

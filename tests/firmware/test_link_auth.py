"""Link authentication (issue 14, "links that are not a cable"): a network listener needs the shared
key, and every request must be signed with it, freshly (MAVLink 2 signing is the model)."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import seedcam
from seedcam._link_key import session_encoder
from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import LinkBroken, RpcError
from seedcam.protocol.framing import Channel, Decoder, Encoder, Flag, Frame
from seedcam.protocol.signing import SIGNATURE_SIZE, SigningEncoder, Verifier, sign_payload
from seedcam.transport import open_transport
from seedcam.transport.url_options import parse_transport_url
from seedcam_firmware.config import config_from_dict
from seedcam_firmware.daemon import Daemon
from seedcam_firmware.errors import ConfigError
from seedcam_firmware.link_auth import LinkKeyRequired, is_network_listener

KEY = bytes(range(32))
WAIT_S = 5.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("0.0.0.0", 0))
        return int(probe.getsockname()[1])


def daemon(url: str, **link: Any) -> Daemon:
    return Daemon(
        config_from_dict(
            {
                "link": {"url": url, "health_interval_s": 0.1, **link},
                "camera": {"source": "synthetic", "width": 160, "height": 120, "fps": 10.0},
                "tasks": {"enabled": []},
            }
        )
    )


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "link.key"
    path.write_text(KEY.hex() + "\n")
    return path


@pytest.fixture
def keyed(key_file: Path) -> Iterator[str]:
    """A daemon listening on every interface with the key; yields the host's URL."""
    port = free_port()
    board = daemon(f"tcp-listen://0.0.0.0:{port}", key_file=str(key_file))
    board.start()
    try:
        yield f"socket://127.0.0.1:{port}"
    finally:
        board.stop()


def retrying(action: Any) -> Any:
    """Run ``action`` until the device takes the connection: it serves one client and notices a leaver late."""
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            return action()
        except LinkBroken:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


# ---- the listener ------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.7", "[::]", "sensor.local"])
def test_a_network_listener_without_a_key_refuses_to_start(host: str) -> None:
    board = daemon(f"tcp-listen://{host}:{free_port()}")
    with pytest.raises(LinkKeyRequired, match="link.key_file") as refused:
        board.start()
    assert isinstance(refused.value, ConfigError) and isinstance(refused.value, seedcam.SensorError)


@pytest.mark.parametrize(
    ("url", "network"),
    [
        ("tcp-listen://127.0.0.1:5760", False),
        ("tcp-listen://localhost:5760", False),
        ("tcp-listen://[::1]:5760", False),
        ("tcp-listen://127.0.0.1:5760?throttle=115200", False),
        ("tcp-listen://0.0.0.0:5760", True),
        ("tcp-listen://10.0.0.2:5760", True),
        ("pty", False),
        ("/dev/ttyGS0", False),
    ],
)
def test_which_links_are_network_listeners(url: str, network: bool) -> None:
    assert is_network_listener(url) is network


def test_a_loopback_listener_starts_without_a_key() -> None:
    board = daemon(f"tcp-listen://127.0.0.1:{free_port()}")
    board.start()
    board.stop()


def test_an_unreadable_or_short_key_file_is_a_config_error(tmp_path: Path) -> None:
    short = tmp_path / "short.key"
    short.write_text("abcd")
    for path in (short, tmp_path / "missing.key"):
        with pytest.raises(ConfigError, match="link.key_file"):
            daemon(f"tcp-listen://0.0.0.0:{free_port()}", key_file=str(path)).start()


def test_the_device_url_may_not_carry_a_hosts_key_file(key_file: Path) -> None:
    with pytest.raises(ConfigError, match="link_key_file"):
        daemon(f"tcp-listen://127.0.0.1:{free_port()}?link_key_file={key_file}").start()


# ---- end to end --------------------------------------------------------------------------


def test_a_host_with_the_key_works_end_to_end(keyed: str, key_file: Path) -> None:
    with seedcam.open(keyed, timeout=WAIT_S, link_key=KEY.hex()) as sensor:
        assert sensor.device_info is not None
        assert isinstance(sensor.config_get("pipeline.jpeg_quality"), int)
        assert sensor.ping() >= 0
        assert sensor.recv(timeout=WAIT_S) is not None  # results flow
    with retrying(lambda: seedcam.open(f"{keyed}?link_key_file={key_file}", timeout=WAIT_S)) as sensor:  # a key file
        assert sensor.info().serial_number


@pytest.mark.parametrize("link_key", [None, bytes(32).hex(), bytes(reversed(KEY))])
def test_a_host_without_the_key_or_with_a_wrong_one_is_refused_and_counted(keyed: str, link_key: Any) -> None:
    options = {} if link_key is None else {"link_key": link_key}
    with pytest.raises(RpcError) as refused:
        retrying(lambda: seedcam.open(keyed, timeout=WAIT_S, reconnect=False, **options))
    assert refused.value.status == "UNAUTHENTICATED"
    with retrying(lambda: seedcam.open(keyed, timeout=WAIT_S, link_key=KEY, reconnect=False)) as sensor:
        deadline = time.monotonic() + WAIT_S
        while (sensor.health is None or sensor.health.unauthenticated_requests < 1) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sensor.health is not None and sensor.health.unauthenticated_requests >= 1


def _exchange(url: str, data: bytes) -> pb.Response | None:
    return retrying(lambda: _exchange_once(url, data))  # type: ignore[no-any-return]


def _exchange_once(url: str, data: bytes) -> pb.Response | None:
    """Write raw frame bytes to the device; the CONTROL response, or None when none came."""
    decoder = Decoder()
    with open_transport(url) as transport:
        transport.write(data, WAIT_S)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            for frame in decoder.feed(transport.read(65536, 0.1)):
                if frame.channel == Channel.CONTROL and frame.flags & Flag.RESPONSE:
                    return pb.Response.FromString(frame.payload)
    return None


def test_a_signed_request_replayed_outside_the_window_is_refused(keyed: str) -> None:
    request = pb.Request(ping=pb.PingRequest(payload=b"x")).SerializeToString()
    recorded_us = (time.time_ns() // 1000) - 120_000_000  # signed 2 minutes ago, replayed now
    old = Encoder().encode(Channel.CONTROL, sign_payload(KEY, Channel.CONTROL, 7, request, recorded_us), seq=7)
    answer = _exchange(keyed, old)
    assert answer is not None and answer.status == pb.STATUS_UNAUTHENTICATED
    fresh_us = time.time_ns() // 1000
    fresh = Encoder().encode(Channel.CONTROL, sign_payload(KEY, Channel.CONTROL, 8, request, fresh_us), seq=8)
    answer = _exchange(keyed, fresh)
    assert answer is not None and answer.status == pb.STATUS_OK  # the same request, signed now, is answered
    again = Encoder().encode(Channel.CONTROL, sign_payload(KEY, Channel.CONTROL, 9, request, fresh_us), seq=9)
    answer = _exchange(keyed, again)  # a timestamp not newer than the last accepted one
    assert answer is not None and answer.status == pb.STATUS_UNAUTHENTICATED


# ---- the signature -----------------------------------------------------------------------


class Clock:
    def __init__(self, seconds: float) -> None:
        self.ns = int(seconds * 1e9)

    def __call__(self) -> int:
        return self.ns


def _signed(payload: bytes, seq: int, clock: Clock, key: bytes = KEY) -> Frame:
    data = SigningEncoder(key, clock=clock).encode(Channel.CONTROL, payload, seq=seq)
    (frame,) = Decoder().feed(data)
    return frame


def test_the_verifier_refuses_each_kind_of_bad_signature_and_counts_it() -> None:
    clock = Clock(1_800_000_000)
    verifier = Verifier(KEY, window_s=60, clock=clock)
    good = _signed(b"request", 1, clock)
    assert len(good.payload) == len(b"request") + SIGNATURE_SIZE
    assert verifier.verify(good) == (b"request", "")
    assert verifier.verify(good)[1] == "replayed"
    assert verifier.verify(Frame(Channel.CONTROL, 2, b"short"))[1] == "missing"
    assert verifier.verify(_signed(b"request", 3, clock, key=bytes(32)))[1] == "bad_signature"
    tampered = _signed(b"request", 4, Clock(1_800_000_001))
    assert verifier.verify(Frame(Channel.CONTROL, 5, tampered.payload))[1] == "bad_signature"  # seq is covered
    assert verifier.verify(_signed(b"request", 6, Clock(1_800_000_000 - 61)))[1] == "outside_window"
    assert verifier.verify(_signed(b"request", 7, Clock(1_800_000_000 + 61)))[1] == "outside_window"
    assert verifier.verify(_signed(b"request", 8, Clock(1_800_000_002))) == (b"request", "")
    assert verifier.refused == {"missing": 1, "bad_signature": 2, "outside_window": 2, "replayed": 1}
    assert verifier.refused_total == 6


def test_signed_timestamps_keep_increasing_when_the_clock_steps_back() -> None:
    clock = Clock(1_800_000_000)
    encoder = SigningEncoder(KEY, clock=clock)
    verifier = Verifier(KEY, clock=Clock(1_800_000_000))
    for seq in range(3):
        (frame,) = Decoder().feed(encoder.encode(Channel.CONTROL, b"r", seq=seq))
        assert verifier.verify(frame) == (b"r", "")
        clock.ns -= 1_000_000_000


def test_responses_and_results_are_not_signed() -> None:
    encoder = SigningEncoder(KEY)
    assert encoder.encode(Channel.RESULT, b"r") == Encoder().encode(Channel.RESULT, b"r")
    assert encoder.encode(Channel.CONTROL, b"r", seq=3, flags=Flag.RESPONSE) == Encoder().encode(
        Channel.CONTROL, b"r", seq=3, flags=Flag.RESPONSE
    )


def test_the_host_key_options(tmp_path: Path) -> None:
    path = tmp_path / "k"
    path.write_text(KEY.hex())
    assert type(session_encoder("socket://h:1", {})[0]) is Encoder
    encoder, rest = session_encoder(f"socket://h:1?link_key_file={path}", {"connect_timeout": 2})
    assert isinstance(encoder, SigningEncoder) and rest == {"connect_timeout": 2}
    assert isinstance(session_encoder("socket://h:1", {"link_key": KEY})[0], SigningEncoder)
    with pytest.raises(ValueError, match="give one"):
        session_encoder(f"socket://h:1?link_key_file={path}", {"link_key": KEY})
    with pytest.raises(ValueError, match="at least 16 bytes"):
        session_encoder("socket://h:1", {"link_key": b"short"})
    with pytest.raises(ValueError, match="hex"):
        session_encoder("socket://h:1", {"link_key": "not hex"})
    with pytest.raises(ValueError, match="cannot read"):
        session_encoder(f"socket://h:1?link_key_file={tmp_path / uuid.uuid4().hex}", {})
    url = parse_transport_url(f"socket://h:1?throttle=9600&link_key_file={path}")
    assert parse_transport_url(str(url)) == url and parse_transport_url(str(url.with_throttle(None))).throttle is None

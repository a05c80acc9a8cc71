"""The session seam on its own: frames by channel, calls by sequence number, link events.

Against the real firmware link end (LinkServer + Dispatcher) on a pair://, as test_sensor.py.
"""

# ruff: noqa: F811  (tests take the fixtures imported from fake_device as parameters)

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from fake_device import WAIT_S, FakeDevice, make_device, wait_until  # noqa: F401 - fixtures

import seedcam
from seedcam import LinkBroken, Session
from seedcam._proto import seedcam_pb2 as pb
from seedcam.protocol import codec
from seedcam.protocol.compact import CompactDecoder
from seedcam.protocol.framing import Channel, Flag, Frame

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def fake(make_device: Any) -> FakeDevice:
    return make_device(connect=False)


@pytest.fixture
def session(fake: FakeDevice) -> Iterator[Session]:
    s = Session(fake.url, timeout=WAIT_S, reconnect=False)
    yield s
    s.close()


def _ping(payload: bytes) -> bytes:
    return pb.Request(ping=pb.PingRequest(payload=payload)).SerializeToString()


def test_nothing_opens_before_start_and_early_subscribers_see_the_first_frames(
    fake: FakeDevice, session: Session
) -> None:
    statuses: list[Frame] = []
    session.subscribe(Channel.STATUS, statuses.append)
    assert not session.connected
    session.start()
    session.start()  # once is enough; again does nothing
    assert session.connected
    wait_until(lambda: statuses, what="the Hello sent when the host connects")
    event = codec.parse(pb.StatusEvent, statuses[0].payload)
    assert event.WhichOneof("body") == "hello"
    assert codec.device_info_from_pb(event.hello.device).boot_id == fake.services.boot_id


def test_a_call_gets_the_response_with_its_sequence_number(session: Session) -> None:
    session.start()
    seen: list[Frame] = []
    session.subscribe(Channel.CONTROL, seen.append)
    for payload in (b"one", b"two\x00three"):
        answer = session.call(Channel.CONTROL, _ping(payload), what="ping")
        assert answer.channel == Channel.CONTROL and answer.flags & Flag.RESPONSE
        assert codec.parse(pb.Response, answer.payload).pong.payload == payload
    assert seen == []  # answers that a call waits for go to the call, not to subscribers


def _take_dictionary(decoder: CompactDecoder, frame: Frame) -> None:
    event = codec.parse(pb.StatusEvent, frame.payload)
    if event.WhichOneof("body") == "dictionary":
        decoder.set_dictionary(codec.result_dictionary_from_pb(event.dictionary))


def test_frames_go_to_their_channel_until_unsubscribed(fake: FakeDevice, session: Session) -> None:
    results: list[int] = []
    logs: list[Frame] = []
    compact = CompactDecoder()  # the results' names come in the dictionary announced before them
    session.subscribe(Channel.STATUS, lambda f: _take_dictionary(compact, f))
    unsubscribe = session.subscribe(Channel.RESULT, lambda f: results.append(compact.decode(f.payload).frame_id))
    session.subscribe(Channel.LOG, logs.append)
    session.start()
    fake.send_result(1)
    fake.send_result(2)
    wait_until(lambda: results == [1, 2], what="two results")
    unsubscribe()
    unsubscribe()  # twice is harmless
    fake.send_result(3)
    session.call(Channel.CONTROL, _ping(b"sync"))  # everything sent before the answer was handled
    assert results == [1, 2] and logs == []
    assert session.link_counters.frames_rx >= 3


def test_send_numbers_frames_and_tells_the_number_before_the_bytes_go_out(session: Session) -> None:
    session.start()
    told: list[int] = []
    first = session.send(Channel.TRANSFER, b"", before_send=told.append)
    second = session.send(Channel.TRANSFER, b"")
    assert told == [first] and second == (first + 1) % 65536


def test_a_closed_session_refuses_everything(session: Session) -> None:
    session.start()
    session.close()
    session.close()  # idempotent
    assert session.closed and not session.connected
    assert session.wait_closed(0.0)
    assert not session.wait_link(0.0)
    with pytest.raises(LinkBroken):
        session.check_alive()
    with pytest.raises(LinkBroken):
        session.call(Channel.CONTROL, _ping(b"x"))
    with pytest.raises(LinkBroken):
        session.start()


def test_link_lost_and_restored_listeners(fake: FakeDevice) -> None:
    lost: list[LinkBroken] = []
    restored = threading.Event()
    with Session(fake.url, timeout=WAIT_S, reconnect_interval=0.02) as session:
        session.on_link_lost(lost.append)
        session.on_link_restored(restored.set)
        session.call(Channel.CONTROL, _ping(b"up"))
        fake.drop_link()
        assert restored.wait(WAIT_S), "the session never reopened the link"
        assert len(lost) == 1 and isinstance(lost[0], LinkBroken)
        assert session.wait_link(WAIT_S) and session.reconnects == 1
        session.check_alive()
        assert codec.parse(pb.Response, session.call(Channel.CONTROL, _ping(b"back")).payload).pong.payload == b"back"


def test_a_sensor_is_typed_calls_over_its_session(fake: FakeDevice) -> None:
    sensor = fake.connect(reconnect=False)
    assert isinstance(sensor.session, seedcam.Session)
    assert sensor.session.url == sensor.url == fake.url
    frames: list[Frame] = []
    sensor.session.subscribe(Channel.RESULT, frames.append)
    fake.send_result(7)
    result = sensor.recv(timeout=WAIT_S)
    assert result is not None and result.frame_id == 7
    wait_until(lambda: frames, what="the frame at a second subscriber")  # after the sensor's own, on the same thread
    assert frames[0].payload[1:3] == (7).to_bytes(2, "little")  # the compact layout's frame id field

"""A call's timeout is kept under load: no wait in it outlives what is left of its deadline (issue 14, finding 13).

The load that made calls overshoot: the link busy with another thread's frame (a push's
chunks on a slow line, a large ping), whose write holds the session's write lock. Here that
writer is made to block for as long as the test likes: a ``pair://`` link with a small buffer
whose other end is never read. A call, a send or an update request made meanwhile must give
up on its own deadline: never early, and at most 10 % late.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fake_device import FakeServices
from helpers import wait_until, wait_until_inside

from seedcam import LinkBroken, SensorTimeout, Session
from seedcam._proto import seedcam_pb2 as pb
from seedcam._update_channel import UpdateChannel
from seedcam.errors import SensorError
from seedcam.protocol.framing import Channel
from seedcam.transport import Transport, open_transport
from seedcam_firmware.link_server import LinkServer
from seedcam_firmware.rpc import Dispatcher

TIMEOUT_S = 1.0
MAX_OVERSHOOT = 0.10  # what issue 14 asks: within 10 % of the timeout
BLOCKED_WRITE_S = 4 * TIMEOUT_S  # how long the busy writer holds the link


@pytest.fixture
def busy_link() -> Iterator[tuple[Session, Transport]]:
    """A session whose link is held by a write that blocks for ``BLOCKED_WRITE_S``, and the device end."""
    url = f"pair://deadline-{uuid.uuid4().hex[:12]}"
    session = Session(url, timeout=TIMEOUT_S, reconnect=False, capacity=256)
    session.start()
    peer: Transport = open_transport(url)  # the device end: not read, so the buffer fills up
    writer = threading.Thread(target=_blocked_send, args=(session,), name="busy-writer", daemon=True)
    writer.start()
    wait_until_inside(writer, "put")  # the big frame is half written and the write waits for room
    try:
        yield session, peer
    finally:
        session.close()
        peer.close()
        writer.join(BLOCKED_WRITE_S + 1)


@pytest.fixture
def busy_session(busy_link: tuple[Session, Transport]) -> Session:
    return busy_link[0]


def _read_all(peer: Transport) -> None:
    """The device end starts reading (and never answers): the busy write completes."""
    try:
        while True:
            peer.read(65536, 0.1)
    except SensorError:
        pass  # closed at teardown


def _blocked_send(session: Session) -> None:
    try:
        session.send(Channel.LOG, b"\x01" * 4096, BLOCKED_WRITE_S)
    except SensorError:
        pass  # timed out or closed under it: what the test arranged


Expected = type[SensorError] | tuple[type[SensorError], ...]


def _time(action: Callable[[], object], expected: Expected = SensorTimeout) -> float:
    start = time.monotonic()
    with pytest.raises(expected):
        action()
    return time.monotonic() - start


def _assert_on_time(elapsed: float, timeout: float = TIMEOUT_S) -> None:
    assert elapsed >= timeout - 0.005, f"gave up early: {elapsed:.3f} s of {timeout} s"
    assert elapsed <= timeout * (1 + MAX_OVERSHOOT), f"overshot: {elapsed:.3f} s for a {timeout} s timeout"


def test_a_call_behind_a_busy_writer_times_out_on_its_own_deadline(busy_session: Session) -> None:
    _assert_on_time(_time(lambda: busy_session.call(Channel.CONTROL, b"request", TIMEOUT_S)))


def test_a_send_behind_a_busy_writer_times_out_on_its_own_deadline(busy_session: Session) -> None:
    _assert_on_time(_time(lambda: busy_session.send(Channel.CONTROL, b"request", TIMEOUT_S)))


def test_an_update_request_behind_a_busy_writer_times_out_on_its_own_deadline(busy_session: Session) -> None:
    request = pb.UpdateRequest(list_slots=pb.ListSlotsRequest())
    with UpdateChannel(busy_session) as channel:
        _assert_on_time(_time(lambda: channel.call(request, TIMEOUT_S)))


def test_an_update_request_that_waited_for_the_link_has_only_the_rest_of_its_timeout(
    busy_link: tuple[Session, Transport],
) -> None:
    """The busy write ends half-way through the timeout; the request goes out, no answer comes."""
    session, peer = busy_link
    reader = threading.Timer(TIMEOUT_S / 2, _read_all, args=(peer,))  # the load lifts half-way
    reader.start()
    request = pb.UpdateRequest(list_slots=pb.ListSlotsRequest())
    with UpdateChannel(session) as channel:
        _assert_on_time(_time(lambda: channel.call(request, TIMEOUT_S)))
    assert session.link_counters.frames_tx == 2  # the busy frame and the request went out


def test_calls_waiting_for_a_link_that_does_not_come_back_keep_their_deadlines(tmp_path: Path) -> None:
    """A second call while a first, longer one waits for the link: neither holds the other up."""
    server = LinkServer(f"pty://{tmp_path / 'sensor'}", Dispatcher(FakeServices()))
    server.start()
    session = Session(str(tmp_path / "sensor"), timeout=TIMEOUT_S, reconnect=True, reconnect_interval=0.05)
    session.start()
    try:
        server.close()  # the pty and its symlink are gone: reopening fails from now on
        wait_until(lambda: not session.connected, what="the session to notice the loss")
        gone = (LinkBroken, SensorTimeout)  # "the link is down", once the time is up
        first = threading.Thread(target=lambda: _time(lambda: session.call(Channel.CONTROL, b"a", 3 * TIMEOUT_S), gone))
        first.start()
        wait_until_inside(first, "wait_for")
        _assert_on_time(_time(lambda: session.call(Channel.CONTROL, b"b", TIMEOUT_S), gone))
        first.join(3 * TIMEOUT_S + 1)
    finally:
        session.close()

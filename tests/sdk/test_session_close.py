"""Closing a session frees its port: close() returns only once the reader thread has let go of it."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import seedcam.session as session_module
from seedcam.errors import LinkBroken
from seedcam.session import Session


class _Port:
    """A transport stand-in: ``broken`` ones fail their first read, as a board that was unplugged."""

    def __init__(self, *, broken: bool) -> None:
        self.broken = broken
        self.closed = False

    def read(self, max_bytes: int, timeout: float | None) -> bytes:
        if self.broken or self.closed:
            raise LinkBroken("unplugged")
        threading.Event().wait(timeout or 0)
        return b""

    def write(self, data: bytes, timeout: float | None = 5.0) -> None:
        if self.closed:
            raise LinkBroken("closed")

    def close(self) -> None:
        self.closed = True


def test_a_second_close_waits_for_a_reader_still_reopening_the_port(monkeypatch: pytest.MonkeyPatch) -> None:
    first, reopened = _Port(broken=True), _Port(broken=False)
    reopening, let_it_open = threading.Event(), threading.Event()

    opened: list[_Port] = []

    def open_transport(url: str, **options: Any) -> _Port:
        if not opened:
            opened.append(first)
            return first
        reopening.set()
        assert let_it_open.wait(10)
        return reopened

    monkeypatch.setattr(session_module, "open_transport", open_transport)
    session = Session("fake://board", reconnect=True, reconnect_interval=0.01)
    session.start()
    assert reopening.wait(10)  # the link broke and the reader is inside open_transport
    other = threading.Thread(target=session.close)  # e.g. the link check refusing a swapped board
    other.start()
    with session._state:
        assert session._state.wait_for(lambda: session.closed, 10)
    second = threading.Thread(target=session.close)
    second.start()
    second.join(0.3)
    assert second.is_alive()  # a second close() waits while the reader still holds the port open
    let_it_open.set()
    second.join(10)
    assert not second.is_alive()
    assert reopened.closed  # the reader closed what it had opened before close() returned
    other.join(10)

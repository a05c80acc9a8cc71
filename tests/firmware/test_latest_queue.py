"""LatestQueue: bounded, latest-wins, never blocks the producer."""

from __future__ import annotations

import threading
import time

import pytest

from seedcam_firmware.latest_queue import LatestQueue

WAIT_S = 5.0


def test_full_queue_drops_oldest_and_counts_it() -> None:
    queue: LatestQueue[int] = LatestQueue(2)
    assert queue.put(1) is None
    assert queue.put(2) is None
    assert queue.put(3) == 1
    assert queue.put(4) == 2
    assert queue.dropped == 2
    assert len(queue) == 2
    assert [queue.get(0), queue.get(0)] == [3, 4]
    assert queue.get(0) is None
    assert queue.dropped == 2


def test_maxsize_must_be_positive() -> None:
    with pytest.raises(ValueError):
        LatestQueue(0)


def test_get_timeout_returns_none_promptly() -> None:
    queue: LatestQueue[int] = LatestQueue(1)
    start = time.monotonic()
    assert queue.get(0.05) is None
    elapsed = time.monotonic() - start
    assert 0.04 <= elapsed < 1.0


def test_put_wakes_a_blocked_getter() -> None:
    queue: LatestQueue[str] = LatestQueue(1)
    got: list[str | None] = []
    waiting = threading.Event()

    def getter() -> None:
        waiting.set()
        got.append(queue.get(WAIT_S))

    thread = threading.Thread(target=getter)
    thread.start()
    assert waiting.wait(WAIT_S)
    queue.put("frame")
    thread.join(WAIT_S)
    assert not thread.is_alive()
    assert got == ["frame"]


def test_close_wakes_a_blocked_getter_and_drains_what_is_left() -> None:
    queue: LatestQueue[int] = LatestQueue(2)
    got: list[int | None] = []
    waiting = threading.Event()

    def getter() -> None:
        waiting.set()
        got.append(queue.get(WAIT_S))

    thread = threading.Thread(target=getter)
    thread.start()
    assert waiting.wait(WAIT_S)
    start = time.monotonic()
    queue.close()
    thread.join(WAIT_S)
    assert not thread.is_alive()
    assert time.monotonic() - start < WAIT_S / 2  # woken by close, not by its timeout
    assert got == [None]

    queue.put(7)  # after close: what is left comes out, then None at once
    assert queue.get(WAIT_S) == 7
    start = time.monotonic()
    assert queue.get(WAIT_S) is None
    assert time.monotonic() - start < 1.0

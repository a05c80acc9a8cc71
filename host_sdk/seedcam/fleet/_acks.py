"""Which QoS 1 messages of a bridge the broker has not acknowledged yet (paho's ``on_publish`` tells)."""

from __future__ import annotations

import threading

__all__ = ["Unacked"]


class Unacked:
    """Message ids published at QoS 1 and not acknowledged (queued during an outage included).

    paho's network thread may see a PUBACK before :meth:`published` ran on the publishing
    thread; such an early acknowledgement is remembered, so the count never dips below the truth.
    """

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._waiting: set[int] = set()
        self._early: set[int] = set()

    def published(self, mid: int) -> None:
        """A QoS 1 message paho took (sent, or queued until the broker is back)."""
        with self._lock:
            if mid in self._early:
                self._early.discard(mid)
            else:
                self._waiting.add(mid)

    def acknowledged(self, mid: int) -> None:
        """paho's ``on_publish``: the broker acknowledged ``mid``."""
        with self._lock:
            if mid in self._waiting:
                self._waiting.discard(mid)
                if not self._waiting:
                    self._lock.notify_all()
            else:
                self._early.add(mid)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self._waiting)

    def wait_empty(self, timeout: float) -> bool:
        """Block until every QoS 1 message is acknowledged; False after ``timeout`` s."""
        with self._lock:
            return self._lock.wait_for(lambda: not self._waiting, timeout)

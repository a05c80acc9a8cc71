"""Which QoS 1 messages of a bridge the broker has not acknowledged yet (paho's ``on_publish`` tells)."""

from __future__ import annotations

import threading

__all__ = ["Unacked"]


class Unacked:
    """Message ids published at QoS 1 and not acknowledged (queued during an outage included).

    Each QoS 1 publish is bracketed by :meth:`begin` and :meth:`end`. paho's network thread
    may see a PUBACK before :meth:`end` ran on the publishing thread; an id acknowledged
    while a publish is under way is remembered, with the newest publish begun by then, and
    taken as that message's acknowledgement only by a publish begun before it. paho also
    calls ``on_publish`` for every QoS 0 message, from the same counter of ids (they wrap
    after 65535), so any other id that is not waited for is ignored: it cannot stand for a
    later QoS 1 message that reuses it. (A lock held across paho's ``publish()`` would keep
    the order without any of this, but deadlocks: paho calls ``on_publish`` holding the
    lock that its ``publish()`` takes.)
    """

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._waiting: set[int] = set()
        self._begun = 0  #: QoS 1 publishes begun so far (each one's ticket is this count then)
        self._under_way: set[int] = set()  #: tickets of the publishes not ended yet
        self._early: dict[int, int] = {}  #: id acknowledged while not waited for -> the newest ticket then

    def begin(self) -> int:
        """A QoS 1 publish starts (before paho's ``publish()``); its ticket for :meth:`end`."""
        with self._lock:
            self._begun += 1
            self._under_way.add(self._begun)
            return self._begun

    def end(self, ticket: int, mid: int | None) -> None:
        """The publish of ``ticket`` returned: paho took ``mid`` (sent, or queued until the broker is back), or None."""
        with self._lock:
            self._under_way.discard(ticket)
            if mid is not None and self._early.pop(mid, 0) < ticket:
                self._waiting.add(mid)
            oldest = min(self._under_way, default=self._begun + 1)
            self._early = {m: newest for m, newest in self._early.items() if newest >= oldest}

    def acknowledged(self, mid: int) -> None:
        """paho's ``on_publish``: the broker acknowledged ``mid`` (or paho wrote a QoS 0 message)."""
        with self._lock:
            if mid in self._waiting:
                self._waiting.discard(mid)
                if not self._waiting:
                    self._lock.notify_all()
            elif self._under_way:
                self._early[mid] = self._begun

    @property
    def count(self) -> int:
        with self._lock:
            return len(self._waiting)

    def wait_empty(self, timeout: float) -> bool:
        """Block until every QoS 1 message is acknowledged; False after ``timeout`` s."""
        with self._lock:
            return self._lock.wait_for(lambda: not self._waiting, timeout)

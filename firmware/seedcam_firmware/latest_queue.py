"""A bounded latest-wins queue between pipeline stages."""

from __future__ import annotations

import collections
import threading
from typing import Generic, TypeVar

__all__ = ["LatestQueue"]

T = TypeVar("T")


class LatestQueue(Generic[T]):
    """A bounded FIFO where a full queue drops its oldest item instead of blocking.

    A slow stage never stalls the one before it: it simply sees the newest
    frames, and :attr:`dropped` counts what it missed.
    """

    def __init__(self, maxsize: int = 2) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self._items: collections.deque[T] = collections.deque()
        self._maxsize = maxsize
        self._ready = threading.Condition()
        self._closed = False
        self.dropped = 0

    def put(self, item: T) -> T | None:
        """Append ``item``; returns the item dropped to make room, if any."""
        with self._ready:
            dropped = None
            if len(self._items) >= self._maxsize:
                dropped = self._items.popleft()
                self.dropped += 1
            self._items.append(item)
            self._ready.notify()
            return dropped

    def get(self, timeout: float) -> T | None:
        """Return the oldest item, waiting up to ``timeout`` s; None on timeout or when closed."""
        with self._ready:
            self._ready.wait_for(lambda: self._items or self._closed, timeout)
            return self._items.popleft() if self._items else None

    def close(self) -> None:
        """Wake every waiter; later gets return what is left, then None."""
        with self._ready:
            self._closed = True
            self._ready.notify_all()

    def __len__(self) -> int:
        with self._ready:
            return len(self._items)

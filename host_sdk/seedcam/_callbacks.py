"""A list of callbacks that user code registers and a reader thread calls."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Callbacks"]

T = TypeVar("T")


class Callbacks(Generic[T]):
    """Callbacks of one kind: add from any thread, call from the reader thread.

    A callback that raises is logged (on ``log``) and the others still run, so
    user code cannot kill the thread that calls it. Calling reads an immutable
    snapshot, so a callback may unregister itself or others while it runs.
    """

    def __init__(self, log: logging.Logger) -> None:
        self._log = log
        self._lock = threading.Lock()
        self._callbacks: tuple[Callable[[T], None], ...] = ()

    def add(self, callback: Callable[[T], None]) -> Callable[[], None]:
        """Register ``callback``; returns a function that unregisters it (calling it twice is harmless)."""
        with self._lock:
            self._callbacks = (*self._callbacks, callback)

        def unregister() -> None:
            with self._lock:
                if callback in self._callbacks:
                    remaining = list(self._callbacks)
                    remaining.remove(callback)
                    self._callbacks = tuple(remaining)

        return unregister

    def __call__(self, value: T) -> None:
        """Call every callback with ``value``, in the order they were added."""
        for callback in self._callbacks:
            try:
                callback(value)
            except Exception:  # user code must not kill the reader thread
                self._log.exception("seedcam callback %r failed", callback)

    def __bool__(self) -> bool:
        return bool(self._callbacks)

"""Holding a reopened link until a check says that it still leads to the same device."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from seedcam.errors import LinkBroken, SensorError, SensorTimeout

__all__ = ["LinkGate"]

log = logging.getLogger(__name__)


class LinkGate:
    """Whether frames may go out on the current link, and the thread that checks a reopened one.

    A :class:`~seedcam.session.Session` owns one; its ``state`` condition guards the gate:
    :meth:`passes` and :meth:`hold` are called with it held, and waiters on it are
    notified when a check passes.

    Args:
        state: the session's condition.
        name: the link, for the checker thread's name and the log.

    Attributes:
        check: run after each reconnect (see :meth:`seedcam.session.Session.set_link_check`);
            None: a reopened link is up at once.
    """

    def __init__(self, state: threading.Condition, name: str) -> None:
        self.check: Callable[[], None] | None = None
        self._state = state
        self._name = name
        self._checker: threading.Thread | None = None  # its own calls pass the gate
        self._passed = True

    def passes(self) -> bool:
        """Frames may go out: the link was checked, or this is the thread checking it."""
        return self._passed or threading.current_thread() is self._checker

    def hold(
        self, still_current: Callable[[], bool], fail: Callable[[SensorError], None], pause: Callable[[], bool]
    ) -> None:
        """Close the gate and start the check on a thread of its own; without a check the gate stays open.

        Args:
            still_current: True while the link being checked is the session's (called with the state held).
            fail: ends the session with the check's error.
            pause: waits before a retry; True when the session closed meanwhile.
        """
        check = self.check
        if check is None:
            self._passed = True
            return
        self._passed = False
        checker = threading.Thread(
            target=self._run,
            args=(check, still_current, fail, pause),
            name=f"seedcam-link-check {self._name}",
            daemon=True,
        )
        self._checker = checker
        checker.start()

    def _run(
        self,
        check: Callable[[], None],
        still_current: Callable[[], bool],
        fail: Callable[[SensorError], None],
        pause: Callable[[], bool],
    ) -> None:
        """Run ``check`` until it passes, the link goes, or it fails the session."""
        me = threading.current_thread()
        while True:
            with self._state:
                if self._checker is not me or not still_current():
                    return  # a newer link has its own check
            try:
                check()
            except SensorTimeout as exc:  # the device may still be starting
                log.debug("link check of %s: %s; trying again", self._name, exc)
                if pause():
                    return
                continue
            except LinkBroken as exc:
                log.debug("link check of %s: %s", self._name, exc)
                return  # the session reconnects and checks again
            except SensorError as exc:
                log.debug("link to %s failed its check: %s", self._name, exc)
                fail(exc)
                return
            except Exception as exc:  # a bug in the check must not leave calls waiting forever
                log.exception("link check of %s failed", self._name)
                fail(LinkBroken(f"the link check of {self._name} failed: {exc}"))
                return
            with self._state:
                if self._checker is me and still_current():
                    self._passed = True
                    self._state.notify_all()
            return

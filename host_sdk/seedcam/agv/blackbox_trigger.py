"""The AGV watchdog as a black-box trigger: each trip asks the sensor to freeze the seconds before it.

:class:`ControlLoop` owns one of these when its sensor has a black box
(:meth:`seedcam.Sensor.blackbox_trigger`). The loop's thread only compares a counter
and hands a trip over; one worker thread of its own makes the call (with a short
timeout), so a slow or silent sensor never delays a drive command. A sensor that
cannot freeze is logged once and then left quiet: a firmware without a black box
(``UNSUPPORTED``) is not asked again; a recording or a busy black box (``UNAVAILABLE``)
and one that is off (``FAILED_PRECONDITION``, a live key) are asked on later trips
without another log line at INFO, since a live sensor's answer may change.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import RpcError, SensorError

if TYPE_CHECKING:
    from seedcam.types import BlackBoxFileInfo

__all__ = ["BlackBoxSensor", "WatchdogBlackBox", "for_sensor"]

log = logging.getLogger(__name__)

#: device answers meaning "this sensor cannot freeze a black box (now)": logged once, then quiet
_CANNOT_FREEZE = frozenset({pb.STATUS_UNSUPPORTED, pb.STATUS_UNAVAILABLE, pb.STATUS_FAILED_PRECONDITION})
#: of those, the answer of a firmware that has no black box at all: not asked again
_NO_BLACK_BOX = pb.STATUS_UNSUPPORTED
_STOP = None


class BlackBoxSensor(Protocol):
    """What the trigger uses of :class:`seedcam.Sensor`."""

    def blackbox_trigger(self, reason: str = "", timeout: float | None = None) -> BlackBoxFileInfo: ...


class WatchdogBlackBox:
    """Freezes the sensor's black box once per watchdog trip, off the caller's thread.

    Args:
        sensor: the sensor the controller runs against.
        timeout_s: how long one trigger call may wait for the sensor's answer.

    Attributes:
        frozen: the files the sensor froze, in order.
        failures: calls that failed (a timeout, a broken link), each logged.
        unsupported: the sensor's last "cannot freeze" answer (empty while it froze every trip).
        refusals: trips the sensor answered that way.
        asking: False once the sensor said it has no black box (``UNSUPPORTED``).
    """

    def __init__(self, sensor: BlackBoxSensor, *, timeout_s: float = 2.0) -> None:
        if timeout_s <= 0:
            raise ValueError("timeout_s must be > 0")
        self.sensor = sensor
        self.timeout_s = timeout_s
        self.frozen: list[BlackBoxFileInfo] = []
        self.failures = 0
        self.unsupported = ""
        self.refusals = 0
        self.asking = True
        self._seen_trips = 0
        self._asked = 0
        self._done = threading.Condition()
        self._handled = 0
        self._queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def check(self, trips: int, timeout_s: float) -> None:
        """Called by the loop with the watchdog's trip count; a new trip queues one trigger. Never blocks."""
        if trips <= self._seen_trips:
            return
        self._seen_trips = trips
        if not self.asking:
            return
        reason = f"AGV watchdog tripped (no fresh result for {timeout_s:g} s, trip {trips})"
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="seedcam-agv-blackbox", daemon=True)
            self._thread.start()
        self._asked += 1
        self._queue.put(reason)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until every trip queued so far has been answered (or has failed); False on timeout."""
        with self._done:
            return self._done.wait_for(lambda: self._handled >= self._asked, timeout)

    def close(self) -> None:
        """Let the worker finish what is queued and end (it does not wait for it)."""
        if self._thread is not None:
            self._queue.put(_STOP)
            self._thread = None  # a later trip (a loop run again) starts a new worker

    def _work(self) -> None:
        while (reason := self._queue.get()) is not _STOP:
            self._trigger(reason)
            with self._done:
                self._handled += 1
                self._done.notify_all()

    def _trigger(self, reason: str) -> None:
        if not self.asking:
            return  # a trip queued before the sensor said it has no black box
        try:
            info = self.sensor.blackbox_trigger(reason, timeout=self.timeout_s)
        except RpcError as exc:
            if exc.code in _CANNOT_FREEZE:
                self.refusals += 1
                self.asking = exc.code != _NO_BLACK_BOX
                level = logging.INFO if not self.unsupported else logging.DEBUG
                self.unsupported = str(exc)
                then = "asking again on later trips, quietly" if self.asking else "not asking again"
                log.log(level, "the sensor cannot freeze its black box on a watchdog trip (%s); %s", exc, then)
            else:
                self.failures += 1
                log.warning("the black box was not frozen on a watchdog trip: %s", exc)
            return
        except (
            SensorError
        ) as exc:  # a timeout, a broken link (often what tripped the watchdog): the next trip asks again
            self.failures += 1
            log.info("the black box was not frozen on a watchdog trip: %s", exc)
            return
        self.frozen.append(info)
        log.info("watchdog trip: the sensor froze its black box as %s", info.name)


def for_sensor(sensor: object, timeout_s: float = 2.0) -> WatchdogBlackBox | None:
    """A trigger for ``sensor`` when it has :meth:`~seedcam.Sensor.blackbox_trigger`, else None."""
    trigger: Callable[..., object] | None = getattr(sensor, "blackbox_trigger", None)
    if not callable(trigger):
        return None
    return WatchdogBlackBox(sensor, timeout_s=timeout_s)  # type: ignore[arg-type]

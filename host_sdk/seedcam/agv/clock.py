"""Map the sensor's capture timestamps onto the host's monotonic clock, to know a result's age."""

from __future__ import annotations

import collections
from typing import Protocol

from seedcam.types import Result

__all__ = ["SensorClock", "Pinger"]


class Pinger(Protocol):
    """Anything with :meth:`seedcam.Sensor.ping`."""

    def ping(self, payload: bytes = b"", timeout: float | None = None) -> float: ...


class SensorClock:
    """Host time of sensor timestamps: ``host = sensor + offset``.

    With ``offset_s`` given the offset is fixed (0 for the emulated board, whose
    monotonic clock is the host's). Otherwise it is estimated from each result:
    ``received - sent`` is the offset plus the one-way link delay, so the
    smallest such sample over a window, less the one-way delay (half the
    smallest ping round trip, see :meth:`calibrate`), is the offset.

    Args:
        offset_s: a known offset, or None to estimate it.
        one_way_s: the link's one-way delay, seconds (used when estimating).
        window: number of recent results the estimate looks at.
    """

    def __init__(self, offset_s: float | None = None, *, one_way_s: float = 0.0, window: int = 200) -> None:
        if window < 1:
            raise ValueError("window must be >= 1")
        self._fixed = offset_s
        self.one_way_s = one_way_s
        self._samples: collections.deque[float] = collections.deque(maxlen=window)

    @classmethod
    def calibrate(cls, sensor: Pinger, pings: int = 5, timeout: float = 1.0) -> SensorClock:
        """An estimating clock whose one-way delay is half the sensor's smallest ping round trip.

        Raises:
            SensorTimeout: a ping got no answer within ``timeout``.
            LinkBroken: the link is down.
        """
        rtt = min(sensor.ping(timeout=timeout) for _ in range(max(1, pings)))
        return cls(one_way_s=rtt / 2.0)

    @property
    def offset_s(self) -> float | None:
        """The current offset (host - sensor), or None before the first result when estimating."""
        if self._fixed is not None:
            return self._fixed
        if not self._samples:
            return None
        return min(self._samples) - self.one_way_s

    def observe(self, result: Result) -> None:
        """Feed a result (uses its send timestamp and host receive time)."""
        if self._fixed is not None or result.received_monotonic <= 0:
            return
        sent_us = result.send_timestamp_us or result.capture_timestamp_us
        self._samples.append(result.received_monotonic - sent_us / 1e6)

    def capture_time(self, result: Result) -> float:
        """The result's capture instant on the host's monotonic clock.

        Before any estimate exists, the receive time stands in (age counted from arrival).
        """
        offset = self.offset_s
        if offset is None:
            return result.received_monotonic
        return result.capture_timestamp_us / 1e6 + offset

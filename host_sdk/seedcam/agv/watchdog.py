"""Link watchdog: no fresh result for a while means throttle 0, latched until the sensor is good again."""

from __future__ import annotations

__all__ = ["Watchdog"]


class Watchdog:
    """Trips when no fresh result arrived for ``timeout_s``; releases after ``good_frames`` good ones in a row.

    It starts tripped: the car moves only after the sensor has proven itself.

    Args:
        timeout_s: longest allowed silence, seconds.
        good_frames: consecutive good results needed to release the latch.
    """

    def __init__(self, timeout_s: float, good_frames: int) -> None:
        if timeout_s <= 0 or good_frames < 1:
            raise ValueError("timeout_s must be > 0 and good_frames >= 1")
        self.timeout_s = timeout_s
        self.good_frames = good_frames
        self.trips = 0  #: how often the watchdog tripped after having been released
        self._last_fresh: float | None = None
        self._latched = True
        self._streak = 0

    @property
    def latched(self) -> bool:
        """True while throttle must stay 0 (check :meth:`tripped` first to account for silence)."""
        return self._latched

    def deadline(self) -> float:
        """The instant the watchdog trips unless a fresh result comes (``inf`` while latched)."""
        if self._latched or self._last_fresh is None:
            return float("inf")
        return self._last_fresh + self.timeout_s

    def feed(self, now: float, fresh: bool, good: bool) -> None:
        """Record a result at ``now``: ``fresh`` (recent enough to count as a sign of life) and ``good``."""
        self.tripped(now)
        if not fresh:
            return
        self._last_fresh = now
        if not self._latched:
            return
        self._streak = self._streak + 1 if good else 0
        if self._streak >= self.good_frames:
            self._latched = False
            self._streak = 0

    def tripped(self, now: float) -> bool:
        """True when throttle must be 0 at ``now`` (latches on silence)."""
        if not self._latched and (self._last_fresh is None or now - self._last_fresh >= self.timeout_s):
            self._latched = True
            self._streak = 0
            self.trips += 1
        return self._latched

"""The bridge's snapshots: JPEGs on ``snapshot``, on request (``cmd/snapshot``) and, if asked, every S seconds.

One rate limit covers both: the bridge takes at most one snapshot per
``snapshot_min_interval`` seconds, whoever asks. A snapshot runs on the thread that asked
for it (the request worker, or this module's periodic thread), never on the sensor's
reader thread, so results keep being published while a JPEG comes in; on a slow line the
device sends the JPEG in pieces between its results, so the link keeps carrying them too.
Periodic snapshots are QoS 0 (a lost one is replaced by the next; none queue up while the
broker is away); a requested one is QoS 1. Both are retained, with user properties
``seq`` (per bridge run), ``frame_id``, ``width``, ``height`` and ``source``.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Protocol

from seedcam.errors import SensorError

__all__ = ["RateLimited", "Snapshots"]

log = logging.getLogger(__name__)


class RateLimited(Exception):
    """A snapshot asked for sooner than the rate limit allows; ``retry_in`` seconds to wait."""

    def __init__(self, interval: float, retry_in: float) -> None:
        super().__init__(f"one snapshot per {interval:g} s: retry in {retry_in:.1f} s")
        self.retry_in = retry_in


class _Bridge(Protocol):
    sensor: Any
    topics: Any
    stats: Any

    @property
    def options(self) -> Any: ...

    @property
    def connected(self) -> bool: ...

    def publish(self, topic: str, payload: bytes | str, *, qos: int = 0, retain: bool = False, **props: Any) -> int: ...


class Snapshots:
    """Takes and publishes snapshots for a bridge (``options.snapshot_interval`` > 0: also periodically)."""

    def __init__(self, bridge: _Bridge) -> None:
        self._bridge = bridge
        self._lock = threading.Lock()  #: one snapshot at a time (the device holds one JPEG in pieces)
        self._last = -1e9  #: time.monotonic() when the last snapshot was taken
        self._seq = 0
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, name="seedcam-bridge-snapshots", daemon=True)

    def start(self) -> None:
        """Start the periodic snapshots (nothing when ``snapshot_interval`` is 0)."""
        if self._bridge.options.snapshot_interval > 0:
            self._thread.start()

    def stop(self, timeout: float) -> None:
        self._closed.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def take(self, quality: int = 0, *, periodic: bool = False) -> dict[str, Any]:
        """Take a snapshot now and publish it; returns where and what.

        Raises:
            RateLimited: the last snapshot is more recent than ``snapshot_min_interval``.
            SensorError: from :meth:`seedcam.Sensor.snapshot`.
            ValueError: ``quality`` out of range.
        """
        options = self._bridge.options
        with self._lock:
            wait = self._last + options.snapshot_min_interval - time.monotonic()
            if wait > 0:
                raise RateLimited(options.snapshot_min_interval, wait)
            self._last = time.monotonic()
            snap = self._bridge.sensor.snapshot(quality)
            self._seq += 1
            user = [
                ("seq", str(self._seq)),
                ("frame_id", str(snap.frame_id)),
                ("width", str(snap.width)),
                ("height", str(snap.height)),
                ("source", "periodic" if periodic else "request"),
            ]
            topic = self._bridge.topics.snapshot
            qos = 0 if periodic else 1
            rc = self._bridge.publish(topic, snap.jpeg, qos=qos, retain=True, content_type="image/jpeg", user=user)
            if rc == 0:
                self._bridge.stats.snapshots_published += 1
        return {"topic": topic, "bytes": len(snap.jpeg), "frame_id": snap.frame_id, "width": snap.width,
                "height": snap.height}  # fmt: skip

    def _run(self) -> None:
        interval = self._bridge.options.snapshot_interval
        quality = self._bridge.options.snapshot_quality
        while not self._closed.is_set():
            with self._lock:
                due = self._last + interval - time.monotonic()
            if due > 0:
                self._closed.wait(due)  # a requested snapshot in between pushes the next one back
                continue
            if not self._bridge.connected:  # nothing queues up while the broker is away
                self._closed.wait(interval)
                continue
            try:
                self.take(quality, periodic=True)
            except RateLimited:
                continue
            except SensorError as exc:  # the device is away or busy: the next period tries again
                log.warning("periodic snapshot failed: %s", exc)

"""The host end of the preview stream: start and stop it, hold its lease, put the JPEGs together.

:class:`seedcam.Sensor` owns one :class:`PreviewClient`. The device sends each preview JPEG as
``PreviewChunk`` status events (pieces, on a slow line, between the results); the reader thread
hands them to :meth:`PreviewClient.chunk`, which joins the pieces of one frame and passes every
whole JPEG, as a :class:`~seedcam.types.PreviewFrame`, to the callbacks. A started stream has a
lease the device lets lapse when no host renews it; a thread here renews it (sends the same
request again) every third of the lease while the stream is wanted, so a host that goes away
without stopping it costs the device at most one lease of JPEGs, and a device that restarted
gets its stream back at the next renewal.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable

from seedcam._callbacks import Callbacks
from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import LinkBroken, SensorError
from seedcam.protocol import codec
from seedcam.types import PreviewFrame, PreviewSettings

__all__ = ["DEFAULT_LEASE_S", "PreviewClient", "PreviewCounts"]

log = logging.getLogger(__name__)

#: how long the device keeps a stream going after the host's last request
DEFAULT_LEASE_S = 5.0
_RENEWALS_PER_LEASE = 3

#: sends a request and returns the OK response (raises SensorError otherwise)
Call = Callable[[pb.Request, float | None], pb.Response]


class PreviewCounts:
    """Counters of the preview stream on this host (they only grow)."""

    def __init__(self) -> None:
        self.frames = 0  #: whole JPEGs received
        self.incomplete = 0  #: JPEGs given up: a piece was missing or out of order
        self.renewals_failed = 0  #: lease renewals that did not get through (the next one tries again)


class PreviewClient:
    """Starts, renews and stops a sensor's preview stream and joins its pieces.

    Args:
        call: the sensor's request call (``Sensor._call``).
        lease_s: the lease asked for; renewed every third of it.
    """

    def __init__(self, call: Call, *, lease_s: float = DEFAULT_LEASE_S) -> None:
        self._call = call
        self.lease_s = lease_s
        self._callbacks: Callbacks[PreviewFrame] = Callbacks(log)
        self._lock = threading.Condition()
        self._wanted: pb.PreviewRequest | None = None
        self._closed = False
        self._renewer: threading.Thread | None = None
        self.counts = PreviewCounts()
        self._frame_id = -1
        self._pieces = bytearray()
        self._total = 0
        #: the newest whole preview frame (None before the first)
        self.latest: PreviewFrame | None = None

    def start(self, fps: float, quality: int, max_width: int, timeout: float | None) -> PreviewSettings:
        """Ask for the stream (or new settings) and keep it alive; returns what the device applied.

        Raises:
            ValueError: ``fps`` not in (0, 60], ``quality`` not 1..100 or ``max_width`` below 16.
            RpcError: the device refused (``UNSUPPORTED``: a firmware without a preview stream).
            SensorTimeout, LinkBroken: the request did not get through.
        """
        if not (isinstance(fps, int | float) and math.isfinite(fps) and 0 < fps <= 60):
            raise ValueError(f"preview fps must be more than 0 and at most 60, got {fps!r}")
        if not 1 <= quality <= 100:
            raise ValueError(f"preview quality must be 1..100, got {quality!r}")
        if max_width < 16:
            raise ValueError(f"preview max_width must be at least 16 pixels, got {max_width!r}")
        request = pb.PreviewRequest(fps=fps, quality=quality, max_width=max_width, lease_s=self.lease_s)
        answer = self._call(pb.Request(preview=request), timeout).preview
        with self._lock:
            if self._closed:
                raise LinkBroken("sensor closed")
            self._wanted = request
            if self._renewer is None:
                self._renewer = threading.Thread(target=self._renew_loop, name="seedcam-preview-lease", daemon=True)
                self._renewer.start()
        return codec.preview_settings_from_pb(answer)

    def stop(self, timeout: float | None) -> None:
        """Stop renewing and tell the device to stop the stream.

        Raises:
            SensorTimeout, LinkBroken: the request did not get through (the lease lapses anyway).
        """
        with self._lock:
            self._wanted = None
        self._call(pb.Request(preview=pb.PreviewRequest(fps=0)), timeout)

    @property
    def running(self) -> bool:
        """True while the host wants the stream (between start and stop)."""
        return self._wanted is not None

    def subscribe(self, callback: Callable[[PreviewFrame], None]) -> Callable[[], None]:
        """Call ``callback(frame)`` on the reader thread for each whole preview JPEG; returns the unsubscribe."""
        return self._callbacks.add(callback)

    def close(self) -> None:
        """Stop the renewals (the device's lease then lapses). Idempotent."""
        with self._lock:
            self._closed = True
            self._wanted = None
            self._lock.notify_all()
            renewer = self._renewer
        if renewer is not None and renewer is not threading.current_thread():
            renewer.join(timeout=2.0)

    def chunk(self, chunk: pb.PreviewChunk) -> None:
        """One piece of a preview JPEG from the reader thread; a whole JPEG goes to the callbacks."""
        if chunk.offset == 0:
            if self._pieces:
                self.counts.incomplete += 1
            self._frame_id, self._total = chunk.frame_id, chunk.total_size
            self._pieces = bytearray()
        elif chunk.frame_id != self._frame_id or chunk.offset != len(self._pieces):
            if self._pieces:
                self.counts.incomplete += 1
                self._pieces = bytearray()
            log.debug("preview piece of frame %d at %d does not continue the JPEG", chunk.frame_id, chunk.offset)
            return
        self._pieces += chunk.data
        if len(self._pieces) < self._total:
            return
        jpeg = bytes(self._pieces)
        self._pieces = bytearray()
        if len(jpeg) != self._total:
            self.counts.incomplete += 1
            return
        frame = PreviewFrame(chunk.frame_id, chunk.capture_timestamp_us, jpeg, chunk.width, chunk.height)
        self.counts.frames += 1
        self.latest = frame
        self._callbacks(frame)

    def _renew_loop(self) -> None:
        while True:
            with self._lock:
                self._lock.wait(self.lease_s / _RENEWALS_PER_LEASE)
                if self._closed:
                    return
                request = self._wanted
            if request is None:
                continue
            try:
                self._call(pb.Request(preview=request), self.lease_s / _RENEWALS_PER_LEASE)
            except SensorError as exc:  # the link is down or busy: the next renewal tries again
                self.counts.renewals_failed += 1
                log.debug("preview lease renewal failed: %s", exc)

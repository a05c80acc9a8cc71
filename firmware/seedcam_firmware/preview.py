"""The preview stream: JPEGs of the frames whose results go out, in the link capacity left over.

A host asks for a rate, a JPEG quality and a maximum width (``PreviewRequest``) and holds a
lease on the stream by asking again before ``lease_s`` ends; when the lease lapses (no one
watches) the stream stops. The frames come from the pipeline's send stage
(:meth:`PreviewStream.offer` after each Result went out), so a preview JPEG is the frame of the
Result with the same frame id.

The stream's own thread scales and encodes the picked frame and sends it as ``PreviewChunk``
status events. On a line with a rate (a UART, ``?throttle=``) the chunks are small (they hold
the line :data:`PIECE_S` at most, so a result waits no longer than that behind one) and go out
only in the capacity the other traffic leaves: a token bucket filled at
``line capacity x`` :data:`LINE_SHARE` ``- the other traffic's measured rate``. The answer to a
request says what fits (``line_limited`` and a message) when the line holds the stream below
the rate asked for, from the size of the last JPEG at the settings asked (a renewal encodes
nothing; a start or a change encodes the latest frame once). On a fast link (pty, TCP, USB) a
JPEG goes out in one chunk.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from seedcam._proto import seedcam_pb2 as pb
from seedcam.protocol.framing import DELIMITER, max_encoded_size
from seedcam_firmware.camera.base import Frame
from seedcam_firmware.jpeg import encode_jpeg, piece_size, scaled_size
from seedcam_firmware.rpc import RequestFailed

__all__ = ["LINE_SHARE", "PIECE_S", "PreviewStats", "PreviewStream"]

log = logging.getLogger(__name__)

#: the part of a line's capacity that all traffic together may use; the preview takes what the rest leaves
LINE_SHARE = 0.85
#: on a line with a rate, one chunk holds the line this long at most
PIECE_S = 0.03
DEFAULT_QUALITY = 70
DEFAULT_MAX_WIDTH = 320
DEFAULT_LEASE_S = 5.0
MAX_FPS = 60.0
MAX_LEASE_S = 60.0
_MIN_WIDTH = 16
_CHUNK_OVERHEAD = 40  # protobuf fields and link framing around a chunk's data
_RATE_WINDOW_S = 1.0
_POLL_S = 0.1
_MIN_WAIT_S = 0.001  # a wait for the budget lasts this at least (a float's last bit never adds up to a piece)

#: sends one status event; False when the link dropped it
SendEvent = Callable[[pb.StatusEvent], bool]


@dataclass(frozen=True)
class PreviewStats:
    """What the stream sent since boot."""

    frames_sent: int
    bytes_sent: int  #: the link frames of the pieces that went out (the stream's own traffic)
    frames_dropped: int  #: JPEGs abandoned half-way (a chunk the link dropped)


@dataclass(frozen=True)
class _Settings:
    fps: float
    quality: int
    max_width: int
    lease_s: float


class PreviewStream:
    """Picks, encodes and sends preview JPEGs (see the module docstring).

    Args:
        send: sends one status event on the link (returns False when it was dropped).
        bytes_sent: the link's total bytes sent so far (the stream's own included), from 0 when the
            stream is made (the daemon makes it before the link).
        latest_frame: the newest captured frame, to size the answer's estimate (None before the first).
        line_rate_bps: the line's baud rate (8N1), None for a fast link.
        max_frame_size: the largest payload of one link frame.
        clock: monotonic seconds (tests pass their own).
        sleep: waits this many seconds of ``clock`` for the line's budget (None: waits on the
            stream's condition, which :meth:`close` ends); tests pass one that advances their clock.
    """

    def __init__(
        self,
        send: SendEvent,
        *,
        bytes_sent: Callable[[], int],
        latest_frame: Callable[[], Frame | None],
        line_rate_bps: int | None,
        max_frame_size: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] | None = None,
    ) -> None:
        self._send = send
        self._bytes_sent = bytes_sent
        self._latest_frame = latest_frame
        self._capacity = line_rate_bps / 10 if line_rate_bps else None  # bytes/s on the line
        self._line_rate = line_rate_bps
        self._piece = piece_size(max_frame_size, line_rate_bps, PIECE_S)
        self._clock = clock
        self._sleep = sleep or self._wait_unless_stopped
        self._cond = threading.Condition()
        self._settings: _Settings | None = None
        self._lease_until = 0.0
        self._next_due = 0.0
        self._candidate: Frame | None = None
        self._busy = False
        self._stop = False
        self._last_jpeg: tuple[tuple[int, int], int] | None = None  # (quality, max width), size of the last JPEG
        self._own_bytes = 0  # the link frames of the pieces sent (the link's counter also has the results)
        #: preview requests answered (starts, renewals, stops)
        self.requests = 0
        self._frames_sent = 0
        self._frames_dropped = 0
        self._samples: collections.deque[tuple[float, int]] = collections.deque([(clock(), 0)])  # other traffic
        self._tokens = 0.0
        self._filled_at = clock()
        self._thread = threading.Thread(target=self._run, name="seedcam-preview", daemon=True)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Stop the stream's thread. Idempotent."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=2.0)

    @property
    def active(self) -> bool:
        """True while a host holds the stream's lease."""
        with self._cond:
            return self._active_locked()

    @property
    def stats(self) -> PreviewStats:
        with self._cond:
            return PreviewStats(self._frames_sent, self._own_bytes, self._frames_dropped)

    # ------------------------------------------------------------------ the host's request

    def request(self, request: pb.PreviewRequest) -> pb.PreviewSettings:
        """Start, renew (the same request again) or stop (``fps`` 0) the stream; returns what applies.

        Raises:
            RequestFailed: ``INVALID_ARGUMENT`` for a value out of range.
        """
        settings = _settings_of(request)
        now = self._clock()
        with self._cond:
            self.requests += 1
            if settings.fps == 0:
                self._settings, self._lease_until, self._candidate = None, 0.0, None
                log.info("preview stopped by the host")
                return pb.PreviewSettings(quality=settings.quality, max_width=settings.max_width, message="stopped")
            if not self._active_locked() or self._settings != settings:
                log.info(
                    "preview: %g fps, quality %d, max width %d", settings.fps, settings.quality, settings.max_width
                )
                self._next_due = now
            self._settings = settings
            self._lease_until = now + settings.lease_s
        return self._answer(settings)

    def _answer(self, settings: _Settings) -> pb.PreviewSettings:
        """The applied settings, with what the line fits when it has a rate."""
        answer = pb.PreviewSettings(
            fps=settings.fps, quality=settings.quality, max_width=settings.max_width, lease_s=settings.lease_s
        )
        frame = self._latest_frame()
        if frame is None:
            return answer
        height, width = frame.image.shape[:2]
        answer.width, answer.height = scaled_size(width, height, settings.max_width)
        if self._capacity is None:
            return answer
        size = self._jpeg_size(settings, frame)
        allowance = self._allowance(self._clock())
        pieces = -(-size // self._piece)
        fits = allowance / (size + pieces * _CHUNK_OVERHEAD)
        if fits < settings.fps * 0.95:
            answer.fps = round(fits, 2)
            answer.line_limited = True
            answer.message = (
                f"the {self._line_rate}-baud line fits about {fits:.2g} preview frames/s of "
                f"{size / 1000:.1f} kB beside the results (asked {settings.fps:g}); "
                "a lower quality or width fits more"
            )
        return answer

    def _jpeg_size(self, settings: _Settings, frame: Frame) -> int:
        """The size of a JPEG at these settings: the last one encoded at them, else ``frame``'s (encoded once).

        A renewal thus estimates from the JPEG last sent, and only a start or a change of
        quality or width encodes one for its answer.
        """
        key = (settings.quality, settings.max_width)
        with self._cond:
            if self._last_jpeg is not None and self._last_jpeg[0] == key:
                return self._last_jpeg[1]
        size = len(encode_jpeg(frame.image, settings.quality, settings.max_width)[0])
        self._remember_jpeg(settings, size)
        return size

    def _remember_jpeg(self, settings: _Settings, size: int) -> None:
        with self._cond:
            self._last_jpeg = (settings.quality, settings.max_width), size

    # ------------------------------------------------------------------ frames from the pipeline

    def offer(self, frame: Frame) -> None:
        """The pipeline sent this frame's Result: take it when the stream is due and idle (cheap)."""
        with self._cond:
            if self._busy or not self._active_locked():
                return
            now = self._clock()
            if now < self._next_due:
                return
            assert self._settings is not None
            self._next_due = max(self._next_due + 1 / self._settings.fps, now)
            self._candidate = frame
            self._busy = True
            self._cond.notify_all()

    def _active_locked(self) -> bool:
        return self._settings is not None and self._clock() < self._lease_until

    # ------------------------------------------------------------------ the stream's thread

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stop or self._candidate is not None, _POLL_S)
                if self._stop:
                    return
                frame, settings = self._candidate, self._settings
                self._candidate = None
                if settings is not None and not self._active_locked():
                    log.info("preview lease lapsed: stream stopped")
                    self._settings = None
            if self._capacity is not None:
                self._allowance(self._clock())  # keeps the other traffic's rate known while idle
            try:
                if frame is not None and settings is not None:
                    self._send_frame(frame, settings)
            except Exception:  # a bug here must not end the stream's thread
                log.exception("preview of frame %d failed", frame.frame_id if frame else -1)
            finally:
                with self._cond:
                    self._busy = False

    def _send_frame(self, frame: Frame, settings: _Settings) -> None:
        jpeg, width, height = encode_jpeg(frame.image, settings.quality, settings.max_width)
        total = len(jpeg)
        self._remember_jpeg(settings, total)
        for offset in range(0, total, self._piece):
            data = jpeg[offset : offset + self._piece]
            if not self._wait_for_budget(len(data) + _CHUNK_OVERHEAD):
                return
            chunk = pb.PreviewChunk(
                frame_id=frame.frame_id,
                capture_timestamp_us=frame.timestamp_us,
                width=width,
                height=height,
                offset=offset,
                total_size=total,
                data=data,
            )
            event = pb.StatusEvent(preview=chunk)
            sent = self._send(event)
            with self._cond:
                if not sent:
                    self._frames_dropped += 1
                    return
                self._own_bytes += _link_frame_size(event)
        with self._cond:
            self._frames_sent += 1

    def _wait_for_budget(self, size: int) -> bool:
        """Wait until the bucket holds ``size`` bytes and take them; False when the stream stopped meanwhile."""
        if self._capacity is None:
            return True
        while True:
            with self._cond:
                if self._stop or not self._active_locked():
                    return False
            now = self._clock()
            allowance = self._allowance(now)
            self._tokens = min(self._tokens + allowance * (now - self._filled_at), float(2 * self._piece))
            self._filled_at = now
            if self._tokens >= size:
                self._tokens -= size
                return True
            wait = (size - self._tokens) / allowance if allowance > 0 else _POLL_S
            self._sleep(min(_POLL_S, max(_MIN_WAIT_S, wait)))

    def _wait_unless_stopped(self, seconds: float) -> None:
        """The default ``sleep``: ``seconds`` on the stream's condition, so :meth:`close` ends it at once."""
        with self._cond:
            self._cond.wait_for(lambda: self._stop, seconds)

    def _allowance(self, now: float) -> float:
        """Bytes a second the preview may use now: the line's share less the other traffic's recent rate."""
        assert self._capacity is not None
        with self._cond:
            other = self._bytes_sent() - self._own_bytes
            samples = self._samples
            samples.append((now, other))
            while len(samples) > 2 and now - samples[1][0] >= _RATE_WINDOW_S:
                samples.popleft()
            start_time, start_bytes = samples[0]
        span = now - start_time
        rate = (other - start_bytes) / span if span >= 0.2 else 0.0
        return max(0.0, self._capacity * LINE_SHARE - rate)


def _link_frame_size(event: pb.StatusEvent) -> int:
    """The bytes the link frame of ``event`` puts on the line (COBS's worst case: one byte in 254 over at most).

    The stream's own traffic is the size of its own frames, not what the link's counter gained
    during a send: the results that went out meanwhile are the other traffic.
    """
    return max_encoded_size(event.ByteSize()) + len(DELIMITER)


def _settings_of(request: pb.PreviewRequest) -> _Settings:
    """The request's values with their defaults.

    Raises:
        RequestFailed: ``INVALID_ARGUMENT`` for a value out of range.
    """

    def refuse(what: str) -> RequestFailed:
        return RequestFailed(pb.STATUS_INVALID_ARGUMENT, f"preview {what}")

    fps = float(request.fps)
    if not 0 <= fps <= MAX_FPS:  # also refuses NaN
        raise refuse(f"fps must be 0..{MAX_FPS:g}, got {fps:g}")
    if request.quality > 100:
        raise refuse(f"quality must be 1..100 (0: {DEFAULT_QUALITY}), got {request.quality}")
    if 0 < request.max_width < _MIN_WIDTH:
        raise refuse(f"max_width must be at least {_MIN_WIDTH} (0: {DEFAULT_MAX_WIDTH}), got {request.max_width}")
    lease = float(request.lease_s)
    if not 0 <= lease <= MAX_LEASE_S:
        raise refuse(f"lease_s must be 0..{MAX_LEASE_S:g}, got {lease:g}")
    return _Settings(
        fps=fps,
        quality=request.quality or DEFAULT_QUALITY,
        max_width=request.max_width or DEFAULT_MAX_WIDTH,
        lease_s=lease or DEFAULT_LEASE_S,
    )

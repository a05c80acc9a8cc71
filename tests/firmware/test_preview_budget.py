"""The firmware's preview stream takes only the line capacity the other traffic leaves (a token bucket).

The stream runs on a fake clock (its ``clock=`` and ``sleep=``): time moves only when the stream
waits for its budget or a piece is on the line, so what it sends when is the same on any machine.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from helpers import wait_until

from seedcam._proto import seedcam_pb2 as pb
from seedcam.protocol.framing import Channel, Frame, encode_frame
from seedcam_firmware import preview
from seedcam_firmware.camera import base
from seedcam_firmware.preview import LINE_SHARE, PIECE_S, PreviewStream

LINE_BPS = 115_200
CAPACITY = LINE_BPS / 10  # bytes a second, 8N1
PIECE = int(CAPACITY * PIECE_S)


class Clock:
    """Fake monotonic seconds, moved on by :meth:`advance` only."""

    def __init__(self) -> None:
        self._now = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds


class Line:
    """A fake UART: a preview piece holds the line for its frame's bytes; other traffic flows steadily."""

    def __init__(self, clock: Clock, other_rate: float) -> None:
        self.clock = clock
        self.other_rate = other_rate
        self.preview_bytes = 0
        self.pieces: list[tuple[float, int, pb.PreviewChunk]] = []  # (start, link bytes, chunk)
        self.lock = threading.Lock()

    def send(self, event: pb.StatusEvent) -> bool:
        size = len(encode_frame(Frame(Channel.STATUS, 0, event.SerializeToString())))
        with self.lock:
            self.preview_bytes += size
            self.pieces.append((self.clock(), size, event.preview))
        self.clock.advance(size / CAPACITY)  # the results sent meanwhile are in bytes_sent() when it returns
        return True

    def bytes_sent(self) -> int:
        with self.lock:
            return int(self.clock() * self.other_rate) + self.preview_bytes


def _noisy_frame(frame_id: int) -> base.Frame:
    image = np.random.default_rng(frame_id).integers(0, 255, (240, 320, 3), dtype=np.uint8)  # ~50 kB as JPEG
    return base.Frame(frame_id=frame_id, timestamp_us=frame_id * 1000, image=image)


@pytest.fixture
def stream_on() -> Iterator[Callable[[Line], PreviewStream]]:
    streams: list[PreviewStream] = []

    def start(line: Line) -> PreviewStream:
        frame = _noisy_frame(1)
        stream = PreviewStream(
            line.send,
            bytes_sent=line.bytes_sent,
            latest_frame=lambda: frame,
            line_rate_bps=LINE_BPS,
            max_frame_size=65536,
            clock=line.clock,
            sleep=line.clock.advance,
        )
        streams.append(stream)
        stream.start()
        return stream

    yield start
    for stream in streams:
        stream.close()


@pytest.mark.parametrize("other_rate", [2000.0, 6000.0])
def test_the_stream_fills_only_what_the_other_traffic_leaves(stream_on, other_rate: float) -> None:  # noqa: ANN001
    line = Line(Clock(), other_rate)
    stream = stream_on(line)
    line.clock.advance(0.4)  # a rate sample of the other traffic
    request = pb.PreviewRequest(fps=10, quality=95, max_width=320, lease_s=60)
    answer = stream.request(request)
    allowance = CAPACITY * LINE_SHARE - other_rate
    assert answer.line_limited and answer.fps < 1
    stream.offer(_noisy_frame(2))
    wait_until(lambda: stream.stats.frames_sent == 1, timeout=30, what="one whole preview JPEG")
    first, (last, size, chunk) = line.pieces[0][0], line.pieces[-1]
    span = last + size / CAPACITY - first
    rate = line.preview_bytes / span
    assert rate <= allowance + 2 * PIECE / span, f"{rate:.0f} B/s over the {allowance:.0f} B/s left"
    assert rate >= allowance * 0.95, f"{rate:.0f} B/s: the stream leaves capacity unused"
    assert max(len(c.data) for _, _, c in line.pieces) <= PIECE  # a result waits at most one piece's line time
    # the verdict after a JPEG went out still sees the other traffic's rate: what fits beside it
    fits = allowance / line.preview_bytes
    assert stream.request(request).fps == pytest.approx(fits, rel=0.05, abs=0.006)  # rounded to 0.01
    assert chunk.offset + len(chunk.data) == chunk.total_size


def test_a_full_line_sends_no_preview(stream_on) -> None:  # noqa: ANN001
    line = Line(Clock(), CAPACITY * 0.9)  # results alone use 90 % of the line
    stream = stream_on(line)
    line.clock.advance(0.4)  # a rate sample of the other traffic
    answer = stream.request(pb.PreviewRequest(fps=5))
    assert answer.line_limited and answer.fps == 0
    stream.offer(_noisy_frame(2))
    wait_until(lambda: not stream.active, what="the lease (5 s of the fake clock) to lapse")
    assert line.preview_bytes == 0
    assert stream.stats.frames_dropped == 0 and stream.stats.frames_sent == 0


class BusyLine:
    """A fast link on which a result goes out while each preview piece is on it (another thread's send)."""

    RESULT = 200

    def __init__(self) -> None:
        self.preview_bytes = 0
        self.pieces = 0
        self.result_bytes = 0
        self.lock = threading.Lock()

    def send(self, event: pb.StatusEvent) -> bool:
        with self.lock:
            self.preview_bytes += len(encode_frame(Frame(Channel.STATUS, 0, event.SerializeToString())))
            self.pieces += 1
            self.result_bytes += self.RESULT  # counted by the link before the piece's send returns
        return True

    def bytes_sent(self) -> int:
        with self.lock:
            return self.preview_bytes + self.result_bytes


def test_the_stream_counts_only_its_own_pieces_as_its_traffic() -> None:
    line = BusyLine()
    frame = _noisy_frame(1)
    stream = PreviewStream(
        line.send, bytes_sent=line.bytes_sent, latest_frame=lambda: frame, line_rate_bps=None, max_frame_size=4096
    )
    stream.start()
    try:
        stream.request(pb.PreviewRequest(fps=5))
        stream.offer(frame)
        wait_until(lambda: stream.stats.frames_sent == 1, what="one preview sent")
    finally:
        stream.close()
    assert line.pieces > 1
    # the size of each piece's link frame, at most one COBS byte in 254 over what the line counted
    assert line.preview_bytes <= stream.stats.bytes_sent <= line.preview_bytes * 1.01


def _count_encodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the JPEGs the stream encodes from now on."""
    sizes: list[int] = []
    encode = preview.encode_jpeg

    def counting(image: np.ndarray, quality: int, max_width: int | None = None) -> tuple[bytes, int, int]:
        jpeg, width, height = encode(image, quality, max_width)
        sizes.append(len(jpeg))
        return jpeg, width, height

    monkeypatch.setattr(preview, "encode_jpeg", counting)
    return sizes


def test_a_renewal_estimates_from_the_jpegs_already_encoded(stream_on, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    encoded = _count_encodes(monkeypatch)
    line = Line(Clock(), 2000.0)
    stream = stream_on(line)
    line.clock.advance(0.4)
    request = pb.PreviewRequest(fps=10, quality=95, max_width=320, lease_s=60)
    first = stream.request(request)
    assert len(encoded) == 1  # nothing of these settings was encoded yet: one JPEG for the estimate
    for _ in range(3):
        assert stream.request(request) == first  # renewals: the same estimate, no JPEG encoded for it
    assert len(encoded) == 1
    stream.offer(_noisy_frame(2))
    wait_until(lambda: stream.stats.frames_sent == 1, timeout=30, what="one whole preview JPEG")
    renewed = stream.request(request)
    assert len(encoded) == 2  # the one sent; the renewal's estimate is its size
    assert f"{encoded[1] / 1000:.1f} kB" in renewed.message
    stream.request(pb.PreviewRequest(fps=10, quality=50, max_width=160, lease_s=60))
    assert len(encoded) == 3  # other settings: their own estimate


def test_a_fast_link_answers_without_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    encoded = _count_encodes(monkeypatch)
    frame = _noisy_frame(1)
    stream = PreviewStream(
        BusyLine().send, bytes_sent=lambda: 0, latest_frame=lambda: frame, line_rate_bps=None, max_frame_size=65536
    )
    answer = stream.request(pb.PreviewRequest(fps=30, max_width=200))
    assert (answer.fps, answer.width, answer.height, answer.line_limited) == (30, 200, 150, False)
    assert encoded == []

"""The firmware's preview stream takes only the line capacity the other traffic leaves (a token bucket)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
from helpers import wait_until

from seedcam._proto import seedcam_pb2 as pb
from seedcam_firmware.camera.base import Frame
from seedcam_firmware.preview import LINE_SHARE, PIECE_S, PreviewStream

LINE_BPS = 115_200
CAPACITY = LINE_BPS / 10  # bytes a second, 8N1
FRAMING = 11


class Line:
    """A fake link: counts what the stream sends plus other traffic at a steady rate."""

    def __init__(self, other_rate: float) -> None:
        self.other_rate = other_rate
        self.start = time.monotonic()
        self.preview_bytes = 0
        self.chunks: list[pb.PreviewChunk] = []
        self.lock = threading.Lock()

    def send(self, event: pb.StatusEvent) -> bool:
        with self.lock:
            self.preview_bytes += len(event.SerializeToString()) + FRAMING
            self.chunks.append(event.preview)
        return True

    def bytes_sent(self) -> int:
        with self.lock:
            return int((time.monotonic() - self.start) * self.other_rate) + self.preview_bytes


def _noisy_frame(frame_id: int) -> Frame:
    image = np.random.default_rng(frame_id).integers(0, 255, (240, 320, 3), dtype=np.uint8)  # ~50 kB as JPEG
    return Frame(frame_id=frame_id, timestamp_us=frame_id * 1000, image=image)


@pytest.fixture
def stream_on() -> Iterator[object]:
    streams: list[PreviewStream] = []

    def start(line: Line) -> PreviewStream:
        frame = _noisy_frame(1)
        stream = PreviewStream(
            line.send,
            bytes_sent=line.bytes_sent,
            latest_frame=lambda: frame,
            line_rate_bps=LINE_BPS,
            max_frame_size=65536,
        )
        streams.append(stream)
        stream.start()
        return stream

    yield start
    for stream in streams:
        stream.close()


@pytest.mark.parametrize("other_rate", [2000.0, 6000.0])
def test_the_stream_fills_only_what_the_other_traffic_leaves(stream_on, other_rate: float) -> None:  # noqa: ANN001
    line = Line(other_rate)
    stream = stream_on(line)
    wait_until(lambda: time.monotonic() - line.start > 0.4, what="a rate sample of the other traffic")
    answer = stream.request(pb.PreviewRequest(fps=10, quality=95, max_width=320))
    assert answer.line_limited and answer.fps < 1
    stream.offer(_noisy_frame(2))
    wait_until(lambda: line.chunks, what="the first piece")
    start_bytes, start = line.preview_bytes, time.monotonic()
    wait_until(lambda: time.monotonic() - start >= 1.5, timeout=3, what="1.5 s of preview")
    rate = (line.preview_bytes - start_bytes) / (time.monotonic() - start)
    allowance = CAPACITY * LINE_SHARE - other_rate
    piece = int(CAPACITY * PIECE_S)
    assert rate <= allowance * 1.1 + 2 * piece / 1.5, f"{rate:.0f} B/s over the {allowance:.0f} B/s left"
    assert rate >= allowance * 0.6, f"{rate:.0f} B/s: the stream leaves capacity unused"
    assert max(len(c.data) for c in line.chunks) <= piece  # a result waits at most one piece's line time


def test_a_full_line_sends_no_preview(stream_on) -> None:  # noqa: ANN001
    line = Line(CAPACITY * 0.9)  # results alone use 90 % of the line
    stream = stream_on(line)
    wait_until(lambda: time.monotonic() - line.start > 0.4, what="a rate sample of the other traffic")
    answer = stream.request(pb.PreviewRequest(fps=5))
    assert answer.line_limited and answer.fps == 0
    stream.offer(_noisy_frame(2))
    deadline = time.monotonic() + 1.0
    wait_until(lambda: time.monotonic() > deadline, timeout=2, what="a second of a full line")
    assert line.preview_bytes <= 2 * int(CAPACITY * PIECE_S) + 2 * 60  # at most the bucket's start


class BusyLine(Line):
    """A line on which a result goes out while each preview piece is on it (another thread's send)."""

    RESULT = 200

    def __init__(self) -> None:
        super().__init__(other_rate=0.0)
        self.result_bytes = 0

    def send(self, event: pb.StatusEvent) -> bool:
        sent = super().send(event)
        with self.lock:
            self.result_bytes += self.RESULT  # counted by the link before the piece's send returns
        return sent

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
    assert len(line.chunks) > 1
    # the size of each piece's link frame, at most one COBS byte in 254 over what the line counted
    assert line.preview_bytes <= stream.stats.bytes_sent <= line.preview_bytes * 1.01 + len(line.chunks)

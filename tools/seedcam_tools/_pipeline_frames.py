"""The pipeline benchmark's wire side: what a Result costs on the link, and how fast the host decodes it.

Sizes are those of protocol 2's compact layout in the default timings mode
(``summary``), the dictionary announced beforehand (it goes out once, not per result).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from seedcam.protocol.compact import CompactDecoder, CompactEncoder
from seedcam.protocol.framing import Channel, Decoder, Frame, encode_frame
from seedcam_tools.bench_errors import BenchmarkError

__all__ = ["decode_rate", "typical_result", "wire_bytes"]

_READ_CHUNK = 65536  # what the SDK's reader thread asks the transport for


_LATENCY_US = 5000  # the summary figure's value in the encoded frames (its size does not depend on it)


def wire_bytes(result: Any, seq: int = 0, encoder: CompactEncoder | None = None) -> bytes:
    """The complete link frame (delimiter included) the firmware sends for ``result``."""
    encoder = CompactEncoder() if encoder is None else encoder
    _, payload = encoder.encode(result, result.capture_timestamp_us + _LATENCY_US)
    return encode_frame(Frame(Channel.RESULT, seq % 65536, payload))


def typical_result(results: Sequence[Any]) -> Any:
    """The result whose wire size is the median of the run's."""
    sized = sorted(results, key=lambda r: len(wire_bytes(r, r.frame_id)))
    return sized[len(sized) // 2]


def decode_rate(template: Any, count: int, passes: int = 3) -> tuple[float, int]:
    """Results/s for feed + compact decode over ``count`` pre-encoded frames (best pass)."""
    step_us = 33_333
    encoder = CompactEncoder()
    blob = b"".join(
        wire_bytes(
            replace(
                template,
                frame_id=template.frame_id + i,
                capture_timestamp_us=template.capture_timestamp_us + i * step_us,
                send_timestamp_us=template.send_timestamp_us + i * step_us,
            ),
            seq=i,
            encoder=encoder,
        )
        for i in range(count)
    )
    best = float("inf")
    for _ in range(passes):
        decoder = Decoder()
        results = CompactDecoder()
        results.set_dictionary(
            replace(encoder.dictionary, frame_id=template.frame_id, timestamp_us=template.capture_timestamp_us)
        )
        decoded = 0
        start = time.perf_counter()
        for offset in range(0, len(blob), _READ_CHUNK):
            for frame in decoder.feed(blob[offset : offset + _READ_CHUNK]):
                if frame.channel == Channel.RESULT:
                    results.decode(frame.payload, received_monotonic=time.monotonic())
                    decoded += 1
        elapsed = time.perf_counter() - start
        if decoded != count:
            raise BenchmarkError(f"decoder returned {decoded} of {count} results (counters {decoder.counters})")
        best = min(best, elapsed)
    return count / best, len(blob)

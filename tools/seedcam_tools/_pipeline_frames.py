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
from seedcam.types import Box, Detection, TextLine
from seedcam_tools.bench_errors import BenchmarkError

__all__ = ["decode_rate", "typical_result", "wire_bytes", "with_detections_and_text"]

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


def with_detections_and_text(result: Any) -> Any:
    """``result`` plus two detections and one text line (what detect + OCR would add)."""
    detections = (
        Detection(2, "car", 0.91, Box(0.12, 0.40, 0.38, 0.71)),
        Detection(0, "person", 0.78, Box(0.66, 0.35, 0.74, 0.69)),
    )
    text = (
        TextLine(
            "AB 1234",
            0.88,
            (0.97, 0.95, 0.6, 0.93, 0.9, 0.92, 0.89),
            Box(0.20, 0.60, 0.31, 0.66),
        ),
    )
    timings = dict(result.timings_us)
    timings.update(
        {
            "task:detect": 9000,
            "detect:invoke": 7000,
            "task:ocr": 4000,
            "ocr:invoke": 3000,
        }
    )
    return replace(
        result,
        detections=detections,
        text_lines=text,
        model_ids=(*result.model_ids, "detect-int8@1.0.0", "ocr-int8@1.0.0"),
        timings_us=timings,
    )


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

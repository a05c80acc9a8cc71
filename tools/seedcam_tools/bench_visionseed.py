"""``seedcam-tools bench visionseed``: the per-frame cost of the VisionSeed send path, before and after.

The firmware's VisionSeed personality turns every processed frame's
:class:`~seedcam.types.Result` into a framed ``YtMsg``. This benchmark times
that send path, from the typed Result to the bytes handed to the transport, in
two forms, on the same results and in the same run (machines running it are
shared and noisy, so the figure to read is the ratio):

``before``
    The path as it was while the daemon handed the link protobuf: the daemon
    encoded the Result (``codec.result_to_pb``, stamped with its send time), the
    VisionSeed link decoded it back (``codec.result_from_pb``), then built the
    ``dataV2`` tree, serialized the ``YtMsg`` and framed it.
``after``
    The typed link seam: :meth:`VisionSeedPersonality.result
    <seedcam_firmware.visionseed.link.VisionSeedPersonality.result>` on the Result
    itself, then the personality's frame encoder.

Two typical results are measured: ``lane_only`` (the lane task's result) and
``lane_2det_1text`` (the same with two detections and a plate reading). Many
short passes of ``frames`` sends alternate between the two paths, with the
garbage collector off as :mod:`timeit` does; each figure is the best pass (the
least disturbed by other work), in microseconds per frame.

The report also holds the receive side (issue 14, finding 12): the VisionSeed framing
decoder's throughput in MB/s of wire bytes, ``before`` the byte-at-a-time decoder
(:class:`ByteLoopDecoder`, kept here as the baseline; the tests use it as an oracle),
``after`` :class:`~seedcam_firmware.visionseed.framing.VisionSeedDecoder`, on the same
stream (results, 128 KiB upload chunks and some garbage, fed in 4 KiB reads) in the same
run; each figure is the best of ``min(passes, 5)`` passes.

Entry points: :func:`run_visionseed_benchmark` (the report dict, optionally written
as JSON) and :func:`format_visionseed_table` (the report as text); the command is
in :mod:`seedcam_tools.bench_cli`.
"""

from __future__ import annotations

import binascii
import datetime as _dt
import enum
import gc
import json
import platform
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seedcam.protocol import codec
from seedcam.protocol.framing import LinkCounters
from seedcam.types import Box, Detection, LaneState, LaneStatus, Result, TextLine
from seedcam_firmware.link_personality import FrameEncoder
from seedcam_firmware.visionseed._proto import visionseed_pb2 as vs
from seedcam_firmware.visionseed.framing import DEFAULT_MAX_PAYLOAD, ESCAPE, SOF, VisionSeedDecoder, encode_visionseed
from seedcam_firmware.visionseed.link import RpcOutcome, VisionSeedPersonality

__all__ = [
    "ByteLoopDecoder",
    "decoder_stream",
    "format_visionseed_table",
    "run_visionseed_benchmark",
    "typical_results",
]

_MAX_FRAME_SIZE = 65536
_DECODER_CHUNK = 4096
_DECODER_MAX_PASSES = 5


class _State(enum.Enum):
    IDLE = 0
    HEADER = 1
    PAYLOAD = 2


class ByteLoopDecoder:
    """The VisionSeed framing decoder as it was before issue 14: one Python step per byte.

    The baseline of the decoder benchmark, and the oracle the tests hold the faster
    :class:`~seedcam_firmware.visionseed.framing.VisionSeedDecoder` to: same payloads, same
    counters, for any input fed in any pieces.
    """

    def __init__(self, max_payload: int = DEFAULT_MAX_PAYLOAD) -> None:
        self.max_payload = max_payload
        self.counters = LinkCounters()
        self._state = _State.IDLE
        self._escaped = False
        self._buffer = bytearray()
        self._length = 0

    def feed(self, data: bytes) -> list[bytes]:
        """Consume bytes; return the payloads of the frames they complete."""
        self.counters.bytes_rx += len(data)
        payloads: list[bytes] = []
        for byte in data:
            if byte == SOF:
                if self._state is not _State.IDLE:  # a new frame cut the current one short
                    self.counters.decode_errors += 1
                    self._drop()
                self._state, self._escaped = _State.HEADER, False
                self._buffer.clear()
                continue
            if self._state is _State.IDLE:
                self.counters.bytes_dropped += 1
                continue
            if self._escaped:
                byte ^= ESCAPE
                self._escaped = False
            elif byte == ESCAPE:
                self._escaped = True
                continue
            self._buffer.append(byte)
            if self._state is _State.HEADER and len(self._buffer) == 5:
                self._check_header()
            elif self._state is _State.PAYLOAD and len(self._buffer) == self._length + 2:
                payload = self._check_payload()
                if payload is not None:
                    payloads.append(payload)
        return payloads

    def _check_header(self) -> None:
        length_bytes, crc = bytes(self._buffer[:3]), int.from_bytes(self._buffer[3:5], "big")
        if binascii.crc_hqx(length_bytes, 0xFFFF) != crc:
            self.counters.crc_errors += 1
            self._drop()
            return
        self._length = int.from_bytes(length_bytes, "big")
        if self._length > self.max_payload:
            self.counters.oversize += 1
            self._drop()
            return
        self._buffer.clear()
        self._state = _State.PAYLOAD

    def _check_payload(self) -> bytes | None:
        payload, crc = bytes(self._buffer[:-2]), int.from_bytes(self._buffer[-2:], "big")
        self._state = _State.IDLE
        self._buffer.clear()
        if binascii.crc_hqx(payload, 0xFFFF) != crc:
            self.counters.crc_errors += 1
            self.counters.resyncs += 1
            self.counters.bytes_dropped += len(payload) + 8
            return None
        self.counters.frames_rx += 1
        return payload

    def _drop(self) -> None:
        self.counters.resyncs += 1
        self.counters.bytes_dropped += len(self._buffer) + 1
        self._buffer.clear()
        self._state = _State.IDLE
        self._escaped = False


def typical_results() -> dict[str, Result]:
    """The two results measured: a lane-only frame, and one with two detections and a plate text too."""
    lane = LaneState(LaneStatus.OK, 0.052, -0.031, 0.21, 0.93, 0.88, 0.61, 0.44, 0.0)
    lane_only = Result(
        frame_id=1234,
        capture_timestamp_us=98_765_432_100,
        timings_us={
            "lane:preprocess": 812,
            "lane:invoke": 4_130,
            "lane:decode": 95,
            "task:lane": 5_160,
            "capture_to_result": 7_420,
        },
        model_ids=("lane-v2",),
        lane=lane,
        frame_width=320,
        frame_height=240,
    )
    plate = Box(0.61, 0.55, 0.84, 0.69)
    busy = Result(
        frame_id=1235,
        capture_timestamp_us=98_765_465_433,
        timings_us={
            **lane_only.timings_us,
            "task:detect": 9_870,
            "detect:invoke": 8_900,
            "task:ocr": 2_310,
            "ocr:invoke": 1_950,
        },
        model_ids=("lane-v2", "detect-v3", "ocr-v2"),
        lane=lane,
        detections=(
            Detection(0, "stop", 0.91, Box(0.10, 0.20, 0.30, 0.50)),
            Detection(6, "plate", 0.80, plate),
        ),
        text_lines=(TextLine("AGV-042", 0.77, (0.9, 0.8, 0.95, 0.7, 0.9, 0.85, 0.9), plate),),
        frame_width=320,
        frame_height=240,
    )
    return {"lane_only": lane_only, "lane_2det_1text": busy}


def _no_rpc(rpc: vs.YtRpc) -> RpcOutcome:
    """Never called: the benchmark only sends."""
    return vs.YtRpcResponse(code=vs.YtRpcResponse.ERROR_OTHER), None


def _send_before(personality: VisionSeedPersonality, encoder: FrameEncoder) -> Callable[[Result], bytes]:
    def send(result: Result) -> bytes:
        message = codec.result_to_pb(result)  # the daemon, then
        message.send_timestamp_us = time.monotonic_ns() // 1000
        outgoing = personality.result(codec.result_from_pb(message))  # the link's decode back to a Result
        return encoder.encode(outgoing.channel, outgoing.payload)

    return send


def _send_after(personality: VisionSeedPersonality, encoder: FrameEncoder) -> Callable[[Result], bytes]:
    def send(result: Result) -> bytes:
        outgoing = personality.result(result)
        return encoder.encode(outgoing.channel, outgoing.payload)

    return send


def _pass_us(send: Callable[[Result], bytes], result: Result, frames: int) -> float:
    """Microseconds per frame over one pass of ``frames`` sends (garbage collection off meanwhile)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter_ns()
        for _ in range(frames):
            send(result)
        return (time.perf_counter_ns() - start) / frames / 1000
    finally:
        if collecting:
            gc.enable()


def decoder_stream(frames: list[bytes]) -> bytes:
    """The decoder benchmark's wire bytes: the result frames, four 128 KiB upload chunks, some garbage."""
    rng = random.Random(12)
    uploads = [encode_visionseed(rng.randbytes(128 * 1024)) for _ in range(4)]
    garbage = rng.randbytes(4096)
    return b"".join(frames * 200 + uploads + [garbage] + frames * 200)


def _decoder_mb_s(make: Callable[[], ByteLoopDecoder | VisionSeedDecoder], stream: bytes) -> float:
    """MB/s of wire bytes through a fresh decoder fed in 4 KiB reads (garbage collection off meanwhile)."""
    decoder = make()
    chunks = [stream[i : i + _DECODER_CHUNK] for i in range(0, len(stream), _DECODER_CHUNK)]
    collecting = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter_ns()
        for chunk in chunks:
            decoder.feed(chunk)
        elapsed_s = (time.perf_counter_ns() - start) / 1e9
    finally:
        if collecting:
            gc.enable()
    return len(stream) / 1e6 / elapsed_s


def _decoder_report(stream: bytes, passes: int) -> dict[str, float | int]:
    decoders: dict[str, Callable[[], ByteLoopDecoder | VisionSeedDecoder]] = {
        "before": ByteLoopDecoder,
        "after": VisionSeedDecoder,
    }
    best = {name: 0.0 for name in decoders}
    for _ in range(min(passes, _DECODER_MAX_PASSES)):
        for name, make in decoders.items():
            best[name] = max(best[name], _decoder_mb_s(make, stream))
    return {
        "stream_bytes": len(stream),
        "before_mb_s": round(best["before"], 3),
        "after_mb_s": round(best["after"], 3),
        "after_to_before": round(best["after"] / best["before"], 2),
    }


def run_visionseed_benchmark(*, frames: int = 200, passes: int = 50, out_json: Path | None = None) -> dict[str, Any]:
    """Time the VisionSeed send path before and after the typed link seam (see the module docstring).

    Args:
        frames: sends per pass.
        passes: passes per path and result (they alternate between the paths).
        out_json: where to write the report as JSON (None: nowhere).

    Returns:
        The report: ``frames``, ``passes``, ``results`` {name: {``before_us``, ``after_us``,
        ``after_to_before``, ``frame_bytes``}}, ``decoder`` {``stream_bytes``, ``before_mb_s``,
        ``after_mb_s``, ``after_to_before``} and ``environment``.

    Raises:
        ValueError: a non-positive argument.
    """
    if frames < 1 or passes < 1:
        raise ValueError("frames and passes must be >= 1")
    personality = VisionSeedPersonality(_no_rpc)  # never started: no RPC worker, nothing to close
    encoder = personality.encoder(_MAX_FRAME_SIZE)
    paths = {"before": _send_before(personality, encoder), "after": _send_after(personality, encoder)}
    report_results: dict[str, dict[str, float | int]] = {}
    for name, result in typical_results().items():
        for send in paths.values():
            send(result)  # warm up: first-call costs out of the figures
        best = {path: float("inf") for path in paths}
        for _ in range(passes):
            for path, send in paths.items():
                best[path] = min(best[path], _pass_us(send, result, frames))
        report_results[name] = {
            "before_us": round(best["before"], 3),
            "after_us": round(best["after"], 3),
            "after_to_before": round(best["after"] / best["before"], 4),
            "frame_bytes": len(paths["after"](result)),
        }
    sent = [paths["after"](result) for result in typical_results().values()]
    report: dict[str, Any] = {
        "frames": frames,
        "passes": passes,
        "results": report_results,
        "decoder": _decoder_report(decoder_stream(sent), passes),
        "environment": {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        },
    }
    if out_json is not None:
        out_json.write_text(json.dumps(report, indent=2) + "\n")
    return report


def format_visionseed_table(report: dict[str, Any]) -> str:
    """The report as text: one line per result, before and after in µs per frame and their ratio."""
    lines = [
        f"VisionSeed send path, Result -> framed YtMsg (best of {report['passes']} passes of "
        f"{report['frames']} frames)",
        f"{'result':<18}{'before µs/frame':>17}{'after µs/frame':>16}{'after/before':>14}{'bytes':>7}",
    ]
    for name, row in report["results"].items():
        lines.append(
            f"{name:<18}{row['before_us']:>17.1f}{row['after_us']:>16.1f}"
            f"{row['after_to_before']:>14.2f}{row['frame_bytes']:>7d}"
        )
    lines.append("before: result_to_pb -> result_from_pb -> dataV2 (a protobuf round trip); after: dataV2 directly")
    decoder = report["decoder"]
    lines.append(
        f"{'decoder MB/s':<18}{decoder['before_mb_s']:>17.2f}{decoder['after_mb_s']:>16.2f}"
        f"{decoder['after_to_before']:>14.1f}{decoder['stream_bytes']:>7d}"
    )
    lines.append("decoder: the VisionSeed framing decoder on the same stream in 4 KiB reads; before: byte loop")
    return "\n".join(lines)

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

The report also holds the receive side (issue 14, finding 12): the throughput of
:class:`~seedcam_firmware.visionseed.framing.VisionSeedDecoder` in MB/s of wire bytes on a
stream of results, 128 KiB upload chunks and some garbage, fed in 4 KiB reads; the
best of ``min(passes, 5)`` passes.

Entry points: :func:`run_visionseed_benchmark` (the report dict, optionally written
as JSON) and :func:`format_visionseed_table` (the report as text); the command is
in :mod:`seedcam_tools.bench_cli`.
"""

from __future__ import annotations

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
from seedcam.types import Box, Detection, LaneState, LaneStatus, Result, TextLine
from seedcam_firmware.link_personality import FrameEncoder
from seedcam_firmware.visionseed._proto import visionseed_pb2 as vs
from seedcam_firmware.visionseed.framing import VisionSeedDecoder, encode_visionseed
from seedcam_firmware.visionseed.link import RpcOutcome, VisionSeedPersonality

__all__ = [
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
        (outgoing,) = personality.result(codec.result_from_pb(message))  # the link's decode back to a Result
        return encoder.encode(outgoing.channel, outgoing.payload)

    return send


def _send_after(personality: VisionSeedPersonality, encoder: FrameEncoder) -> Callable[[Result], bytes]:
    def send(result: Result) -> bytes:
        (outgoing,) = personality.result(result)
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


def _decoder_mb_s(stream: bytes) -> float:
    """MB/s of wire bytes through a fresh decoder fed in 4 KiB reads (garbage collection off meanwhile)."""
    decoder = VisionSeedDecoder()
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
    best = max(_decoder_mb_s(stream) for _ in range(min(passes, _DECODER_MAX_PASSES)))
    return {"stream_bytes": len(stream), "mb_s": round(best, 3)}


def run_visionseed_benchmark(*, frames: int = 200, passes: int = 50, out_json: Path | None = None) -> dict[str, Any]:
    """Time the VisionSeed send path before and after the typed link seam (see the module docstring).

    Args:
        frames: sends per pass.
        passes: passes per path and result (they alternate between the paths).
        out_json: where to write the report as JSON (None: nowhere).

    Returns:
        The report: ``frames``, ``passes``, ``results`` {name: {``before_us``, ``after_us``,
        ``after_to_before``, ``frame_bytes``}}, ``decoder`` {``stream_bytes``, ``mb_s``} and
        ``environment``.

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
        f"decoder: {decoder['mb_s']:.2f} MB/s, the VisionSeed framing decoder on {decoder['stream_bytes']} B "
        "of wire bytes in 4 KiB reads"
    )
    return "\n".join(lines)

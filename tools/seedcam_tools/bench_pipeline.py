"""End-to-end pipeline benchmark: the real firmware on a pty, the real SDK, the lane model.

Machines running this are shared and noisy, so every figure that depends on CPU
speed is also given as a ratio to a limit measured *in the same run*:

``bare_invoke_ms``
    Median wall time of one bare TFLite invoke of the lane int8 model, loaded with
    the firmware's runtime (:class:`seedcam_firmware.inference.Model`, same
    ``num_threads``) in this process: the input is a synthetic camera frame,
    preprocessed and quantized once beforehand; one sample is
    ``set_tensor`` + ``invoke``. Half of the samples are taken before the
    firmware starts and half after it stops; the median is over all of them.
``per_frame_ms``
    Median over the run's results of the firmware's own ``task:lane`` timing:
    the whole lane task on one frame (preprocess, quantize, invoke, dequantize,
    decode), measured inside the firmware. ``capture_to_result_ms`` (capture
    timestamp → Result built; adds the wait in the frame queue and, for the
    synthetic camera, which stamps a frame when it starts rendering it, the render
    time) and ``result_to_host_ms`` (the rest of the latency: send queue, encode,
    pty, host decode) are reported next to it.
``glue_overhead_ratio``
    ``per_frame_ms / bare_invoke_ms``: how much the task costs beyond the model.
``latency_ms``
    p50 / p95 of ``received_monotonic * 1e6 - capture_timestamp_us`` (the host's
    ``time.monotonic()`` at decode minus the sensor's capture time; one clock
    because both run on this machine), in ms.
``result_frame_bytes``
    Bytes on the wire (header, CRC, COBS and delimiter included) of a typical
    Result: ``lane_only`` is the median over the run's real results,
    ``lane_2det_1text`` the same result with two detections and one text line added.
``host_decode_results_per_s``
    ``Decoder.feed`` + the compact decode (:mod:`seedcam.protocol.compact`) over N typical
    lane-only frames pre-encoded into one byte string (fed in 64 KiB reads, as the
    SDK's reader does); best of three passes.
``line_rate_ratio_921600``
    ``host_decode_results_per_s`` ÷ the results/s a 921600-baud 8N1 UART carries
    (92160 bytes/s ÷ ``lane_only`` bytes).

Entry points: :func:`run_pipeline_benchmark` (returns the report dict, optionally
writes it as JSON) and :func:`format_table` (the report as a text table). The
parts: the model timed bare (``_pipeline_invoke``), the run on the emulated board
(``_pipeline_stream``), the wire sizes and host decode rate (``_pipeline_frames``)
and the table (``_pipeline_table``).
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import platform
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seedcam_firmware import __version__ as firmware_version
from seedcam_firmware.config import DEFAULT_MODELS_DIR, RuntimeConfig
from seedcam_firmware.inference import load_interpreter
from seedcam_tools._pipeline_frames import decode_rate, typical_result, wire_bytes, with_detections_and_text
from seedcam_tools._pipeline_invoke import load_lane_model, model_input, time_bare_invokes, time_runtime_invokes
from seedcam_tools._pipeline_stream import run_firmware
from seedcam_tools._pipeline_table import format_table
from seedcam_tools.bench_errors import BenchmarkError, LaneModelMissing

__all__ = [
    "UART_BAUD",
    "UART_BYTES_PER_S",
    "BenchmarkError",
    "LaneModelMissing",
    "format_table",
    "run_pipeline_benchmark",
]

log = logging.getLogger(__name__)

UART_BAUD = 921600
#: 8N1: 10 bits on the line per byte
UART_BYTES_PER_S = UART_BAUD / 10


def _percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (``q`` in 0..100) of a non-empty sequence."""
    data = sorted(values)
    if not data:
        raise ValueError("percentile of an empty sequence")
    pos = (len(data) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def _note(progress: bool, message: str, *args: object) -> None:
    log.log(logging.INFO if progress else logging.DEBUG, message, *args)


def _environment(interp: Any, manifest: Any, num_threads: int) -> dict[str, Any]:
    try:
        load = list(os.getloadavg())
    except OSError:
        load = []
    runtime = type(interp).__module__.split(".")[0]
    return {
        "time_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "loadavg": load,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "tflite_runtime": runtime,
        "num_threads": num_threads,
        "firmware_version": firmware_version,
        "model_id": manifest.id,
        "model_version": manifest.version,
        "model_sha256": manifest.sha256,
        "model_file": str(manifest.file),
    }


def run_pipeline_benchmark(
    *,
    seconds: float = 10.0,
    fps: float = 30.0,
    models_dir: Path | None = None,
    out_json: Path | None = None,
    progress: bool = True,
    invokes: int = 200,
    decode_frames: int = 20000,
    num_threads: int | None = None,
) -> dict[str, Any]:
    """Run the whole benchmark and return the report (see the module docstring).

    Args:
        seconds: how long to collect results from the firmware (after warm-up).
        fps: the synthetic camera's frame rate.
        models_dir: the folder holding ``lane/manifest.json`` (default: the repository's
            ``models/``, as the firmware uses).
        out_json: also write the report here as JSON.
        progress: log each step at INFO (else DEBUG).
        invokes: bare model invokes for ``bare_invoke_ms`` (half before, half after the run).
        decode_frames: frames in the host decode test.
        num_threads: interpreter threads for both the firmware and the bare invoke
            (default: the firmware's default, ``runtime.num_threads``).

    Returns:
        The report: ``glue_overhead_ratio``, ``bare_invoke_ms``, ``per_frame_ms``,
        ``latency_ms`` {p50, p95, max}, ``result_frame_bytes`` {lane_only,
        lane_2det_1text}, ``host_decode_results_per_s``, ``line_rate_ratio_921600``,
        the supporting figures and ``environment``.

    Raises:
        ValueError: a non-positive argument.
        LaneModelMissing: the lane int8 bundle is missing or does not load.
        BenchmarkError: the firmware did not start or delivered no usable results.
    """
    if seconds <= 0 or fps <= 0 or invokes < 2 or decode_frames < 1:
        raise ValueError("seconds and fps must be > 0, invokes >= 2 and decode_frames >= 1")
    models_dir = Path(models_dir) if models_dir is not None else Path(DEFAULT_MODELS_DIR)
    threads = num_threads if num_threads is not None else int(RuntimeConfig().num_threads)

    manifest, model = load_lane_model(models_dir, threads)
    x, xq = model_input(manifest, model)
    interp = load_interpreter(manifest.file, num_threads=threads)
    _note(
        progress,
        "bare invoke of %s (%d threads): %d samples before the run",
        manifest.id,
        threads,
        invokes // 2,
    )
    bare = time_bare_invokes(interp, xq, invokes // 2)
    runtime_invoke = time_runtime_invokes(model, x, max(10, invokes // 4))

    with tempfile.TemporaryDirectory(prefix="seedcam-bench-") as tmp:
        run = run_firmware(Path(tmp), seconds, fps, models_dir, threads, progress)

    _note(progress, "bare invoke: %d samples after the run", invokes - invokes // 2)
    bare += time_bare_invokes(interp, xq, invokes - invokes // 2)
    environment = _environment(interp, manifest, threads)
    del model, interp

    results = sorted(run.results, key=lambda r: r.frame_id)
    per_frame_us = [r.timings_us["task:lane"] for r in results]
    capture_to_result_us = [r.timings_us.get("capture_to_result", 0) for r in results]
    stage_names = sorted({k for r in results for k in r.timings_us if k.startswith("lane:")})
    stages_ms = {k: statistics.median(r.timings_us.get(k, 0) for r in results) / 1e3 for k in stage_names}
    latencies_ms = [(r.received_monotonic * 1e6 - r.capture_timestamp_us) / 1e3 for r in results]
    result_to_host_ms = [lat - c / 1e3 for lat, c in zip(latencies_ms, capture_to_result_us, strict=True)]
    span = results[-1].received_monotonic - results[0].received_monotonic
    achieved_fps = (len(results) - 1) / span if len(results) > 1 and span > 0 else len(results) / run.elapsed_s
    ids = [r.frame_id for r in results]
    host_missing = (ids[-1] - ids[0] + 1) - len(set(ids))

    bare_ms = statistics.median(bare) * 1e3
    per_frame_ms = statistics.median(per_frame_us) / 1e3

    typical = typical_result(results)
    lane_only = len(wire_bytes(typical, typical.frame_id))
    rich = len(wire_bytes(with_detections_and_text(typical), typical.frame_id))
    _note(progress, "host decode: %d frames of %d bytes", decode_frames, lane_only)
    decode_per_s, blob_bytes = decode_rate(typical, decode_frames)
    line_results_per_s = UART_BYTES_PER_S / lane_only

    health = run.health
    report: dict[str, Any] = {
        "glue_overhead_ratio": per_frame_ms / bare_ms,
        "bare_invoke_ms": bare_ms,
        "bare_invoke_samples": len(bare),
        "runtime_invoke_ms": statistics.median(runtime_invoke) * 1e3,
        "per_frame_ms": per_frame_ms,
        "per_frame_definition": "median of the firmware's timings_us['task:lane'] (preprocess+invoke+decode)",
        "lane_stage_ms": stages_ms,
        "capture_to_result_ms": statistics.median(capture_to_result_us) / 1e3,
        "result_to_host_ms": statistics.median(result_to_host_ms),
        "latency_ms": {
            "p50": _percentile(latencies_ms, 50),
            "p95": _percentile(latencies_ms, 95),
            "max": max(latencies_ms),
        },
        "fps_requested": fps,
        "fps_achieved": achieved_fps,
        "results": len(results),
        "seconds": run.elapsed_s,
        "frames_missing_at_host": host_missing,
        "device_health": None
        if health is None
        else {
            "frames_captured": health.frames_captured,
            "frames_processed": health.frames_processed,
            "frames_dropped": health.frames_dropped,
            "fps": health.fps,
        },
        "result_frame_bytes": {"lane_only": lane_only, "lane_2det_1text": rich},
        "host_decode_results_per_s": decode_per_s,
        "host_decode_frames": decode_frames,
        "host_decode_bytes": blob_bytes,
        "line_results_per_s_921600": line_results_per_s,
        "line_rate_ratio_921600": decode_per_s / line_results_per_s,
        "line_load_at_fps": achieved_fps * lane_only / UART_BYTES_PER_S,
        "firmware_returncode": run.firmware_returncode,
        "environment": environment,
    }
    if out_json is not None:
        out = Path(out_json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        _note(progress, "report written to %s", out)
    return report

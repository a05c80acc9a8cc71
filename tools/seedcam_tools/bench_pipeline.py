"""End-to-end pipeline benchmark: the real firmware on a pty, the real SDK, the default tasks' models.

The emulated board runs the default tasks (lane, detect, OCR) on a scripted scene
with three signs and a plate (:data:`seedcam_tools.bench_link.SIGNS_AND_PLATE`) at
30 fps, ``pipeline.timings = "full"``. Machines running this are shared and noisy,
so every figure that depends on CPU speed is also given as a ratio to a limit
measured *in the same run*:

``bare_invoke_ms``
    The sum, per frame, of the bare TFLite invokes of the same int8 models: lane +
    detect + OCR x the plates read (the median number of plate detections) x the
    crops read per plate (``ocr.views``, the firmware's default). Each
    model is loaded with the firmware's runtime (``load_interpreter``, same
    ``num_threads``) in this process; one sample is ``set_tensor`` + ``invoke`` on a
    preprocessed synthetic frame (a zero crop for OCR: content does not change a
    CNN's time). Half of the samples are taken before the firmware starts and half
    after it stops; the median per model is over all of them
    (``bare_invoke_ms_by_model``).
``per_frame_ms``
    Median over the run's results of the sum of the firmware's ``task:*`` timings:
    everything the tasks do on one frame (preprocess, quantize, invoke, decode,
    crops), measured inside the firmware. ``stage_ms`` breaks it down by stage;
    ``firmware_invoke_ms`` is the sum of the ``*:invoke`` stages, the models' time
    inside the firmware (it shares the CPUs with the renderer and the other threads).
``glue_overhead_ratio``
    ``per_frame_ms / bare_invoke_ms``: how much the tasks cost beyond their models.
``paced_bare_invoke_ms``, ``glue_at_frame_rate_ratio``
    The same bare invokes made as the firmware makes them: once per frame period
    (``1 / fps``, sleeping in between), each model in task order
    (``paced_bare_invoke_samples`` frames, after the run). On a machine whose
    caches and clocks go cold between frames (shared or power-managed CPUs) a
    paced invoke is slower than one in a tight loop, and that is the models' cost
    at the frame rate, not the tasks'; ``glue_at_frame_rate_ratio`` is
    ``per_frame_ms`` over it.
``latency_ms``
    p50 / p95 of ``received_monotonic * 1e6 - capture_timestamp_us`` (the host's
    ``time.monotonic()`` at decode minus the sensor's capture time; one clock
    because both run on this machine), in ms. ``capture_to_result_ms`` is the part
    inside the firmware up to the Result, ``result_to_host_ms`` the rest.
``result_frame_bytes``
    Bytes on the wire (framing included, protocol 2's compact layout, summary
    timings) of the run's median result (``lane_3det_1text``: what the scene gives)
    and of the same result with its detections and text removed (``lane_only``).
``host_decode_results_per_s``
    ``Decoder.feed`` + the compact decode over N copies of the median result
    pre-encoded into one byte string (fed in 64 KiB reads, as the SDK's reader
    does); best of three passes, on this one core.
``line_rate_ratio_921600``
    ``host_decode_results_per_s`` ÷ the results/s a 921600-baud 8N1 UART carries.

Entry points: :func:`run_pipeline_benchmark` (returns the report dict, optionally
writes it as JSON) and :func:`format_table` (the report as a text table). The
parts: the models timed bare (``_pipeline_invoke``), the run on the emulated board
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
from dataclasses import replace
from pathlib import Path
from typing import Any

from seedcam_firmware import __version__ as firmware_version
from seedcam_firmware.config import DEFAULT_MODELS_DIR, RuntimeConfig
from seedcam_firmware.task_sections import OcrConfig
from seedcam_tools._pipeline_frames import decode_rate, typical_result, wire_bytes
from seedcam_tools._pipeline_invoke import (
    BENCH_TASKS,
    TaskModel,
    load_task_models,
    time_bare_invokes,
    time_paced_invokes,
    time_runtime_invokes,
)
from seedcam_tools._pipeline_stream import run_firmware
from seedcam_tools._pipeline_table import format_table
from seedcam_tools.bench_errors import BenchmarkError, ModelMissing

__all__ = [
    "UART_BAUD",
    "UART_BYTES_PER_S",
    "BenchmarkError",
    "ModelMissing",
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


def _environment(models: Sequence[TaskModel], num_threads: int) -> dict[str, Any]:
    try:
        load = list(os.getloadavg())
    except OSError:
        load = []
    runtime = type(models[0].interpreter).__module__.split(".")[0]
    return {
        "time_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "loadavg": load,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "tflite_runtime": runtime,
        "num_threads": num_threads,
        "firmware_version": firmware_version,
        "models": {m.task: {"id": m.manifest.id, "sha256": m.manifest.sha256} for m in models},
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
        models_dir: the folder holding ``lane/``, ``detect/`` and ``ocr/`` (default: the
            repository's ``models/``, as the firmware uses).
        out_json: also write the report here as JSON.
        progress: log each step at INFO (else DEBUG).
        invokes: bare invokes of each model for ``bare_invoke_ms`` (half before, half after the run).
        decode_frames: frames in the host decode test.
        num_threads: interpreter threads for both the firmware and the bare invoke
            (default: the firmware's default, ``runtime.num_threads``).

    Returns:
        The report: ``glue_overhead_ratio``, ``bare_invoke_ms``, ``per_frame_ms``,
        ``latency_ms`` {p50, p95, max}, ``result_frame_bytes`` {lane_only,
        lane_3det_1text}, ``host_decode_results_per_s``, ``line_rate_ratio_921600``,
        the supporting figures and ``environment``.

    Raises:
        ValueError: a non-positive argument.
        ModelMissing: an int8 bundle of the default tasks is missing or does not load.
        BenchmarkError: the firmware did not start or delivered no usable results.
    """
    if seconds <= 0 or fps <= 0 or invokes < 2 or decode_frames < 1:
        raise ValueError("seconds and fps must be > 0, invokes >= 2 and decode_frames >= 1")
    models_dir = Path(models_dir) if models_dir is not None else Path(DEFAULT_MODELS_DIR)
    threads = num_threads if num_threads is not None else int(RuntimeConfig().num_threads)

    models = load_task_models(models_dir, threads)
    _note(
        progress, "bare invokes of %s (%d threads): %d samples each before the run", BENCH_TASKS, threads, invokes // 2
    )
    bare = {m.task: time_bare_invokes(m.interpreter, m.xq, invokes // 2) for m in models}
    runtime_invoke = {m.task: time_runtime_invokes(m.model, m.x, max(10, invokes // 4)) for m in models}

    with tempfile.TemporaryDirectory(prefix="seedcam-bench-") as tmp:
        run = run_firmware(Path(tmp), seconds, fps, models_dir, threads, progress, BENCH_TASKS)

    _note(progress, "bare invokes: %d samples each after the run", invokes - invokes // 2)
    for m in models:
        bare[m.task] += time_bare_invokes(m.interpreter, m.xq, invokes - invokes // 2)
    paced_frames = max(20, invokes // 2)
    _note(progress, "bare invokes at %g fps: %d frames", fps, paced_frames)
    paced = time_paced_invokes(models, paced_frames, 1.0 / fps)
    environment = _environment(models, threads)
    del models

    results = sorted(run.results, key=lambda r: r.frame_id)
    per_frame_us = [sum(v for k, v in r.timings_us.items() if k.startswith("task:")) for r in results]
    invoke_us = [sum(v for k, v in r.timings_us.items() if k.endswith(":invoke")) for r in results]
    capture_to_result_us = [r.timings_us.get("capture_to_result", 0) for r in results]
    stage_names = sorted({k for r in results for k in r.timings_us if ":" in k})
    stages_ms = {k: statistics.median(r.timings_us.get(k, 0) for r in results) / 1e3 for k in stage_names}
    latencies_ms = [(r.received_monotonic * 1e6 - r.capture_timestamp_us) / 1e3 for r in results]
    result_to_host_ms = [lat - c / 1e3 for lat, c in zip(latencies_ms, capture_to_result_us, strict=True)]
    span = results[-1].received_monotonic - results[0].received_monotonic
    achieved_fps = (len(results) - 1) / span if len(results) > 1 and span > 0 else len(results) / run.elapsed_s
    ids = [r.frame_id for r in results]
    host_missing = (ids[-1] - ids[0] + 1) - len(set(ids))

    plates = statistics.median(sum(1 for d in r.detections if d.label == "plate") for r in results)
    views = OcrConfig().views  # the firmware runs with the default [ocr] settings
    ocr_invokes = plates * views
    bare_ms = {task: statistics.median(samples) * 1e3 for task, samples in bare.items()}
    per_frame_bare_ms = sum(ms * (ocr_invokes if task == "ocr" else 1) for task, ms in bare_ms.items())
    paced_ms = {task: statistics.median(samples) * 1e3 for task, samples in paced.items()}
    per_frame_paced_ms = sum(ms * (ocr_invokes if task == "ocr" else 1) for task, ms in paced_ms.items())
    per_frame_ms = statistics.median(per_frame_us) / 1e3

    typical = typical_result(results)
    rich = len(wire_bytes(typical, typical.frame_id))
    lane_only = len(wire_bytes(replace(typical, detections=(), text_lines=()), typical.frame_id))
    _note(progress, "host decode: %d frames of %d bytes", decode_frames, rich)
    decode_per_s, blob_bytes = decode_rate(typical, decode_frames)
    line_results_per_s = UART_BYTES_PER_S / rich

    health = run.health
    report: dict[str, Any] = {
        "glue_overhead_ratio": per_frame_ms / per_frame_bare_ms,
        "bare_invoke_ms": per_frame_bare_ms,
        "bare_invoke_ms_by_model": bare_ms,
        "bare_invoke_samples": invokes,
        "glue_at_frame_rate_ratio": per_frame_ms / per_frame_paced_ms,
        "paced_bare_invoke_ms": per_frame_paced_ms,
        "paced_bare_invoke_ms_by_model": paced_ms,
        "paced_bare_invoke_samples": paced_frames,
        "plates_read_per_frame": plates,
        "ocr_views": views,
        "runtime_invoke_ms_by_model": {t: statistics.median(v) * 1e3 for t, v in runtime_invoke.items()},
        "per_frame_ms": per_frame_ms,
        "per_frame_definition": "median of the sum of the firmware's timings_us['task:*'] (lane, detect, ocr)",
        "firmware_invoke_ms": statistics.median(invoke_us) / 1e3,
        "stage_ms": stages_ms,
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
            "results_dropped": health.results_dropped,
            "fps": health.fps,
        },
        "result_frame_bytes": {"lane_only": lane_only, "lane_3det_1text": rich},
        "detections_per_result": statistics.median(len(r.detections) for r in results),
        "host_decode_results_per_s": decode_per_s,
        "host_decode_frames": decode_frames,
        "host_decode_bytes": blob_bytes,
        "line_results_per_s_921600": line_results_per_s,
        "line_rate_ratio_921600": decode_per_s / line_results_per_s,
        "line_load_at_fps": achieved_fps * rich / UART_BYTES_PER_S,
        "firmware_returncode": run.firmware_returncode,
        "environment": environment,
    }
    if out_json is not None:
        out = Path(out_json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        _note(progress, "report written to %s", out)
    return report

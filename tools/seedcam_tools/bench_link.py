"""Link benchmark: the default pipeline on a scene full of signs and a plate, over UART-rate links and a pty.

For each line (115200 and 921600 baud, emulated with ``?throttle=``, and a bare
pty) the emulated board runs the default tasks (lane, detect, OCR) at 30 fps on a
scripted scene (three signs and a plate), and the public SDK collects results for
a few seconds; half-way through, the host takes a snapshot. Reported per line:

``results_per_s``
    Results the host decoded per second (the first to the last one of the window).
``bytes_per_result``
    Median bytes on the wire of the results received (protocol 2's compact layout
    re-encoded by the firmware's encoder; the dictionary, sent once, is left out).
``line_load``
    ``results_per_s * bytes_per_result`` ÷ the line's bytes per second (8N1).
``results_dropped``
    The device's Health ``results_dropped`` at the end: results the link did not get
    onto the line in time (bandwidth) or could not encode; and the pipeline's own
    ``frames_dropped`` beside it (latest-wins queues, failed frames).
``latency_ms``
    p50 / p95 of capture→host (host ``time.monotonic()`` at decode minus the capture
    time; one clock, both on this machine).
``snapshot_s``
    How long the snapshot call took, and its JPEG's size (None: it failed; the error
    is reported).

The figures depend on this machine's speed: ``results_per_s`` over the pty is the
ceiling the CPU allows, the UART lines are judged against it and against the fps.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import platform
import statistics
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import seedcam
from seedcam.protocol.compact import CompactEncoder
from seedcam.protocol.framing import Channel, Frame, encode_frame
from seedcam_firmware.config import DEFAULT_MODELS_DIR
from seedcam_firmware.launcher import BoardStartError, EmulatedBoard
from seedcam_tools.bench_errors import BenchmarkError

__all__ = ["LINES", "SIGNS_AND_PLATE", "format_link_table", "run_link_benchmark"]

log = logging.getLogger(__name__)

#: (name, baud rate or None for a bare pty)
LINES: tuple[tuple[str, int | None], ...] = (("115200", 115200), ("921600", 921600), ("pty", None))
_LINE_NAMES = tuple(name for name, _ in LINES)  # run_link_benchmark runs them all by default

#: a scripted scene: three signs and a plate in view, a gently curving lane
SIGNS_AND_PLATE = """
offset_m = 0.03
heading_rad = 0.03
curvature_per_m = 0.15
noise_sigma = 0.01

[[objects]]
kind = "stop"
forward_m = 0.9
left_m = 0.32

[[objects]]
kind = "speed_limit"
forward_m = 1.2
left_m = -0.36
text = "30"

[[objects]]
kind = "turn_left"
forward_m = 1.6
left_m = 0.4

[[objects]]
kind = "plate"
forward_m = 0.42
left_m = -0.24
text = "AGV-042"
yaw_rad = 0.2
"""

_START_TIMEOUT_S = 90.0
_CONNECT_TIMEOUT_S = 15.0
_WARMUP_RESULTS = 10
_STOP_TIMEOUT_S = 5.0
_LOG_CHARS = 800


@dataclass(frozen=True)
class _Run:
    results: list[Any]
    health: dict[str, float]  #: the device's counters over the window
    snapshot_s: float | None
    snapshot_bytes: int
    snapshot_error: str


def _percentile(values: Sequence[float], q: float) -> float:
    data = sorted(values)
    pos = (len(data) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def _wire_sizes(results: Sequence[Any]) -> list[int]:
    encoder = CompactEncoder()
    sizes = []
    for result in results:
        _, payload = encoder.encode(result, result.send_timestamp_us or result.capture_timestamp_us)
        sizes.append(len(encode_frame(Frame(Channel.RESULT, 0x1234, payload))))
    return sizes


def _collect(board: EmulatedBoard, seconds: float) -> _Run:
    results: list[Any] = []
    lock = threading.Lock()
    enough = threading.Condition(lock)

    def collect(result: Any) -> None:
        with enough:
            results.append(result)
            enough.notify_all()

    healthy = threading.Event()
    with seedcam.open(board.link, timeout=_CONNECT_TIMEOUT_S, reconnect=False) as sensor:
        sensor.on_health(lambda _: healthy.set())
        unregister = sensor.on_result(collect)
        if not healthy.wait(_CONNECT_TIMEOUT_S):
            raise BenchmarkError(f"no health report within {_CONNECT_TIMEOUT_S:.0f} s of connecting")
        with enough:
            if not enough.wait_for(lambda: len(results) >= _WARMUP_RESULTS, _CONNECT_TIMEOUT_S):
                raise BenchmarkError(
                    f"only {len(results)} results within {_CONNECT_TIMEOUT_S:.0f} s of connecting: "
                    f"{board.log_tail(_LOG_CHARS, one_line=True)}"
                )
            del results[:]
        before = sensor.health
        stop = threading.Event()
        stop.wait(seconds / 2)
        snapshot_s: float | None = None
        snapshot_bytes = 0
        snapshot_error = ""
        started = time.monotonic()
        try:
            snapshot_bytes = len(sensor.snapshot(timeout=seconds).jpeg)
            snapshot_s = time.monotonic() - started
        except seedcam.SensorError as exc:
            snapshot_error = str(exc)
        stop.wait(max(0.0, seconds / 2 - (time.monotonic() - started)))
        unregister()
        health = sensor.health
        with lock:
            collected = list(results)
    assert before is not None and health is not None  # a health report came before the window
    change = {
        "results_dropped": health.results_dropped - before.results_dropped,
        "frames_dropped": health.frames_dropped - before.frames_dropped,
        "fps": health.fps,
    }
    return _Run(collected, change, snapshot_s, snapshot_bytes, snapshot_error)


def _run_line(workdir: Path, baud: int | None, seconds: float, fps: float, models_dir: Path) -> dict[str, Any]:
    scene = workdir / "scene.toml"
    scene.write_text(SIGNS_AND_PLATE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEEDCAM_FW_")}
    overrides: dict[str, object] = {
        "models.dir": models_dir.resolve(),
        "camera.source": "synthetic",
        "camera.scene": scene,
        "camera.fps": fps,
        "tasks.enabled": "lane,detect,ocr",
    }
    if baud is not None:
        overrides["link.url"] = f"pty?throttle={baud}"
    board = EmulatedBoard(workdir=workdir, overrides=overrides, env=env)
    try:
        board.start().wait_ready(_START_TIMEOUT_S)
        run = _collect(board, seconds)
    except BoardStartError as exc:
        raise BenchmarkError(str(exc)) from exc
    finally:
        board.terminate(_STOP_TIMEOUT_S)
    results = sorted(run.results, key=lambda r: r.frame_id)
    if len(results) < 2:
        raise BenchmarkError(f"{len(results)} results in {seconds:g} s: {board.log_tail(_LOG_CHARS, one_line=True)}")
    span = results[-1].received_monotonic - results[0].received_monotonic
    per_s = (len(results) - 1) / span if span > 0 else 0.0
    size = statistics.median(_wire_sizes(results))
    latencies = [(r.received_monotonic * 1e6 - r.capture_timestamp_us) / 1e3 for r in results]
    return {
        "baud": baud,
        "results": len(results),
        "results_per_s": per_s,
        "bytes_per_result": size,
        "line_load": None if baud is None else per_s * size / (baud / 10),
        "detections_per_result": statistics.median(len(r.detections) for r in results),
        "text_lines_per_result": statistics.median(len(r.text_lines) for r in results),
        "device": run.health,
        "latency_ms": {"p50": _percentile(latencies, 50), "p95": _percentile(latencies, 95)},
        "snapshot_s": run.snapshot_s,
        "snapshot_bytes": run.snapshot_bytes,
        "snapshot_error": run.snapshot_error,
    }


def run_link_benchmark(
    *,
    seconds: float = 8.0,
    fps: float = 30.0,
    models_dir: Path | None = None,
    lines: Sequence[str] = _LINE_NAMES,
    out_json: Path | None = None,
) -> dict[str, Any]:
    """Run the benchmark on each named line and return the report (see the module docstring).

    Raises:
        ValueError: a non-positive duration or fps, or an unknown line name.
        BenchmarkError: a board did not start or delivered too few results.
    """
    known = dict(LINES)
    if seconds <= 0 or fps <= 0 or any(name not in known for name in lines):
        raise ValueError(f"seconds and fps must be > 0 and lines among {', '.join(known)}")
    models_dir = Path(models_dir) if models_dir is not None else Path(DEFAULT_MODELS_DIR)
    report: dict[str, Any] = {"fps_requested": fps, "seconds": seconds, "lines": {}}
    for name in lines:
        log.info("link %s: the default tasks at %g fps for %g s", name, fps, seconds)
        with tempfile.TemporaryDirectory(prefix="seedcam-bench-link-") as tmp:
            report["lines"][name] = _run_line(Path(tmp), known[name], seconds, fps, models_dir)
    try:
        load = list(os.getloadavg())
    except OSError:
        load = []
    report["environment"] = {
        "time_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "loadavg": load,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    if out_json is not None:
        Path(out_json).parent.mkdir(parents=True, exist_ok=True)
        Path(out_json).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return report


def format_link_table(report: dict[str, Any]) -> str:
    """The report as a text table, one row per line."""
    rows = [
        f"{'line':>8} {'results/s':>10} {'B/result':>9} {'load':>6} {'dropped':>8} "
        f"{'p50 ms':>7} {'p95 ms':>7} {'snapshot':>16}"
    ]
    for name, line in report["lines"].items():
        device = line["device"] or {}
        load = "-" if line["line_load"] is None else f"{line['line_load']:.0%}"
        snapshot = (
            f"{line['snapshot_s']:.2f} s {line['snapshot_bytes'] // 1024} KiB"
            if line["snapshot_s"] is not None
            else "failed"
        )
        rows.append(
            f"{name:>8} {line['results_per_s']:>10.1f} {line['bytes_per_result']:>9.0f} {load:>6} "
            f"{device.get('results_dropped', '?'):>8} {line['latency_ms']['p50']:>7.1f} "
            f"{line['latency_ms']['p95']:>7.1f} {snapshot:>16}"
        )
    return "\n".join(rows)

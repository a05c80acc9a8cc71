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
    ``Decoder.feed`` + protobuf parse + ``codec.result_from_pb`` over N typical
    lane-only frames pre-encoded into one byte string (fed in 64 KiB reads, as the
    SDK's reader does); best of three passes.
``line_rate_ratio_921600``
    ``host_decode_results_per_s`` ÷ the results/s a 921600-baud 8N1 UART carries
    (92160 bytes/s ÷ ``lane_only`` bytes).

Entry points: :func:`run_pipeline_benchmark` (returns the report dict, optionally
writes it as JSON) and :func:`format_table` (the report as a text table).
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from seedcam.errors import SensorError

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

_READY_MARK = "link at "
_START_TIMEOUT_S = 60.0  # firmware start (imports TFLite, loads the model) on a loaded machine
_STOP_TIMEOUT_S = 5.0
_CONNECT_TIMEOUT_S = 10.0
_WARMUP_RESULTS = 5  # dropped from the statistics: start-up transients
_READ_CHUNK = 65536  # what the SDK's reader thread asks the transport for


class BenchmarkError(SensorError):
    """The benchmark could not run (firmware did not start, no results, ...)."""


class LaneModelMissing(BenchmarkError, FileNotFoundError):
    """The shipped lane int8 model bundle is not there (or does not load)."""


@dataclass(frozen=True)
class _RunData:
    results: list[Any]  # seedcam.Result
    health: Any  # seedcam.Health | None
    elapsed_s: float
    firmware_returncode: int | None
    firmware_ready_line: str


# --------------------------------------------------------------------------- helpers


def _default_models_dir() -> Path:
    from seedcam_firmware.config import DEFAULT_MODELS_DIR

    return Path(DEFAULT_MODELS_DIR)


def _default_num_threads() -> int:
    from seedcam_firmware.config import RuntimeConfig

    return int(RuntimeConfig().num_threads)


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


def _load_lane_model(models_dir: Path, num_threads: int) -> tuple[Any, Any]:
    """Load the lane int8 bundle with the firmware's runtime: (manifest, Model).

    Raises:
        LaneModelMissing: no bundle, a broken bundle, or a model that does not load.
    """
    from seedcam.errors import BundleError
    from seedcam_firmware.errors import FirmwareError
    from seedcam_firmware.inference import Model, load_manifest

    manifest_path = models_dir / "lane" / "manifest.json"
    if not manifest_path.is_file():
        raise LaneModelMissing(
            f"the pipeline benchmark needs the shipped lane int8 model, but {manifest_path} does not exist "
            "(train and export the lane model first, or pass the folder holding lane/manifest.json)"
        )
    try:
        manifest = load_manifest(manifest_path, precision="int8")
        model = Model(
            manifest.file,
            input_shape=manifest.input_shape,
            outputs=manifest.outputs,
            num_threads=num_threads,
        )
    except (BundleError, FirmwareError) as exc:
        raise LaneModelMissing(f"lane int8 model bundle in {manifest_path.parent} is not usable: {exc}") from exc
    return manifest, model


def _model_input(manifest: Any, model: Any) -> tuple[Any, Any]:
    """A synthetic camera frame, preprocessed: (float input, input quantized to the tensor's dtype)."""

    from seedcam_firmware.camera.synthetic import SyntheticCamera
    from seedcam_firmware.inference import preprocess

    camera = SyntheticCamera(seed=0)
    try:
        frame = camera.read(timeout=5.0)
    finally:
        camera.close()
    x = preprocess(frame.image, manifest.input)
    xq = model.quantize_input(x)
    return x, xq


def _time_bare_invokes(interp: Any, xq: Any, count: int) -> list[float]:
    """``count`` bare interpreter invokes (``set_tensor`` + ``invoke``); seconds each.

    ``interp`` comes from :func:`seedcam_firmware.inference.load_interpreter` (the
    firmware's one place that creates interpreters), without a signature runner.
    """
    index = interp.get_input_details()[0]["index"]
    interp.set_tensor(index, xq)
    interp.invoke()  # warm-up: the first invoke primes the kernels' caches
    samples: list[float] = []
    for _ in range(count):
        start = time.perf_counter()
        interp.set_tensor(index, xq)
        interp.invoke()
        samples.append(time.perf_counter() - start)
    return samples


def _time_runtime_invokes(model: Any, x: Any, count: int) -> list[float]:
    """``count`` calls of ``Model.invoke`` with the float input, as the lane task makes them."""
    model.invoke(x)
    samples: list[float] = []
    for _ in range(count):
        start = time.perf_counter()
        model.invoke(x)
        samples.append(time.perf_counter() - start)
    return samples


# --------------------------------------------------------------------------- firmware run


class _Firmware:
    """``seedcam-firmware run`` as a child process; :meth:`stop` always terminates it."""

    def __init__(self, workdir: Path, fps: float, models_dir: Path, num_threads: int) -> None:
        self.link = workdir / "sensor"
        self.log_path = workdir / "firmware.log"
        self._env = {k: v for k, v in os.environ.items() if not k.startswith("SEEDCAM_FW_")}
        self._env["SEEDCAM_FW_MODELS_DIR"] = str(models_dir.resolve())
        self._env["SEEDCAM_FW_RUNTIME_NUM_THREADS"] = str(num_threads)
        self._env["PYTHONUNBUFFERED"] = "1"
        self._argv = [
            sys.executable, "-m", "seedcam_firmware.cli", "run",
            "--pty-link", str(self.link),
            "--camera", "synthetic", "--fps", f"{fps:g}", "--tasks", "lane",
        ]  # fmt: skip
        self._proc: subprocess.Popen[str] | None = None
        self._log: TextIO | None = None
        self._ready = threading.Event()
        self.ready_line = ""

    def start(self, timeout: float = _START_TIMEOUT_S) -> None:
        """Start and wait (bounded) for the ready line.

        Raises:
            BenchmarkError: the firmware exited or did not get ready in time.
        """
        self._log = self.log_path.open("w", encoding="utf-8")
        self._proc = subprocess.Popen(
            self._argv,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env=self._env,
            start_new_session=True,
        )
        threading.Thread(target=self._pump_stdout, name="bench-fw-stdout", daemon=True).start()
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.1):
            if self._proc.poll() is not None:
                raise BenchmarkError(
                    f"seedcam-firmware exited with code {self._proc.returncode} before it was ready: {self.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise BenchmarkError(f"seedcam-firmware not ready within {timeout:.0f} s: {self.log_tail()}")

    def _pump_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            if _READY_MARK in line and not self._ready.is_set():
                self.ready_line = line.strip()
                self._ready.set()

    def log_tail(self, chars: int = 800) -> str:
        """The end of the firmware's stderr, on one line."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no firmware log)"
        return " | ".join(text[-chars:].strip().splitlines()) or "(firmware log empty)"

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after a bounded wait. Idempotent; returns the exit code."""
        proc = self._proc
        if proc is None:
            if self._log is not None:
                self._log.close()
                self._log = None
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                log.warning(
                    "firmware did not stop within %.0f s of SIGTERM; killing it",
                    _STOP_TIMEOUT_S,
                )
                proc.kill()
                try:
                    proc.wait(_STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    log.error(
                        "firmware pid %d survived SIGKILL for %.0f s",
                        proc.pid,
                        _STOP_TIMEOUT_S,
                    )
        if proc.stdout is not None:
            proc.stdout.close()
        if self._log is not None:
            self._log.close()
            self._log = None
        return proc.returncode


def _stream(firmware: _Firmware, seconds: float) -> tuple[list[Any], Any, float]:
    """Connect with the public SDK and collect results for ``seconds`` (plus warm-up)."""
    import seedcam

    results: list[Any] = []
    lock = threading.Lock()

    def collect(result: Any) -> None:
        with lock:
            results.append(result)

    with seedcam.open(str(firmware.link), timeout=_CONNECT_TIMEOUT_S, reconnect=False) as sensor:
        unregister = sensor.on_result(collect)
        # warm-up: wait (bounded) for the first results before the clock starts
        deadline = time.monotonic() + _CONNECT_TIMEOUT_S
        while time.monotonic() < deadline:
            with lock:
                if len(results) >= _WARMUP_RESULTS:
                    break
            time.sleep(0.05)
        with lock:
            if len(results) < _WARMUP_RESULTS:
                raise BenchmarkError(
                    f"only {len(results)} results within {_CONNECT_TIMEOUT_S:.0f} s of connecting: "
                    f"{firmware.log_tail()}"
                )
            del results[:]
        start = time.monotonic()
        time.sleep(seconds)
        elapsed = time.monotonic() - start
        unregister()
        health = sensor.health
        with lock:
            collected = list(results)
    return collected, health, elapsed


def _run_firmware(
    workdir: Path,
    seconds: float,
    fps: float,
    models_dir: Path,
    num_threads: int,
    progress: bool,
) -> _RunData:
    firmware = _Firmware(workdir, fps, models_dir, num_threads)
    returncode: int | None = None
    try:
        _note(
            progress,
            "starting seedcam-firmware (pty, synthetic camera, %g fps, lane)",
            fps,
        )
        firmware.start()
        _note(
            progress,
            "firmware ready: %s; streaming for %.1f s",
            firmware.ready_line,
            seconds,
        )
        results, health, elapsed = _stream(firmware, seconds)
    except Exception as exc:
        if isinstance(exc, BenchmarkError):
            raise
        raise BenchmarkError(f"streaming from the firmware failed: {exc}; firmware log: {firmware.log_tail()}") from exc
    finally:
        returncode = firmware.stop()
    if not results:
        raise BenchmarkError(f"no results in {seconds:.1f} s of streaming: {firmware.log_tail()}")
    missing_lane = sum(1 for r in results if "task:lane" not in r.timings_us)
    if missing_lane:
        raise BenchmarkError(
            f"{missing_lane} of {len(results)} results carry no task:lane timing (lane task not running?)"
        )
    return _RunData(results, health, elapsed, returncode, firmware.ready_line)


# --------------------------------------------------------------------------- frames and decoding


def _wire_bytes(result: Any, seq: int = 0) -> bytes:
    """The complete link frame (delimiter included) the firmware sends for ``result``."""
    from seedcam.protocol import codec
    from seedcam.protocol.framing import Channel, Frame, encode_frame

    payload = codec.result_to_pb(result).SerializeToString()
    return encode_frame(Frame(Channel.RESULT, seq % 65536, payload))


def _typical(results: Sequence[Any]) -> Any:
    """The result whose wire size is the median of the run's."""
    sized = sorted(results, key=lambda r: len(_wire_bytes(r, r.frame_id)))
    return sized[len(sized) // 2]


def _with_detections_and_text(result: Any) -> Any:
    """``result`` plus two detections and one text line (what detect + OCR would add)."""
    from seedcam.types import Box, Detection, TextLine

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


def _decode_rate(template: Any, count: int, passes: int = 3) -> tuple[float, int]:
    """Results/s for feed + parse + result_from_pb over ``count`` pre-encoded frames (best pass)."""
    from seedcam._proto import seedcam_pb2 as pb
    from seedcam.protocol import codec
    from seedcam.protocol.framing import Channel, Decoder

    step_us = 33_333
    blob = b"".join(
        _wire_bytes(
            replace(
                template,
                frame_id=template.frame_id + i,
                capture_timestamp_us=template.capture_timestamp_us + i * step_us,
                send_timestamp_us=template.send_timestamp_us + i * step_us,
            ),
            seq=i,
        )
        for i in range(count)
    )
    best = float("inf")
    for _ in range(passes):
        decoder = Decoder()
        decoded = 0
        start = time.perf_counter()
        for offset in range(0, len(blob), _READ_CHUNK):
            for frame in decoder.feed(blob[offset : offset + _READ_CHUNK]):
                if frame.channel == Channel.RESULT:
                    codec.result_from_pb(
                        codec.parse(pb.Result, frame.payload),
                        received_monotonic=time.monotonic(),
                    )
                    decoded += 1
        elapsed = time.perf_counter() - start
        if decoded != count:
            raise BenchmarkError(f"decoder returned {decoded} of {count} results (counters {decoder.counters})")
        best = min(best, elapsed)
    return count / best, len(blob)


# --------------------------------------------------------------------------- report


def _environment(interp: Any, manifest: Any, num_threads: int) -> dict[str, Any]:
    from seedcam_firmware import __version__ as firmware_version

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
    models_dir = Path(models_dir) if models_dir is not None else _default_models_dir()
    threads = num_threads if num_threads is not None else _default_num_threads()

    manifest, model = _load_lane_model(models_dir, threads)
    x, xq = _model_input(manifest, model)
    from seedcam_firmware.inference import load_interpreter

    interp = load_interpreter(manifest.file, num_threads=threads)
    _note(
        progress,
        "bare invoke of %s (%d threads): %d samples before the run",
        manifest.id,
        threads,
        invokes // 2,
    )
    bare = _time_bare_invokes(interp, xq, invokes // 2)
    runtime_invoke = _time_runtime_invokes(model, x, max(10, invokes // 4))

    with tempfile.TemporaryDirectory(prefix="seedcam-bench-") as tmp:
        run = _run_firmware(Path(tmp), seconds, fps, models_dir, threads, progress)

    _note(progress, "bare invoke: %d samples after the run", invokes - invokes // 2)
    bare += _time_bare_invokes(interp, xq, invokes - invokes // 2)
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

    typical = _typical(results)
    lane_only = len(_wire_bytes(typical, typical.frame_id))
    rich = len(_wire_bytes(_with_detections_and_text(typical), typical.frame_id))
    _note(progress, "host decode: %d frames of %d bytes", decode_frames, lane_only)
    decode_rate, blob_bytes = _decode_rate(typical, decode_frames)
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
        "host_decode_results_per_s": decode_rate,
        "host_decode_frames": decode_frames,
        "host_decode_bytes": blob_bytes,
        "line_results_per_s_921600": line_results_per_s,
        "line_rate_ratio_921600": decode_rate / line_results_per_s,
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


def format_table(report: Mapping[str, Any]) -> str:
    """The report as an aligned text table (figure, value, unit, note)."""
    lat = report["latency_ms"]
    frames = report["result_frame_bytes"]
    health = report.get("device_health") or {}
    env = report.get("environment", {})
    rows: list[tuple[str, str, str, str]] = [
        (
            "glue overhead",
            f"{report['glue_overhead_ratio']:.2f}",
            "x",
            "per-frame task time / bare invoke, same run",
        ),
        (
            "bare model invoke",
            f"{report['bare_invoke_ms']:.3f}",
            "ms",
            f"median of {report.get('bare_invoke_samples', '?')}, {env.get('num_threads', '?')} threads",
        ),
        (
            "per-frame time",
            f"{report['per_frame_ms']:.3f}",
            "ms",
            "median task:lane in the firmware",
        ),
        (
            "capture->result",
            f"{report['capture_to_result_ms']:.3f}",
            "ms",
            "median in the firmware: capture stamp to Result built",
        ),
        (
            "result->host",
            f"{report['result_to_host_ms']:.3f}",
            "ms",
            "median: send queue, encode, pty, host decode",
        ),
        (
            "capture->host p50",
            f"{lat['p50']:.2f}",
            "ms",
            f"{report['results']} results over a pty",
        ),
        ("capture->host p95", f"{lat['p95']:.2f}", "ms", f"max {lat['max']:.2f} ms"),
        (
            "achieved fps",
            f"{report['fps_achieved']:.1f}",
            "1/s",
            f"requested {report['fps_requested']:g}",
        ),
        (
            "frames dropped",
            str(health.get("frames_dropped", "n/a")),
            "frames",
            f"device health; {health.get('frames_captured', '?')} captured, "
            f"{report['frames_missing_at_host']} missing at host",
        ),
        (
            "Result frame, lane only",
            str(frames["lane_only"]),
            "bytes",
            "on the wire, framing included",
        ),
        (
            "Result frame, lane+2det+1text",
            str(frames["lane_2det_1text"]),
            "bytes",
            "synthetic",
        ),
        (
            "host decode rate",
            f"{report['host_decode_results_per_s']:,.0f}",
            "results/s",
            "feed + parse + result_from_pb",
        ),
        (
            "vs 921600-baud line",
            f"{report['line_rate_ratio_921600']:.1f}",
            "x",
            f"host decodes {report['line_rate_ratio_921600']:.0f}x faster than the line delivers "
            f"({report['line_results_per_s_921600']:.0f} results/s)",
        ),
    ]
    headers = ("figure", "value", "unit", "note")
    widths = [max(len(headers[i]), *(len(r[i]) for r in rows)) for i in range(3)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            (
                cells[0].ljust(widths[0]),
                cells[1].rjust(widths[1]),
                cells[2].ljust(widths[2]),
                cells[3],
            )
        ).rstrip()

    out = [line(headers), line(tuple("-" * w for w in widths) + ("-" * 4,))]
    out += [line(r) for r in rows]
    if env:
        out.append(
            f"({env.get('cpu_count')} CPUs, load {', '.join(f'{v:.1f}' for v in env.get('loadavg', []))}, "
            f"Python {env.get('python')}, {env.get('tflite_runtime')}, model {env.get('model_id')}, "
            f"{env.get('time_utc')})"
        )
    return "\n".join(out)

"""``seedcam-tools bench record``: the SDK's recorder on the emulated board for minutes, then the file read back.

The emulated board runs the default tasks (lane, detect, OCR) at ``fps`` on the
scene of three signs and a plate (:data:`seedcam_tools.bench_link.SIGNS_AND_PLATE`)
over a bare pty; the host opens it with the public SDK, asks for previews at
``preview_fps`` and records with :class:`seedcam.recording.Recorder` into an MCAP
file for ``minutes``. The host also keeps the frame id of every result it
decoded, so the file can be checked against what was live. Reported:

``board``
    The device's Health counters from the last report before the recording to the
    first one after it (a window a little wider than the recording):
    ``frames_processed`` (a result for each), ``frames_dropped`` (frames that got no
    result: the pipeline's latest-wins queues plus the link's drops) and
    ``results_dropped`` (of those, results the link could not send); and the frame ids
    of the first and last result recorded.
``recording``
    ``results`` recorded, ``dropped`` by the recorder (its queue was full: the disk did
    not keep up), ``previews``, ``health`` reports and ``logs`` recorded, the file's
    size, ``mb_per_min`` (MB = 10^6 bytes), ``write_kib_per_s`` and the writer queue's
    ``queue_high_water`` (of ``queue_capacity``).
``accounting``
    ``ids_missing``: frame ids between the first and the last recorded that are not in
    the file; ``explained_by_device``: the board's ``frames_dropped`` over its window;
    ``unexplained``: what is left.
``read_back``
    The file read with :class:`seedcam.recording.RecordingReader`: its results,
    whether they are every result the host decoded while recording, in the same order
    (``identical``), ``truncated`` (it must not be) and how long reading took.

The verdict passes when the recorder dropped nothing, no loss is unexplained and the
read-back is identical and complete.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import seedcam
from seedcam._proto import seedcam_pb2 as pb
from seedcam.recording import Recorder, RecordingReader, topics
from seedcam.types import Health, Result
from seedcam_firmware.config import DEFAULT_MODELS_DIR
from seedcam_firmware.launcher import BoardStartError, EmulatedBoard
from seedcam_tools.bench_errors import BenchmarkError
from seedcam_tools.bench_link import SIGNS_AND_PLATE

__all__ = ["format_record_report", "run_record_benchmark"]

_START_TIMEOUT_S = 90.0
_CONNECT_TIMEOUT_S = 15.0
_HEALTH_INTERVAL_S = 1.0
_HEALTH_WAIT_S = 5.0
_WARMUP_RESULTS = 10
_STOP_TIMEOUT_S = 10.0
_LOG_CHARS = 800
_PROGRESS_S = 30.0


class _Watch:
    """What the host sees live: the frame id of every result, and the newest health report."""

    def __init__(self) -> None:
        self.frame_ids: list[int] = []
        self.health: Health | None = None
        self._changed = threading.Condition()

    def result(self, result: Result) -> None:
        with self._changed:
            self.frame_ids.append(result.frame_id)
            self._changed.notify_all()

    def report(self, health: Health) -> None:
        with self._changed:
            self.health = health
            self._changed.notify_all()

    def wait_results(self, count: int, timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: len(self.frame_ids) >= count, timeout)

    def next_health(self, timeout: float) -> Health:
        """The first health report that arrives from now on."""
        with self._changed:
            before = self.health
            if not self._changed.wait_for(lambda: self.health is not before, timeout):
                raise BenchmarkError(f"no health report within {timeout:g} s")
            assert self.health is not None
            return self.health


def _board(workdir: Path, fps: float, models_dir: Path) -> EmulatedBoard:
    scene = workdir / "scene.toml"
    scene.write_text(SIGNS_AND_PLATE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEEDCAM_FW_")}
    overrides: dict[str, object] = {
        "models.dir": models_dir.resolve(),
        "camera.source": "synthetic",
        "camera.scene": scene,
        "camera.fps": fps,
        "tasks.enabled": "lane,detect,ocr",
        "link.health_interval_s": _HEALTH_INTERVAL_S,
    }
    return EmulatedBoard(workdir=workdir, overrides=overrides, env=env)


def _record(
    sensor: seedcam.Sensor, path: Path, seconds: float, preview_fps: float, note: Callable[[str], None]
) -> dict[str, Any]:
    """Record for ``seconds``; the live frame ids, the recorder's stats and the board's counters around it."""
    watch = _Watch()
    sensor.on_health(watch.report)
    unregister = sensor.on_result(watch.result)
    if not watch.wait_results(_WARMUP_RESULTS, _CONNECT_TIMEOUT_S):
        raise BenchmarkError(f"only {len(watch.frame_ids)} results within {_CONNECT_TIMEOUT_S:.0f} s of connecting")
    before = watch.next_health(_HEALTH_WAIT_S)
    recorder = Recorder(sensor, path)
    recorder.start()
    try:
        sensor.start_preview(preview_fps)
        started = time.monotonic()
        deadline = started + seconds
        next_note = started + _PROGRESS_S
        while (now := time.monotonic()) < deadline:
            if sensor.session.wait_closed(min(deadline, next_note) - now):
                raise BenchmarkError("the link closed during the recording")
            if time.monotonic() >= next_note:
                stats = recorder.stats
                note(
                    f"  {stats.seconds:5.0f} s: {stats.results} results, {stats.previews} previews, "
                    f"{stats.dropped} dropped, {stats.bytes_written / 1e6:.1f} MB"
                )
                next_note += _PROGRESS_S
        sensor.stop_preview()
    finally:
        stats = recorder.stop()
    after = watch.next_health(_HEALTH_WAIT_S)
    unregister()
    return {"stats": stats, "capacity": recorder.queue_capacity, "live": watch.frame_ids, "health": (before, after)}


def _read_back(path: Path) -> dict[str, Any]:
    reader = RecordingReader(path)
    started = time.monotonic()
    frame_ids: list[int] = []
    counts = {topics.RESULT: 0, topics.PREVIEW: 0, topics.HEALTH: 0}
    for item in reader.messages([topics.RESULT, topics.PREVIEW, topics.HEALTH]):
        counts[item.topic] += 1
        if isinstance(item.message, pb.Result):
            frame_ids.append(item.message.frame_id)
    return {
        "frame_ids": frame_ids,
        "previews": counts[topics.PREVIEW],
        "health": counts[topics.HEALTH],
        "truncated": reader.truncated,
        "truncation": reader.truncation,
        "seconds": round(time.monotonic() - started, 2),
    }


def _contains_in_order(live: list[int], recorded: list[int]) -> bool:
    """``recorded`` is an unbroken run of ``live`` (the recorder listened inside the host's window)."""
    if not recorded:
        return False
    try:
        start = live.index(recorded[0])
    except ValueError:
        return False
    return live[start : start + len(recorded)] == recorded


def _report(run: dict[str, Any], back: dict[str, Any], path: Path) -> dict[str, Any]:
    stats = run["stats"]
    before, after = run["health"]
    ids: list[int] = back["frame_ids"]
    if not ids:
        raise BenchmarkError("the recording holds no result")
    size = path.stat().st_size
    device_drops = after.frames_dropped - before.frames_dropped
    missing = ids[-1] - ids[0] + 1 - len(set(ids))
    identical = _contains_in_order(run["live"], ids) and len(ids) == stats.results
    unexplained = max(0, missing - device_drops)
    minutes = stats.seconds / 60
    return {
        "board": {
            "frames_processed": after.frames_processed - before.frames_processed,
            "frames_dropped": device_drops,
            "results_dropped": after.results_dropped - before.results_dropped,
            "window_s": round(after.uptime_s - before.uptime_s, 1),
            "first_frame_id": ids[0],
            "last_frame_id": ids[-1],
            "fps": after.fps,
        },
        "recording": {
            "seconds": round(stats.seconds, 1),
            "results": stats.results,
            "results_per_s": round(stats.results / stats.seconds, 2) if stats.seconds > 0 else 0.0,
            "dropped": stats.dropped,
            "previews": stats.previews,
            "health": stats.health,
            "logs": stats.logs,
            "messages": stats.messages,
            "file_bytes": size,
            "mb_per_min": round(size / 1e6 / minutes, 2) if minutes > 0 else 0.0,
            "write_kib_per_s": round(size / 1024 / stats.seconds, 1) if stats.seconds > 0 else 0.0,
            "queue_high_water": stats.queue_high_water,
            "queue_capacity": run["capacity"],
            "error": stats.error,
        },
        "accounting": {"ids_missing": missing, "explained_by_device": device_drops, "unexplained": unexplained},
        "read_back": {
            "results": len(ids),
            "previews": back["previews"],
            "health": back["health"],
            "identical": identical,
            "truncated": back["truncated"],
            "truncation": back["truncation"],
            "seconds": back["seconds"],
        },
        "passed": stats.dropped == 0 and not stats.error and unexplained == 0 and identical and not back["truncated"],
    }


def run_record_benchmark(
    *,
    minutes: float = 10.0,
    fps: float = 30.0,
    preview_fps: float = 5.0,
    models_dir: Path | None = None,
    out_json: Path | None = None,
    note: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Record the emulated board for ``minutes`` and read the file back; returns the report (module docstring).

    Raises:
        ValueError: ``minutes`` or ``fps`` not above 0, ``preview_fps`` not in (0, 60].
        BenchmarkError: the board did not start, sent too few results, or the link closed.
        SensorError: the link failed for good.
    """
    if minutes <= 0 or fps <= 0 or not 0 < preview_fps <= 60:
        raise ValueError("--minutes and --fps must be above 0 and --preview-fps in (0, 60]")
    models_dir = Path(models_dir) if models_dir is not None else Path(DEFAULT_MODELS_DIR)
    with tempfile.TemporaryDirectory(prefix="seedcam-bench-record-") as tmp:
        workdir = Path(tmp)
        path = workdir / "bench.mcap"
        board = _board(workdir, fps, models_dir)
        note(f"record: the default tasks at {fps:g} fps, previews at {preview_fps:g} fps, for {minutes:g} min")
        try:
            board.start().wait_ready(_START_TIMEOUT_S)
            with seedcam.open(board.link, timeout=_CONNECT_TIMEOUT_S, reconnect=False) as sensor:
                run = _record(sensor, path, minutes * 60, preview_fps, note)
        except BoardStartError as exc:
            raise BenchmarkError(str(exc)) from exc
        except BenchmarkError as exc:
            raise BenchmarkError(f"{exc}: {board.log_tail(_LOG_CHARS, one_line=True)}") from exc
        finally:
            board.terminate(_STOP_TIMEOUT_S)
        report = _report(run, _read_back(path), path)
    report.update(minutes=minutes, fps_requested=fps, preview_fps_requested=preview_fps, environment=_environment())
    if out_json is not None:
        Path(out_json).parent.mkdir(parents=True, exist_ok=True)
        Path(out_json).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return report


def _environment() -> dict[str, Any]:
    try:
        load = list(os.getloadavg())
    except OSError:
        load = []
    return {
        "time_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "loadavg": load,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def format_record_report(report: dict[str, Any]) -> str:
    """The report as a two-column table, ending with the verdict."""
    board, rec, acc, back = report["board"], report["recording"], report["accounting"], report["read_back"]
    rows = [
        ("recorded", f"{rec['seconds']:g} s at {report['fps_requested']:g} fps, previews at "
                     f"{report['preview_fps_requested']:g} fps"),
        ("board: results made", f"{board['frames_processed']} (frames_processed over {board['window_s']:g} s)"),
        ("board: frames dropped", f"{board['frames_dropped']} ({board['results_dropped']} of them by the link)"),
        ("board: frame ids", f"{board['first_frame_id']} .. {board['last_frame_id']}"),
        ("results recorded", f"{rec['results']} ({rec['results_per_s']:g}/s)"),
        ("dropped by the recorder", str(rec["dropped"])),
        ("ids missing in the file", f"{acc['ids_missing']} (explained by the board: {acc['explained_by_device']}, "
                                    f"unexplained: {acc['unexplained']})"),
        ("previews recorded", str(rec["previews"])),
        ("health / logs recorded", f"{rec['health']} / {rec['logs']}"),
        ("file size", f"{rec['file_bytes'] / 1e6:.2f} MB"),
        ("MB per minute", f"{rec['mb_per_min']:.2f}"),
        ("write rate", f"{rec['write_kib_per_s']:.1f} KiB/s"),
        ("queue high-water", f"{rec['queue_high_water']} of {rec['queue_capacity']}"),
        ("read back", f"{back['results']} results, {back['previews']} previews in {back['seconds']:g} s; "
                      f"{'every result in order' if back['identical'] else 'DIFFERS from the live stream'}"
                      f"{', truncated: ' + back['truncation'] if back['truncated'] else ''}"),
    ]  # fmt: skip
    width = max(len(name) for name, _ in rows)
    lines = [f"{name:<{width}}  {value}" for name, value in rows]
    lines.append("verdict: " + ("PASS" if report["passed"] else "FAIL"))
    return "\n".join(lines)

"""``seedcam-tools bench soak``: the emulated board under a steady host for minutes, watched for leaks and losses.

Starts the real firmware (emulated board, default tasks, results streaming) and a
host that reads every result and, every ``call_interval_s``, makes the calls a
client makes (``info``, ``config_get``, ``snapshot``, ``ping``). Every
``sample_interval_s`` it samples the firmware process's resident memory and
thread count from ``/proc``. At the end it reports:

* memory: RSS after the warm-up, at the end, its growth, and the peak;
* threads: after the warm-up and at the end (a steady board keeps the same number);
* losses: frame ids the host never saw, and how many of them the counters
  explain (frames the device dropped, results overwritten in the host's queue,
  frames the host's decoder saw lost on the wire); the rest are *unexplained*.

The verdict passes when memory grew by at most ``max(rss_growth_mb, 5 %)``, the
thread count is unchanged and no loss is unexplained. Counters are read from the
last health report, which trails the last result by up to one health interval:
losses within that window are not called unexplained.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import seedcam
from seedcam.errors import SensorError
from seedcam.types import Health, Result
from seedcam_firmware.launcher import emulated_board

from .bench_errors import BenchmarkError

__all__ = ["ProcessSample", "SoakReport", "format_soak_report", "read_process_sample", "run_soak"]

_START_TIMEOUT_S = 60.0
_HEALTH_INTERVAL_S = 1.0


@dataclass(frozen=True)
class ProcessSample:
    """One look at a process: seconds since the soak began, resident memory, threads."""

    t_s: float
    rss_mb: float
    threads: int


@dataclass(frozen=True)
class SoakReport:
    """What :func:`run_soak` measured; see the module docstring."""

    seconds: float
    warmup_s: float
    results: int
    calls: int
    call_failures: int
    rss_after_warmup_mb: float
    rss_end_mb: float
    rss_peak_mb: float
    rss_growth_mb: float
    threads_after_warmup: int
    threads_end: int
    frames_missing: int
    explained_by_device_drops: int
    explained_by_host_queue: int
    explained_by_link: int
    unexplained_losses: int
    rss_growth_limit_mb: float
    passed: bool
    samples: tuple[ProcessSample, ...]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def read_process_sample(pid: int, t_s: float) -> ProcessSample:
    """Resident memory and threads of process ``pid`` from ``/proc/<pid>/status``.

    Raises:
        BenchmarkError: the process is gone or ``/proc`` is unreadable.
    """
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError as exc:
        raise BenchmarkError(f"cannot read the firmware process's status ({exc})") from exc
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    try:
        rss_kb = int(fields["VmRSS"].split()[0])
        threads = int(fields["Threads"])
    except (KeyError, ValueError, IndexError) as exc:
        raise BenchmarkError(f"/proc/{pid}/status has no VmRSS or Threads line") from exc
    return ProcessSample(t_s, rss_kb / 1024.0, threads)


class _FrameTally:
    """Frame ids seen by the host: how many, and how many the device numbered but the host never saw."""

    def __init__(self) -> None:
        self.first: int | None = None
        self.last: int | None = None
        self.seen = 0

    def add(self, result: Result) -> None:
        if self.first is None:
            self.first = result.frame_id
        self.last = result.frame_id
        self.seen += 1

    @property
    def missing(self) -> int:
        if self.first is None or self.last is None:
            return 0
        return max(0, self.last - self.first + 1 - self.seen)


def _client_calls(sensor: seedcam.Sensor) -> list[Callable[[], object]]:
    return [
        lambda: sensor.info(),
        lambda: sensor.config_get("pipeline.jpeg_quality"),
        lambda: sensor.snapshot(),
        lambda: sensor.ping(b"soak"),
    ]


def run_soak(
    seconds: float = 600.0,
    *,
    fps: float = 30.0,
    warmup_s: float | None = None,
    call_interval_s: float = 2.0,
    sample_interval_s: float = 5.0,
    rss_growth_mb: float = 10.0,
    out_json: Path | None = None,
    note: Callable[[str], None] = lambda _: None,
) -> SoakReport:
    """Soak the emulated board for ``seconds``; returns the report (also written to ``out_json``).

    ``warmup_s`` (default: a tenth of the run, at least 5 s) is left out of the
    memory and thread comparison: models load and caches fill then.

    Raises:
        BoardStartError: the firmware did not start.
        BenchmarkError: the run is too short to compare, or the process could not be watched.
        SensorError: the link failed for good.
    """
    warmup = max(5.0, seconds / 10) if warmup_s is None else warmup_s
    if seconds <= warmup:
        raise BenchmarkError(f"a soak of {seconds:g} s is not longer than its warm-up of {warmup:g} s")
    with tempfile.TemporaryDirectory(prefix="seedcam-soak-") as tmp:
        overrides = {"link.health_interval_s": _HEALTH_INTERVAL_S}
        with emulated_board("--fps", f"{fps:g}", workdir=tmp, overrides=overrides, timeout=_START_TIMEOUT_S) as board:
            if board.proc is None:
                raise BenchmarkError("the emulated board has no process to watch")
            pid = board.proc.pid
            with seedcam.open(board.link, timeout=10) as sensor:
                report = _soak(sensor, pid, seconds, warmup, call_interval_s, sample_interval_s, rss_growth_mb, note)
    if out_json is not None:
        out_json.write_text(json.dumps(report.to_json(), indent=2) + "\n")
    return report


def _soak(
    sensor: seedcam.Sensor,
    pid: int,
    seconds: float,
    warmup: float,
    call_interval_s: float,
    sample_interval_s: float,
    rss_growth_mb: float,
    note: Callable[[str], None],
) -> SoakReport:
    tally = _FrameTally()
    calls, failures = 0, 0
    samples: list[ProcessSample] = []
    start = time.monotonic()
    next_call, next_sample = start + call_interval_s, start
    first_health: Health | None = None
    stats_start = sensor.stats
    for result in sensor.results(timeout=5.0):
        now = time.monotonic()
        tally.add(result)
        if first_health is None:
            first_health = sensor.health
            stats_start = sensor.stats
        if now >= next_sample:
            samples.append(read_process_sample(pid, now - start))
            next_sample += sample_interval_s
            if len(samples) % 12 == 0:
                last = samples[-1]
                note(f"  {last.t_s:5.0f} s: RSS {last.rss_mb:.1f} MB, {last.threads} threads, {tally.seen} results")
        if now >= next_call:
            for call in _client_calls(sensor):
                calls += 1
                try:
                    call()
                except SensorError:
                    failures += 1
            next_call += call_interval_s
        if now - start >= seconds:
            break
    samples.append(read_process_sample(pid, time.monotonic() - start))
    return _report(sensor, tally, first_health, stats_start, samples, warmup, calls, failures, rss_growth_mb)


def _report(
    sensor: seedcam.Sensor,
    tally: _FrameTally,
    first_health: Health | None,
    stats_start: Any,
    samples: list[ProcessSample],
    warmup: float,
    calls: int,
    failures: int,
    rss_growth_mb: float,
) -> SoakReport:
    last_health = sensor.health
    stats = sensor.stats
    if first_health is None or last_health is None:
        raise BenchmarkError("no health report arrived during the soak")
    steady = [s for s in samples if s.t_s >= warmup] or samples[-1:]
    base, end = steady[0], samples[-1]
    device_drops = last_health.frames_dropped - first_health.frames_dropped
    host_queue = stats.results_dropped - stats_start.results_dropped
    link_lost = stats.link.seq_lost - stats_start.link.seq_lost
    explained = device_drops + host_queue + link_lost
    window = round(last_health.fps * _HEALTH_INTERVAL_S) + 1  # the last report trails the last result
    unexplained = max(0, tally.missing - explained - window)
    growth = end.rss_mb - base.rss_mb
    limit = max(rss_growth_mb, 0.05 * base.rss_mb)
    return SoakReport(
        seconds=round(end.t_s, 1),
        warmup_s=warmup,
        results=tally.seen,
        calls=calls,
        call_failures=failures,
        rss_after_warmup_mb=round(base.rss_mb, 1),
        rss_end_mb=round(end.rss_mb, 1),
        rss_peak_mb=round(max(s.rss_mb for s in samples), 1),
        rss_growth_mb=round(growth, 1),
        threads_after_warmup=base.threads,
        threads_end=end.threads,
        frames_missing=tally.missing,
        explained_by_device_drops=device_drops,
        explained_by_host_queue=host_queue,
        explained_by_link=link_lost,
        unexplained_losses=unexplained,
        rss_growth_limit_mb=round(limit, 1),
        passed=growth <= limit and end.threads == base.threads and unexplained == 0 and failures == 0,
        samples=tuple(samples),
    )


def format_soak_report(report: SoakReport) -> str:
    """The report as a few lines of text, ending with the verdict."""
    r = report
    return "\n".join(
        [
            f"soak of {r.seconds:g} s ({r.warmup_s:g} s warm-up): {r.results} results, "
            f"{r.calls} calls ({r.call_failures} failed)",
            f"memory: RSS {r.rss_after_warmup_mb:.1f} MB after the warm-up, {r.rss_end_mb:.1f} MB at the end "
            f"({r.rss_growth_mb:+.1f} MB, limit {r.rss_growth_limit_mb:.1f} MB), peak {r.rss_peak_mb:.1f} MB",
            f"threads: {r.threads_after_warmup} after the warm-up, {r.threads_end} at the end",
            f"losses: {r.frames_missing} frame ids not seen; explained: {r.explained_by_device_drops} dropped "
            f"on the device, {r.explained_by_host_queue} overwritten in the host queue, "
            f"{r.explained_by_link} lost on the link; unexplained: {r.unexplained_losses}",
            "verdict: " + ("PASS" if r.passed else "FAIL"),
        ]
    )

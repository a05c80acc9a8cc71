"""Figures of a simulated drive: lateral error statistics, lane departures, lap times and stop events."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Sample", "StopEvent", "RunMetrics", "error_stats", "percentile", "summarise", "format_table"]

#: a full stop: slower than this
STOPPED_MPS = 0.005
#: error statistics count samples while the car moves faster than this
MOVING_MPS = 0.05


@dataclass(frozen=True)
class Sample:
    """The car at one instant (every physics tick that is logged).

    Attributes:
        t: seconds since the start of the run.
        x, y: the front axle's centre (the camera's floor point), world frame.
        s_total: distance along the track since the start (unwrapped), front axle.
        error_m: lateral error of the front axle from the lane centre (left +).
        rear_error_m: the same for the rear axle.
        speed_mps: the car's speed.
        reason: the controller's reason for its latest command.
    """

    t: float
    x: float
    y: float
    s_total: float
    error_m: float
    rear_error_m: float
    speed_mps: float
    reason: str


@dataclass(frozen=True)
class StopEvent:
    """One approach to a stop line.

    Attributes:
        lap: lap number (1-based).
        line_s_total: the stop line's position (unwrapped arc length).
        stopped_before_m: distance from the front axle to the line during the longest full stop before it
            (nan when the car never stopped before the line).
        hold_s: duration of that full stop (0 when the car passed the line without one).
    """

    lap: int
    line_s_total: float
    stopped_before_m: float
    hold_s: float

    @property
    def ok(self) -> bool:
        """A full stop of at least 2 s before the line."""
        return self.hold_s >= 2.0 and self.stopped_before_m >= 0.0


@dataclass
class RunMetrics:
    """Figures of one run (one seed, N laps) or of several runs together."""

    seeds: list[int]
    laps: int
    error_mean_m: float
    error_p95_m: float
    error_max_m: float
    departures: int
    lap_times_s: list[float]
    stops: list[StopEvent]
    sign_events: dict[str, int]
    results_received: int = 0
    results_dropped_by_link: int = 0
    results_corrupted_by_link: int = 0
    watchdog_trips: int = 0
    mean_result_age_s: float = math.nan
    completed: bool = True
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def stops_ok(self) -> int:
        """Stop events that were full stops of >= 2 s before the line."""
        return sum(1 for s in self.stops if s.ok)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (errors in metres, times in seconds)."""
        out = asdict(self)
        out["stops"] = [dict(asdict(s), ok=s.ok) for s in self.stops]
        out["stops_ok"] = self.stops_ok
        return _json_safe(out)


def _json_safe(value: Any) -> Any:
    """NaN and infinities become None (JSON has no such numbers), recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) with linear interpolation; nan for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def error_stats(samples: Iterable[Sample]) -> tuple[float, float, float]:
    """Mean, p95 and max |lateral error| (m) over the samples taken while moving; nan without any."""
    errors = [abs(s.error_m) for s in samples if s.speed_mps > MOVING_MPS]
    if not errors:
        return math.nan, math.nan, math.nan
    return sum(errors) / len(errors), percentile(errors, 95), max(errors)


def summarise(runs: Sequence[tuple[int, Sequence[Sample], RunMetrics]]) -> RunMetrics:
    """Combine runs: error statistics over all their moving samples, counts and lists joined."""
    mean, p95, worst = error_stats(s for _, samples, _ in runs for s in samples)
    events: dict[str, int] = {}
    for _, _, m in runs:
        for k, v in m.sign_events.items():
            events[k] = events.get(k, 0) + v
    ages = [m.mean_result_age_s for _, _, m in runs if not math.isnan(m.mean_result_age_s)]
    return RunMetrics(
        seeds=[seed for seed, _, _ in runs],
        laps=sum(m.laps for _, _, m in runs),
        error_mean_m=mean,
        error_p95_m=p95,
        error_max_m=worst,
        departures=sum(m.departures for _, _, m in runs),
        lap_times_s=[t for _, _, m in runs for t in m.lap_times_s],
        stops=[s for _, _, m in runs for s in m.stops],
        sign_events=events,
        results_received=sum(m.results_received for _, _, m in runs),
        results_dropped_by_link=sum(m.results_dropped_by_link for _, _, m in runs),
        results_corrupted_by_link=sum(m.results_corrupted_by_link for _, _, m in runs),
        watchdog_trips=sum(m.watchdog_trips for _, _, m in runs),
        mean_result_age_s=sum(ages) / len(ages) if ages else math.nan,
        completed=all(m.completed for _, _, m in runs),
        note="; ".join(m.note for _, _, m in runs if m.note),
    )


def _lap_times(laps: Sequence[float]) -> str:
    if not laps:
        return "-"
    if len(laps) <= 10:
        return ", ".join(f"{t:.1f}" for t in laps) + " s"
    return f"min {min(laps):.1f}, mean {sum(laps) / len(laps):.1f}, max {max(laps):.1f} s over {len(laps)} laps"


def format_table(metrics: RunMetrics) -> str:
    """The figures as an aligned text table."""
    cm = 100.0
    laps = metrics.lap_times_s
    rows = [
        ("seeds", ", ".join(str(s) for s in metrics.seeds)),
        ("laps completed", f"{len(laps)} of {metrics.laps}"),
        ("|lateral error| mean", f"{metrics.error_mean_m * cm:.2f} cm"),
        ("|lateral error| p95", f"{metrics.error_p95_m * cm:.2f} cm"),
        ("|lateral error| max", f"{metrics.error_max_m * cm:.2f} cm"),
        ("lane departures", str(metrics.departures)),
        ("lap times", _lap_times(laps)),
        ("stop signs: full stop >= 2 s before the line", f"{metrics.stops_ok} of {len(metrics.stops)}"),
    ]
    for stop in metrics.stops if len(metrics.stops) <= 10 else [s for s in metrics.stops if not s.ok][:10]:
        if math.isnan(stop.stopped_before_m):
            text = "no full stop before the line"
        else:
            text = f"{stop.stopped_before_m * cm:.1f} cm before the line, held {stop.hold_s:.1f} s"
        rows.append((f"  lap {stop.lap} stop", text))
    rows += [
        ("sign events", ", ".join(f"{k} {v}" for k, v in sorted(metrics.sign_events.items())) or "-"),
        ("results received", str(metrics.results_received)),
        (
            "result frames dropped / corrupted by the link",
            f"{metrics.results_dropped_by_link} / {metrics.results_corrupted_by_link}",
        ),
        ("mean result age on arrival", f"{metrics.mean_result_age_s * 1000:.0f} ms"),
        ("watchdog trips", str(metrics.watchdog_trips)),
    ]
    if metrics.note:
        rows.append(("note", metrics.note))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows) + "\n"

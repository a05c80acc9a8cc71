"""The run as a picture: the track with the trajectory coloured by lateral error, and error over time."""

from __future__ import annotations

import math
from pathlib import Path

from seedcam_firmware.agv_sim.runner import SimRun

__all__ = ["plot_run"]


def plot_run(run: SimRun, path: str | Path) -> Path:
    """Write a PNG of ``run`` to ``path`` (needs matplotlib: ``pip install seedcam-firmware[sim]``).

    Returns:
        The path written.

    Raises:
        ImportError: matplotlib is not installed.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    track, samples = run.track, run.samples
    fig, (ax_map, ax_err) = plt.subplots(1, 2, figsize=(15, 6.2), gridspec_kw={"width_ratios": [1.05, 1.0]})
    n = max(200, int(track.length / 0.01))
    half = track.lane_width_m / 2
    centre = [track.pose(track.length * i / n) for i in range(n + 1)]
    ax_map.plot([p[0] for p in centre], [p[1] for p in centre], color="0.75", lw=0.8, ls=":", label="lane centre")
    for side in (+1, -1):
        pts = [(track.length * i / n, track.pose(track.length * i / n, side * half)) for i in range(n + 1)]
        xs = [p[0] if track.line_painted(s, side) else math.nan for s, p in pts]
        ys = [p[1] if track.line_painted(s, side) else math.nan for s, p in pts]
        ax_map.plot(xs, ys, color="0.35", lw=1.6)
    for a, _end, side in track.missing:
        x0, y0, _ = track.pose(a, side * half)
        ax_map.annotate("no line", (x0, y0), textcoords="offset points", xytext=(-10, 8), fontsize=8, color="0.3")
    for sign in track.signs:
        x, y, _ = track.sign_position(sign)
        style = {"stop": ("8", "red"), "speed_limit": ("o", "white")}.get(sign.kind, ("s", "blue"))
        ax_map.plot(x, y, marker=style[0], ms=11, mfc=style[1], mec="red", mew=2, ls="none")
        ax_map.annotate(sign.text or sign.kind, (x, y), textcoords="offset points", xytext=(8, -12), fontsize=8)
        if sign.kind == "stop":
            (xa, ya, _), (xb, yb, _) = track.pose(sign.s, half), track.pose(sign.s, -half)
            ax_map.plot([xa, xb], [ya, yb], color="red", lw=3, label="stop line")
    if samples:
        errors_cm = [abs(s.error_m) * 100 for s in samples]
        points = ax_map.scatter(
            [s.x for s in samples], [s.y for s in samples], c=errors_cm, cmap="turbo", s=5, vmin=0.0,
            vmax=max(5.0, max(errors_cm)), zorder=3,
        )  # fmt: skip
        fig.colorbar(points, ax=ax_map, fraction=0.046, pad=0.02, label="|lateral error| (cm)")
        ax_map.plot(samples[0].x, samples[0].y, marker=">", color="green", ms=10, ls="none", label="start")
    ax_map.set_aspect("equal")
    ax_map.set_xlabel("x (m)")
    ax_map.set_ylabel("y (m)")
    m = run.metrics
    ax_map.set_title(
        f"seed {run.options.seed}, {len(m.lap_times_s)} lap(s), latency {run.options.latency_s * 1000:.0f} ms, "
        f"{run.options.drop_rate * 100:.0f} % drops"
    )
    ax_map.legend(loc="upper right", fontsize=8)

    if samples:
        t = [s.t for s in samples]
        ax_err.plot(t, [s.error_m * 100 for s in samples], lw=0.9, color="tab:blue", label="front axle (camera)")
        ax_err.plot(t, [s.rear_error_m * 100 for s in samples], lw=0.6, color="tab:gray", alpha=0.7, label="rear axle")
        limit = (half - run.options.vehicle.half_width_m) * 100
        for side in (+1, -1):
            ax_err.axhline(side * limit, color="red", lw=0.8, ls="--")
        ax_err.axhline(0.0, color="0.5", lw=0.5)
        speed_ax = ax_err.twinx()
        speed_ax.plot(t, [s.speed_mps for s in samples], color="tab:green", lw=0.8, alpha=0.6)
        speed_ax.set_ylabel("speed (m/s)", color="tab:green")
        speed_ax.set_ylim(0, 1.5)
        lap_end = 0.0
        for lap_time in m.lap_times_s:
            lap_end += lap_time
            ax_err.axvline(lap_end, color="0.6", lw=0.6)
        for i, stop in enumerate(m.stops):  # a marker per stop line; words only when there are few
            at = next((s.t for s in samples if s.s_total >= stop.line_s_total - 0.3), t[-1])
            ax_err.plot(at, limit * 0.9, marker="v", color="tab:green" if stop.ok else "red", ms=7, ls="none")
            if len(m.stops) <= 3:
                text = (
                    "no full stop before the line"
                    if math.isnan(stop.stopped_before_m)
                    else f"stop {stop.hold_s:.1f} s, {stop.stopped_before_m * 100:.0f} cm before line"
                )
                ax_err.annotate(text, (at, limit * 0.8 - i * 1.2), fontsize=8, color="red")
    ax_err.set_xlabel("time (s)")
    ax_err.set_ylabel("lateral error (cm, + = left of centre)")
    ax_err.set_title(
        f"|error| mean {m.error_mean_m * 100:.2f} cm, p95 {m.error_p95_m * 100:.2f} cm, "
        f"max {m.error_max_m * 100:.2f} cm, departures {m.departures}, stops ok {m.stops_ok}/{len(m.stops)}"
    )
    ax_err.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out

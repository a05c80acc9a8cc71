"""What ``seedcam agv-sim`` and ``seedcam agv-bench`` do (their options: :mod:`seedcam_firmware.agv_sim_cli`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from seedcam_firmware.agv_sim.metrics import format_table, summarise
from seedcam_firmware.agv_sim.plot import plot_run
from seedcam_firmware.agv_sim.runner import SimOptions, SimRun, run_simulation

__all__ = ["THRESHOLDS", "cmd_agv_bench", "cmd_agv_sim"]

#: what the benchmark must meet (metres): the issue's "done when"
THRESHOLDS = {"error_mean_m": 0.02, "error_p95_m": 0.05, "departures": 0}


def _options(args: argparse.Namespace, seed: int, laps: int) -> SimOptions:
    return SimOptions(
        laps=laps,
        seed=seed,
        latency_s=args.latency_ms / 1000.0,
        drop_rate=args.drop,
        corrupt_rate=args.corrupt,
        image_noise=args.noise,
        fps=args.fps,
        detect=False if args.no_detect else None,
    )


def _png(run: SimRun, path: Path) -> Path:
    try:
        return plot_run(run, path)
    except ImportError as exc:
        raise ValueError(f"the PNG needs matplotlib (pip install 'seedcam-firmware[sim]'): {exc}") from exc


def _check(args: argparse.Namespace) -> None:
    if args.laps < 1:
        raise ValueError("--laps must be at least 1")
    if not 0 <= args.drop <= 1 or not 0 <= args.corrupt <= 1 or args.latency_ms < 0:
        raise ValueError("--drop and --corrupt must be within 0..1 and --latency-ms >= 0")


def cmd_agv_sim(args: argparse.Namespace, out: TextIO) -> int:
    """Drive ``--laps`` laps with seed ``--seed``; print the figures and write the PNG."""
    _check(args)
    run = run_simulation(_options(args, args.seed, args.laps))
    png = _png(run, args.png or Path(f"agv-sim-seed{args.seed}.png"))
    if args.json:
        out.write(json.dumps(dict(run.metrics.to_json(), png=str(png))) + "\n")
    else:
        out.write(format_table(run.metrics))
        out.write(f"plot: {png}\n")
    return 0


def cmd_agv_bench(args: argparse.Namespace, out: TextIO) -> int:
    """``--laps`` laps for each of ``--seeds``; exit 0 when the thresholds hold, else 1."""
    _check(args)
    folder = args.out_dir
    folder.mkdir(parents=True, exist_ok=True)
    runs = []
    for seed in args.seeds:
        run = run_simulation(_options(args, seed, args.laps))
        _png(run, folder / f"agv-bench-seed{seed}.png")
        runs.append((seed, run.samples, run.metrics))
        m = run.metrics
        if not args.json:
            out.write(
                f"seed {seed}: mean {m.error_mean_m * 100:.2f} cm, p95 {m.error_p95_m * 100:.2f} cm, "
                f"max {m.error_max_m * 100:.2f} cm, departures {m.departures}, "
                f"stops ok {m.stops_ok}/{len(m.stops)}, laps {len(m.lap_times_s)}/{m.laps}\n"
            )
            out.flush()
    total = summarise(runs)
    failures = [
        f"{key} {getattr(total, key)} > {limit}"
        for key, limit in THRESHOLDS.items()
        if not getattr(total, key) <= limit  # a nan fails too
    ]
    if total.stops_ok != len(total.stops) or not total.stops:
        failures.append(f"stop signs: {total.stops_ok} of {len(total.stops)} full stops >= 2 s before the line")
    if not total.completed or len(total.lap_times_s) != total.laps:
        failures.append(f"laps completed: {len(total.lap_times_s)} of {total.laps}")
    verdict = "PASS" if not failures else "FAIL: " + "; ".join(failures)
    (folder / "agv-bench.json").write_text(json.dumps(dict(total.to_json(), verdict=verdict), indent=1))
    if args.json:
        out.write(json.dumps(dict(total.to_json(), verdict=verdict)) + "\n")
    else:
        out.write(format_table(total))
        out.write(f"verdict: {verdict}\n")
    return 0 if not failures else 1

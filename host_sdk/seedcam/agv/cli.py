"""``seedcam agv-sim`` and ``seedcam agv-bench``: the closed-loop simulator from the command line."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

__all__ = ["add_agv_commands", "cmd_agv_bench", "cmd_agv_sim", "THRESHOLDS"]

#: what the benchmark must meet (metres): the issue's "done when"
THRESHOLDS = {"error_mean_m": 0.02, "error_p95_m": 0.05, "departures": 0}


def _options(args: argparse.Namespace, seed: int, laps: int) -> object:
    from seedcam.agv.sim import SimOptions

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


def _png(run: object, path: Path) -> Path:
    try:
        from seedcam.agv.sim.plot import plot_run
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ValueError(f"the PNG needs matplotlib (pip install 'seedcam[sim]'): {exc}") from exc
    try:
        return plot_run(run, path)  # type: ignore[arg-type]
    except ImportError as exc:
        raise ValueError(f"the PNG needs matplotlib (pip install 'seedcam[sim]'): {exc}") from exc


def _check(args: argparse.Namespace) -> None:
    if args.laps < 1:
        raise ValueError("--laps must be at least 1")
    if not 0 <= args.drop <= 1 or not 0 <= args.corrupt <= 1 or args.latency_ms < 0:
        raise ValueError("--drop and --corrupt must be within 0..1 and --latency-ms >= 0")


def cmd_agv_sim(args: argparse.Namespace, out: TextIO) -> int:
    """Drive ``--laps`` laps with seed ``--seed``; print the figures and write the PNG."""
    from seedcam.agv.sim import format_table, run_simulation

    _check(args)
    run = run_simulation(_options(args, args.seed, args.laps))  # type: ignore[arg-type]
    png = _png(run, args.png or Path(f"agv-sim-seed{args.seed}.png"))
    if args.json:
        out.write(json.dumps(dict(run.metrics.to_json(), png=str(png))) + "\n")
    else:
        out.write(format_table(run.metrics))
        out.write(f"plot: {png}\n")
    return 0


def cmd_agv_bench(args: argparse.Namespace, out: TextIO) -> int:
    """``--laps`` laps for each of ``--seeds``; exit 0 when the thresholds hold, else 1."""
    from seedcam.agv.sim import format_table, run_simulation, summarise

    _check(args)
    folder = args.out_dir
    folder.mkdir(parents=True, exist_ok=True)
    runs = []
    for seed in args.seeds:
        run = run_simulation(_options(args, seed, args.laps))  # type: ignore[arg-type]
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


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--latency-ms", type=float, default=60.0, help="added one-way link latency (default 60)")
    parser.add_argument("--drop", type=float, default=0.05, help="fraction of result frames dropped (default 0.05)")
    parser.add_argument("--corrupt", type=float, default=0.0, help="fraction of result frames with a flipped bit")
    parser.add_argument("--noise", type=float, default=None, help="camera noise sigma 0..1 (default: the seed's)")
    parser.add_argument("--fps", type=float, default=30.0, help="camera frame rate (default 30)")
    parser.add_argument("--no-detect", action="store_true", help="lane only, no sign detector")
    parser.add_argument("--json", action="store_true", help="one JSON object (errors in metres)")


def add_agv_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``agv-sim`` and ``agv-bench`` to the ``seedcam`` CLI."""
    sim = commands.add_parser(
        "agv-sim", help="drive the AGV controller round the simulated track through the real firmware and a pty"
    )
    sim.add_argument("--laps", type=int, default=1)
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--png", type=Path, help="where to write the plot (default agv-sim-seedS.png)")
    _common(sim)
    sim.set_defaults(func=cmd_agv_sim)
    bench = commands.add_parser(
        "agv-bench", help="the simulator benchmark: laps x seeds, checked against the thresholds (exit 1 on a miss)"
    )
    bench.add_argument("--laps", type=int, default=10)
    bench.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    bench.add_argument("--out-dir", type=Path, default=Path("agv-bench"), help="PNGs and agv-bench.json go here")
    _common(bench)
    bench.set_defaults(func=cmd_agv_bench)

"""``seedcam-tools bench pipeline|link|visionseed|soak|record|fleet``: the benchmark commands.

Registered into the ``seedcam-tools`` parser by :func:`add_bench_commands`;
``bench push`` comes with the bundle commands (:mod:`seedcam_tools.bundle_cli`).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path

from seedcam_tools.bench_soak import format_soak_report, run_soak
from seedcam_tools.bench_visionseed import format_visionseed_table, run_visionseed_benchmark

__all__ = ["add_bench_commands"]

EXIT_OK = 0
EXIT_FAILED = 1


def _note(args: argparse.Namespace) -> Callable[[str], None]:
    """Where a benchmark's progress lines go: stdout, or nowhere with ``--quiet``."""

    def note(line: str) -> None:
        if not args.quiet:
            sys.stdout.write(line + "\n")

    return note


def cmd_bench_pipeline(args: argparse.Namespace) -> int:
    from seedcam_tools.bench_pipeline import format_table, run_pipeline_benchmark  # heavy: imported when run

    report = run_pipeline_benchmark(
        seconds=args.seconds, fps=args.fps, out_json=args.json, progress=not args.quiet, num_threads=args.threads
    )
    sys.stdout.write(format_table(report) + "\n")
    if args.json:
        sys.stdout.write(f"wrote {args.json}\n")
    return EXIT_OK


def cmd_bench_link(args: argparse.Namespace) -> int:
    from seedcam_tools.bench_link import format_link_table, run_link_benchmark

    if not args.quiet:
        logging.basicConfig(level=logging.INFO, format="%(message)s")
    report = run_link_benchmark(seconds=args.seconds, fps=args.fps, lines=args.lines.split(","), out_json=args.json)
    sys.stdout.write(format_link_table(report) + "\n")
    if args.json and not args.quiet:
        sys.stdout.write(f"wrote {args.json}\n")
    return EXIT_OK


def cmd_bench_visionseed(args: argparse.Namespace) -> int:
    report = run_visionseed_benchmark(frames=args.frames, passes=args.passes, out_json=args.json)
    sys.stdout.write(format_visionseed_table(report) + "\n")
    if args.json and not args.quiet:
        sys.stdout.write(f"wrote {args.json}\n")
    return EXIT_OK


def cmd_bench_soak(args: argparse.Namespace) -> int:
    report = run_soak(
        args.seconds, fps=args.fps, rss_growth_mb=args.rss_growth_mb, out_json=args.json, note=_note(args)
    )
    sys.stdout.write(format_soak_report(report) + "\n")
    return EXIT_OK if report.passed else EXIT_FAILED


def cmd_bench_record(args: argparse.Namespace) -> int:
    from seedcam_tools.bench_record import format_record_report, run_record_benchmark  # needs seedcam[record]

    report = run_record_benchmark(
        minutes=args.minutes, fps=args.fps, preview_fps=args.preview_fps, out_json=args.json, note=_note(args)
    )
    sys.stdout.write(format_record_report(report) + "\n")
    if args.json and not args.quiet:
        sys.stdout.write(f"wrote {args.json}\n")
    return EXIT_OK if report["passed"] else EXIT_FAILED


def cmd_bench_fleet(args: argparse.Namespace) -> int:
    from seedcam_tools.bench_fleet import format_fleet_report, run_fleet_benchmark

    result = run_fleet_benchmark(args.sensors, args.fps, args.seconds, args.broker, args.qos)
    sys.stdout.write(format_fleet_report(result))
    return EXIT_OK


def add_bench_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """Add ``bench ...`` to the ``seedcam-tools`` sub-commands; returns its sub-commands (for ``bench push``)."""
    bench = commands.add_parser("bench", help="benchmarks")
    which = bench.add_subparsers(dest="bench", required=True)
    pipeline = which.add_parser("pipeline", help="glue overhead, latency, frame size, host decode rate")
    pipeline.add_argument("--seconds", type=float, default=10.0)
    pipeline.add_argument("--fps", type=float, default=30.0)
    pipeline.add_argument("--json", type=Path, default=Path("bench-pipeline.json"))
    pipeline.add_argument(
        "--threads", type=int, default=None, help="interpreter threads (default: the firmware's runtime.num_threads)"
    )
    pipeline.add_argument("-q", "--quiet", action="store_true")
    pipeline.set_defaults(func=cmd_bench_pipeline)
    link = which.add_parser(
        "link", help="the default tasks on a scene of signs and a plate over 115200 / 921600 baud and a pty"
    )
    link.add_argument("--seconds", type=float, default=8.0, help="window per line (default 8)")
    link.add_argument("--fps", type=float, default=30.0)
    link.add_argument("--lines", default="115200,921600,pty", help="comma-separated: 115200, 921600, pty")
    link.add_argument("--json", type=Path, default=None, help="also write the report here as JSON")
    link.add_argument("-q", "--quiet", action="store_true")
    link.set_defaults(func=cmd_bench_link)
    visionseed = which.add_parser("visionseed", help="per-frame cost of the VisionSeed send path, before and after")
    visionseed.add_argument("--frames", type=int, default=200, help="sends per pass (default 200)")
    visionseed.add_argument("--passes", type=int, default=50, help="passes per path and result (default 50)")
    visionseed.add_argument("--json", type=Path, default=None, help="also write the report here as JSON")
    visionseed.add_argument("-q", "--quiet", action="store_true")
    visionseed.set_defaults(func=cmd_bench_visionseed)
    soak = which.add_parser(
        "soak", help="the emulated board under a steady host: memory, threads, unexplained losses (exit 1 on a miss)"
    )
    soak.add_argument("--seconds", type=float, default=600.0, help="length of the soak (default 600)")
    soak.add_argument("--fps", type=float, default=30.0)
    soak.add_argument(
        "--rss-growth-mb",
        type=float,
        default=10.0,
        help="allowed memory growth after the warm-up (default 10 MB, or 5 %%)",
    )
    soak.add_argument("--json", type=Path, default=None, help="also write the report here as JSON")
    soak.add_argument("-q", "--quiet", action="store_true")
    soak.set_defaults(func=cmd_bench_soak)
    record = which.add_parser(
        "record", help="the SDK recorder on the emulated board for minutes; the file read back (exit 1 on a miss)"
    )
    record.add_argument("--minutes", type=float, default=10.0, help="length of the recording (default 10)")
    record.add_argument("--fps", type=float, default=30.0)
    record.add_argument("--preview-fps", type=float, default=5.0, help="preview JPEGs a second (default 5)")
    record.add_argument("--json", type=Path, default=None, help="also write the report here as JSON")
    record.add_argument("-q", "--quiet", action="store_true")
    record.set_defaults(func=cmd_bench_record)
    fleet = which.add_parser("fleet", help="N sensors with MQTT bridges through one broker: messages/s, latency p95")
    fleet.add_argument("--sensors", type=int, default=20)
    fleet.add_argument("--fps", type=float, default=30.0)
    fleet.add_argument("--seconds", type=float, default=10.0)
    fleet.add_argument("--qos", type=int, choices=(0, 1), default=0, help="QoS of the results (default 0)")
    fleet.add_argument("--broker", help="mqtt://host:port (default: a mosquitto started for the run)")
    fleet.set_defaults(func=cmd_bench_fleet)
    return which

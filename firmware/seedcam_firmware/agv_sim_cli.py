"""``seedcam agv-sim`` and ``seedcam agv-bench``: the AGV simulator's commands in the ``seedcam`` CLI.

The simulator ships with the firmware it drives; the SDK's CLI finds this module through the
``seedcam.cli_commands`` entry point ``agv`` (``firmware/pyproject.toml``, :mod:`seedcam.agv.cli`).
It only declares the options: the simulator (:mod:`seedcam_firmware.agv_sim.commands`, the
firmware's config, the launcher) loads when one of these commands runs, so every other
``seedcam`` command starts as fast as without the firmware installed.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from seedcam.agv.cli import AGV_COMMANDS

__all__ = ["add_agv_commands"]

_Command = Callable[[argparse.Namespace, TextIO], int]


def _on_demand(name: str) -> _Command:
    """The command ``name`` of :mod:`seedcam_firmware.agv_sim.commands`, imported when it runs."""

    def command(args: argparse.Namespace, out: TextIO) -> int:
        from seedcam_firmware.agv_sim import commands  # deferred for start-up time, not for a cycle

        run: _Command = getattr(commands, name)
        return run(args, out)

    return command


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--latency-ms", type=float, default=60.0, help="added one-way link latency (default 60)")
    parser.add_argument("--drop", type=float, default=0.05, help="fraction of result frames dropped (default 0.05)")
    parser.add_argument("--corrupt", type=float, default=0.0, help="fraction of result frames with a flipped bit")
    parser.add_argument("--noise", type=float, default=None, help="camera noise sigma 0..1 (default: the seed's)")
    parser.add_argument("--fps", type=float, default=30.0, help="camera frame rate (default 30)")
    parser.add_argument("--no-detect", action="store_true", help="lane only, no sign detector")
    # SUPPRESS: ``seedcam --json agv-sim`` keeps the global option's value instead of this default
    parser.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="one JSON object (errors in metres)"
    )


def add_agv_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``agv-sim`` and ``agv-bench`` to the ``seedcam`` CLI (the ``seedcam.cli_commands`` entry point ``agv``)."""
    sim = commands.add_parser("agv-sim", help=AGV_COMMANDS["agv-sim"])
    sim.add_argument("--laps", type=int, default=1)
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--png", type=Path, help="where to write the plot (default agv-sim-seedS.png)")
    _common(sim)
    sim.set_defaults(func=_on_demand("cmd_agv_sim"))
    bench = commands.add_parser("agv-bench", help=AGV_COMMANDS["agv-bench"])
    bench.add_argument("--laps", type=int, default=10)
    bench.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    bench.add_argument("--out-dir", type=Path, default=Path("agv-bench"), help="PNGs and agv-bench.json go here")
    _common(bench)
    bench.set_defaults(func=_on_demand("cmd_agv_bench"))

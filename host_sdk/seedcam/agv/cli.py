"""``seedcam agv-sim`` and ``seedcam agv-bench``: the closed-loop simulator's commands, from the firmware package.

The simulator drives the real firmware, so it ships with it (``seedcam_firmware.agv_sim``) and
hands its commands to this CLI through an entry point: group :data:`ENTRY_POINT_GROUP`, name
:data:`AGV_ENTRY_POINT`, a function that adds its sub-commands to the ``seedcam`` parser. The SDK
imports nothing of the firmware. Without the firmware the commands are still listed, and say
what to install instead of running.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from importlib import metadata
from typing import TextIO

__all__ = ["AGV_COMMANDS", "AGV_ENTRY_POINT", "ENTRY_POINT_GROUP", "add_agv_commands"]

#: Entry points in this group add commands to the ``seedcam`` CLI: ``add(commands_subparsers) -> None``.
ENTRY_POINT_GROUP = "seedcam.cli_commands"
#: The one that adds ``agv-sim`` and ``agv-bench`` (declared by the seedcam-firmware distribution).
AGV_ENTRY_POINT = "agv"
#: The commands it adds, with their help (listed even when the firmware is not installed).
AGV_COMMANDS = {
    "agv-sim": "drive the AGV controller round the simulated track through the real firmware and a pty",
    "agv-bench": "the simulator benchmark: laps x seeds, checked against the thresholds (exit 1 on a miss)",
}

_AddCommands = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]


def _load_agv_commands() -> tuple[_AddCommands | None, str]:
    """The firmware's ``add_agv_commands``, or None and why not."""
    found = [ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == AGV_ENTRY_POINT]
    if not found:
        return None, "the simulator ships with the firmware package, which is not installed"
    try:
        return found[0].load(), ""
    except Exception as exc:  # a broken install must not take the rest of the CLI down with it
        return None, f"the firmware package's simulator does not load ({type(exc).__name__}: {exc})"


def _absent(name: str, why: str) -> Callable[[argparse.Namespace, TextIO], int]:
    def command(args: argparse.Namespace, out: TextIO) -> int:
        raise ValueError(
            f"seedcam {name} needs the AGV simulator: {why}; install it with pip install seedcam-firmware "
            "(from a clone: pip install -e firmware)"
        )

    return command


def add_agv_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``agv-sim`` and ``agv-bench`` to the ``seedcam`` CLI (the firmware's, or ones that say what to install)."""
    add, why = _load_agv_commands()
    if add is not None:
        add(commands)
        return
    for name, text in AGV_COMMANDS.items():
        # takes any arguments (no option is known here, hence no prefix character) and reports what is missing
        absent = commands.add_parser(name, help=f"{text} [needs seedcam-firmware]", prefix_chars="\0", add_help=False)
        absent.add_argument("arguments", nargs="*")
        absent.set_defaults(func=_absent(name, why))

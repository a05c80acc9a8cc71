"""What the ``seedcam`` command modules share: exit codes, the fatal-error type, the command type, JSON output,
byte sizes as text."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any, TextIO

from seedcam._jsonable import to_jsonable

__all__ = [
    "EXIT_OK",
    "EXIT_USER",
    "EXIT_DEVICE",
    "EXIT_INTERRUPTED",
    "CliError",
    "Command",
    "byte_size",
    "write_json",
]

#: 0 success; 1 usage or user error; 2 device or link error; 130 interrupted (the shell's code for Ctrl-C)
EXIT_OK, EXIT_USER, EXIT_DEVICE = 0, 1, 2
EXIT_INTERRUPTED = 130

#: A command: parsed arguments and the output stream in, exit code out.
Command = Callable[[argparse.Namespace, TextIO], int]


class CliError(Exception):
    """A command cannot go on: ``seedcam`` prints the message as one line and exits with ``code``.

    Args:
        message: what went wrong, naming the option, port or file concerned.
        code: the exit code (:data:`EXIT_USER` or :data:`EXIT_DEVICE`).
    """

    def __init__(self, message: str, code: int = EXIT_USER) -> None:
        super().__init__(message)
        self.code = code


def write_json(out: TextIO, value: Any) -> None:
    """``--json`` output: one compact JSON document per line (JSON Lines), for every command alike."""
    out.write(json.dumps(to_jsonable(value)) + "\n")


def byte_size(n: float) -> str:
    """A byte count as the commands print it: ``512 B``, ``3.4 KiB``, ``1.2 MiB``, ``2.0 GiB``."""
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"

"""What the ``seedcam`` command modules share: exit codes, the command type, plain-JSON conversion."""

from __future__ import annotations

import argparse
import dataclasses
import enum
from collections.abc import Callable
from typing import Any, TextIO

__all__ = ["EXIT_OK", "EXIT_USER", "EXIT_DEVICE", "EXIT_INTERRUPTED", "Command", "to_jsonable"]

EXIT_OK, EXIT_USER, EXIT_DEVICE = 0, 1, 2
EXIT_INTERRUPTED = 130  # the shell's code for Ctrl-C

#: A command: parsed arguments and the output stream in, exit code out.
Command = Callable[[argparse.Namespace, TextIO], int]


def to_jsonable(value: Any) -> Any:
    """Dataclasses, enums, tuples and bytes → plain JSON types."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    return value

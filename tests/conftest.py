"""Shared fixtures: the real firmware process on a pty (the emulated board).

Helpers that are not fixtures (``wait_until``, ``run_firmware_cli``, the ``REPO`` and ``MODELS``
paths) live in ``helpers.py``; ``REPO`` and ``MODELS`` are also importable from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import MODELS, REPO

from seedcam_firmware.launcher import EmulatedBoard

__all__ = ["MODELS", "REPO"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--sensor-url",
        default=None,
        help="run the end-to-end tests against a real board at this URL instead of the emulated one",
    )
    parser.addoption(
        "--fuzz-long",
        action="store_true",
        help="fuzz each decoder with 10^6 inputs (the long budget) instead of the CI budget of 10^5",
    )


@pytest.fixture
def fuzz_inputs(request: pytest.FixtureRequest) -> int:
    """Fuzzed inputs per decoder and engine: 10^5 (the CI budget), 10^6 with ``--fuzz-long``."""
    return 10**6 if request.config.getoption("--fuzz-long") else 10**5


@pytest.fixture
def firmware_factory(tmp_path: Path) -> Iterator[Callable[..., EmulatedBoard]]:
    """Start emulated boards (``seedcam-firmware run ARGS`` on the pty ``tmp_path/sensor``); all are killed at teardown.

    ``firmware_factory(*args, timeout=60.0)`` returns the :class:`EmulatedBoard` once its link is up.
    """
    started: list[EmulatedBoard] = []

    def start(*args: str, timeout: float = 60.0) -> EmulatedBoard:
        board = EmulatedBoard(*args, workdir=tmp_path)
        started.append(board)
        return board.start().wait_ready(timeout)

    yield start
    for board in started:
        board.kill()

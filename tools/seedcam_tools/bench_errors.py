"""Errors of the benchmarks (``seedcam-tools bench ...``); rooted at :class:`seedcam.SensorError`."""

from __future__ import annotations

from seedcam.errors import SensorError

__all__ = ["BenchmarkError", "LaneModelMissing"]


class BenchmarkError(SensorError):
    """The benchmark could not run (firmware did not start, no results, ...)."""


class LaneModelMissing(BenchmarkError, FileNotFoundError):
    """The shipped lane int8 model bundle is not there (or does not load)."""

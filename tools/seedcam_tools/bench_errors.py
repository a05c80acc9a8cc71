"""Errors of the benchmarks (``seedcam-tools bench ...``); rooted at :class:`seedcam.SensorError`."""

from __future__ import annotations

from seedcam.errors import SensorError

__all__ = ["BenchmarkError", "ModelMissing"]


class BenchmarkError(SensorError):
    """The benchmark could not run (firmware did not start, no results, ...)."""


class ModelMissing(BenchmarkError, FileNotFoundError):
    """A shipped int8 model bundle the benchmark times is not there (or does not load)."""

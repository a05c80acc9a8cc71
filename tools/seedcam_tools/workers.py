"""Worker processes for rendering training and evaluation data."""

from __future__ import annotations

import multiprocessing as mp
import multiprocessing.pool
import sys

__all__ = ["process_pool"]


def process_pool(workers: int) -> multiprocessing.pool.Pool:
    """A pool of ``workers`` processes.

    Forked (cheap) while TensorFlow is not loaded; spawned once it is, because
    children forked from a process running TensorFlow's threads can deadlock on
    locks those threads held (spawn needs the usual ``if __name__ == "__main__"``
    guard in the main script).
    """
    method = "spawn" if "tensorflow" in sys.modules else "fork"
    return mp.get_context(method).Pool(workers)

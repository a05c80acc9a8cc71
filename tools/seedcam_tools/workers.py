"""Worker processes for rendering training and evaluation data."""

from __future__ import annotations

import multiprocessing as mp
import multiprocessing.pool
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

__all__ = ["map_in_workers", "process_pool"]

T = TypeVar("T")
R = TypeVar("R")


def process_pool(workers: int) -> multiprocessing.pool.Pool:
    """A pool of ``workers`` processes.

    Forked (cheap) while TensorFlow is not loaded; spawned once it is, because
    children forked from a process running TensorFlow's threads can deadlock on
    locks those threads held (spawn needs the usual ``if __name__ == "__main__"``
    guard in the main script).
    """
    method = "spawn" if "tensorflow" in sys.modules else "fork"
    return mp.get_context(method).Pool(workers)


def map_in_workers(
    fn: Callable[[T], R],
    jobs: Sequence[T],
    *,
    workers: int,
    chunksize: int = 1,
    progress: bool = False,
    desc: str | None = None,
    unit: str = "it",
) -> Iterator[R]:
    """``fn`` of each of ``jobs``, in order, computed in a :func:`process_pool` of ``workers``.

    With ``workers`` <= 1 it runs in this process (no pool); a caller with too
    little to render to pay for starting processes passes 1. The results stream
    as they come: iterate over them in the ``for`` statement itself (not through a
    variable), so that the pool is closed and joined as soon as the loop ends,
    whether it read them all, stopped early or raised.

    Args:
        fn: a module-level function (it is pickled to the workers).
        jobs: its arguments, one per call.
        workers: processes.
        chunksize: jobs sent to a worker at a time (``Pool.imap``'s).
        progress: show a tqdm bar over the jobs, with ``desc`` and ``unit``.
        desc: the bar's description.
        unit: the bar's unit.
    """
    pool = process_pool(workers) if workers > 1 else None
    try:
        it = pool.imap(fn, jobs, chunksize=chunksize) if pool is not None else map(fn, jobs)
        if progress:
            from tqdm import tqdm

            it = tqdm(it, total=len(jobs), desc=desc, unit=unit)
        yield from it
    finally:
        if pool is not None:
            pool.close()
            pool.join()

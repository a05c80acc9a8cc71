"""Results paired with the preview JPEGs of their frames, by frame id, whichever of the two comes first."""

from __future__ import annotations

import collections
from typing import TypeVar

from seedcam.types import PreviewFrame, Result

__all__ = ["FramePairs"]

T = TypeVar("T")


class FramePairs:
    """Results and preview JPEGs that wait for their other half, matched by frame id.

    Each side keeps a bounded number, the oldest forgotten first: most results have no JPEG
    (the preview runs slower than the results), and a JPEG whose result was lost never pairs.
    A pair is forgotten once made. Not thread-safe: the caller serialises (its one thread, or a lock).

    Args:
        results_kept: results held for a JPEG that comes after them.
        previews_kept: JPEGs held for a result that comes after them.
    """

    def __init__(self, *, results_kept: int, previews_kept: int) -> None:
        self._results_kept = results_kept
        self._previews_kept = previews_kept
        self._results: collections.OrderedDict[int, Result] = collections.OrderedDict()
        self._previews: collections.OrderedDict[int, PreviewFrame] = collections.OrderedDict()

    def add_result(self, result: Result) -> PreviewFrame | None:
        """The JPEG of ``result``'s frame when it came first; else None, and ``result`` waits for it."""
        preview = self._previews.pop(result.frame_id, None)
        if preview is None:
            _keep(self._results, result.frame_id, result, self._results_kept)
        return preview

    def add_preview(self, preview: PreviewFrame) -> Result | None:
        """The Result of ``preview``'s frame when it came first; else None, and ``preview`` waits for it."""
        result = self._results.pop(preview.frame_id, None)
        if result is None:
            _keep(self._previews, preview.frame_id, preview, self._previews_kept)
        return result


def _keep(waiting: collections.OrderedDict[int, T], frame_id: int, item: T, limit: int) -> None:
    waiting[frame_id] = item
    while len(waiting) > limit:
        waiting.popitem(last=False)

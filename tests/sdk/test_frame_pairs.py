"""Results and preview JPEGs paired by frame id (the recorder's and the live view's one helper)."""

from __future__ import annotations

from seedcam._frame_pairs import FramePairs
from seedcam.types import PreviewFrame, Result


def _result(frame_id: int) -> Result:
    return Result(frame_id=frame_id, capture_timestamp_us=frame_id * 1000)


def _preview(frame_id: int) -> PreviewFrame:
    return PreviewFrame(frame_id=frame_id, timestamp_us=frame_id * 1000, jpeg=b"\xff\xd8", width=8, height=6)


def test_either_half_may_come_first() -> None:
    pairs = FramePairs(results_kept=4, previews_kept=4)
    first, later = _result(1), _preview(1)
    assert pairs.add_result(first) is None
    assert pairs.add_preview(later) is first
    early = _preview(2)
    assert pairs.add_preview(early) is None
    assert pairs.add_result(_result(3)) is None  # another frame's result does not take it
    assert pairs.add_result(_result(2)) is early


def test_a_pair_is_made_once() -> None:
    pairs = FramePairs(results_kept=4, previews_kept=4)
    pairs.add_result(_result(1))
    assert pairs.add_preview(_preview(1)) is not None
    assert pairs.add_preview(_preview(1)) is None  # the result went with its first JPEG


def test_each_side_forgets_its_oldest_beyond_its_bound() -> None:
    pairs = FramePairs(results_kept=3, previews_kept=1)
    for frame_id in range(5):
        pairs.add_result(_result(frame_id))
    assert pairs.add_preview(_preview(1)) is None  # results 0 and 1 forgotten
    assert pairs.add_preview(_preview(2)) is not None
    pairs.add_preview(_preview(10))
    pairs.add_preview(_preview(11))  # the one JPEG kept: 10 forgotten
    assert pairs.add_result(_result(10)) is None
    assert pairs.add_result(_result(11)) is not None

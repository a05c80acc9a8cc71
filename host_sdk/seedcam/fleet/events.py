"""From a stream of results to the few events a fleet cares about (pure: no I/O, no clock of its own).

A detection *appears* when an object is seen that no track holds, *changes* when a
tracked object moved or grew (its box overlaps the box last reported by less than
``change_iou``), and *ends* when its track has not been seen for ``end_after``
frames. Tracks match detections of the same label by box overlap. The lane is
*lost* when its status becomes LOST and *found* again when it leaves LOST. A
*stop sign* event goes with the appearance of a detection labelled ``stop`` (or
``stop_sign`` / ``stop sign``). A plate's text read by OCR is a ``plate_read``
event when it differs from the last text read.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from seedcam.types import Box, Detection, LaneStatus, Result

__all__ = ["EventTracker", "FleetEvent", "STOP_LABELS"]

STOP_LABELS = frozenset({"stop", "stop_sign", "stop sign"})


@dataclass(frozen=True)
class FleetEvent:
    """One event: ``kind`` (``detection_appeared`` / ``detection_changed`` / ``detection_ended`` /
    ``lane_lost`` / ``lane_found`` / ``stop_sign`` / ``plate_read``) and what it is about."""

    kind: str
    frame_id: int
    capture_timestamp_us: int
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Track:
    track_id: int
    label: str
    box: Box
    reported_box: Box
    score: float
    last_frame: int
    missed: int = 0


def _box(box: Box) -> list[float]:
    return [round(box.x_min, 4), round(box.y_min, 4), round(box.x_max, 4), round(box.y_max, 4)]


class EventTracker:
    """Turns results into :class:`FleetEvent`\\ s; feed every result in order to :meth:`update`.

    Args:
        match_iou: the least overlap with which a detection continues a track.
        change_iou: a tracked box overlapping its last reported box by less than this is a change.
        end_after: frames a track may go unseen before it ends.
    """

    def __init__(self, *, match_iou: float = 0.3, change_iou: float = 0.6, end_after: int = 3) -> None:
        if end_after < 1:
            raise ValueError("end_after must be at least 1")
        self._match_iou = match_iou
        self._change_iou = change_iou
        self._end_after = end_after
        self._tracks: list[_Track] = []
        self._ids = itertools.count(1)
        self._lane: LaneStatus | None = None
        self._plate = ""

    def update(self, result: Result) -> list[FleetEvent]:
        """The events this result brings, in a stable order (lane, ended, appeared/changed, plate)."""
        events: list[FleetEvent] = []

        def emit(kind: str, **data: Any) -> None:
            events.append(FleetEvent(kind, result.frame_id, result.capture_timestamp_us, data))

        lane = result.lane
        if lane is not None:
            if lane.status is LaneStatus.LOST and self._lane not in (None, LaneStatus.LOST):
                emit("lane_lost", previous=self._lane.value if self._lane else None)
            elif lane.status is not LaneStatus.LOST and self._lane is LaneStatus.LOST:
                emit("lane_found", status=lane.status.value, offset_m=round(lane.offset_m, 4))
            self._lane = lane.status
        matched = self._match(result.detections)
        seen = {id(track) for track in matched.values()}
        for unseen in [t for t in self._tracks if id(t) not in seen]:
            unseen.missed += 1
            if unseen.missed >= self._end_after:
                self._tracks.remove(unseen)
                emit("detection_ended", track=unseen.track_id, label=unseen.label, last_frame=unseen.last_frame)
        for detection in result.detections:
            found = matched.get(id(detection))
            if found is None:
                track = _Track(next(self._ids), detection.label, detection.box, detection.box, detection.score, 0)
                self._tracks.append(track)
                emit("detection_appeared", **self._describe(track, detection))
                if detection.label.lower() in STOP_LABELS:
                    emit("stop_sign", track=track.track_id, score=round(detection.score, 3), box=_box(detection.box))
            else:
                track = found
                if detection.box.iou(track.reported_box) < self._change_iou:
                    track.reported_box = detection.box
                    emit("detection_changed", **self._describe(track, detection))
            track.box, track.score, track.last_frame, track.missed = (
                detection.box,
                detection.score,
                result.frame_id,
                0,
            )
        for line in result.text_lines:
            if line.text and line.text != self._plate:
                self._plate = line.text
                emit("plate_read", text=line.text, confidence=round(line.confidence, 3))
        return events

    @property
    def active(self) -> int:
        """How many tracks are open."""
        return len(self._tracks)

    def _match(self, detections: tuple[Detection, ...]) -> dict[int, _Track]:
        """Greedy matching by overlap, best pairs first: ``id(detection) -> track``."""
        pairs = sorted(
            (
                (detection.box.iou(track.box), index, track_index)
                for index, detection in enumerate(detections)
                for track_index, track in enumerate(self._tracks)
                if track.label == detection.label
            ),
            reverse=True,
        )
        used_detections: set[int] = set()
        used_tracks: set[int] = set()
        matched: dict[int, _Track] = {}
        for overlap, index, track_index in pairs:
            if overlap < self._match_iou:
                break
            if index in used_detections or track_index in used_tracks:
                continue
            used_detections.add(index)
            used_tracks.add(track_index)
            matched[id(detections[index])] = self._tracks[track_index]
        return matched

    @staticmethod
    def _describe(track: _Track, detection: Detection) -> dict[str, Any]:
        return {
            "track": track.track_id,
            "label": detection.label,
            "score": round(detection.score, 3),
            "box": _box(detection.box),
        }

"""A test track for the simulator: straights and circular arcs, signs at the roadside, a stop line.

Pure geometry in the world frame (x east, y north, headings counter-clockwise
from +x, metres). A position on the track is its arc length ``s`` along the
centre line and a lateral offset (left +), as in the sensor's lane state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Segment", "Track", "TrackSign", "default_track"]


@dataclass(frozen=True)
class Segment:
    """A piece of centre line: a straight (``curvature == 0``) or an arc.

    Attributes:
        s0: arc length at its start.
        length: its length, m.
        curvature: signed curvature, 1/m (positive bends left).
        x0, y0, heading0: its start pose.
    """

    s0: float
    length: float
    curvature: float
    x0: float
    y0: float
    heading0: float

    def pose(self, d: float) -> tuple[float, float, float]:
        """Centre-line pose ``d`` metres into the segment: (x, y, heading)."""
        k, h = self.curvature, self.heading0
        if abs(k) < 1e-9:
            return self.x0 + d * math.cos(h), self.y0 + d * math.sin(h), h
        h1 = h + k * d
        return self.x0 + (math.sin(h1) - math.sin(h)) / k, self.y0 - (math.cos(h1) - math.cos(h)) / k, h1

    def project(self, x: float, y: float) -> tuple[float, float]:
        """The closest point to (x, y) within the segment: (d along it, signed lateral offset, left +)."""
        k, h = self.curvature, self.heading0
        if abs(k) < 1e-9:
            dx, dy = x - self.x0, y - self.y0
            along = dx * math.cos(h) + dy * math.sin(h)
            d = min(max(along, 0.0), self.length)
            px, py, _ = self.pose(d)
            lat = -(x - px) * math.sin(h) + (y - py) * math.cos(h)
            return d, lat if d == along else math.copysign(math.hypot(x - px, y - py), lat or 1.0)
        r = 1.0 / k  # signed radius: the centre is on the left for k > 0
        cx, cy = self.x0 - r * math.sin(h), self.y0 + r * math.cos(h)
        ang0 = math.atan2(self.y0 - cy, self.x0 - cx)
        ang = math.atan2(y - cy, x - cx)
        sweep = (ang - ang0) * (1.0 if k > 0 else -1.0)
        sweep = (sweep + math.pi) % (2 * math.pi) - math.pi  # nearest representation
        if sweep < 0 and sweep < -0.5 * (2 * math.pi - self.length * abs(k)):
            sweep += 2 * math.pi
        d = min(max(sweep / abs(k), 0.0), self.length)
        px, py, ph = self.pose(d)
        lat = -(x - px) * math.sin(ph) + (y - py) * math.cos(ph)
        return d, lat


@dataclass(frozen=True)
class TrackSign:
    """A sign at the roadside.

    Attributes:
        kind: a scene object kind (``stop``, ``speed_limit`` ...).
        s: arc length of the sign (a stop sign stands at its stop line).
        side: +1 left of the lane, -1 right.
        text: the text on it (``"30"`` on a speed limit).
    """

    kind: str
    s: float
    side: int = -1
    text: str = ""


class Track:
    """A closed track built from pieces.

    Args:
        pieces: ``("straight", length)`` or ``("arc", radius, degrees)``
            (positive degrees turn left). The pieces must close the loop.
        lane_width_m: distance between the two lines' centres.
        signs: roadside signs.
        missing: ``(s_start, s_end, side)`` stretches where one line is not painted (side +1 left, -1 right).
        sign_gap_m: distance from a line to the sign beside it.

    Raises:
        ValueError: the pieces do not close, or a radius is below 1 m.
    """

    def __init__(
        self,
        pieces: list[tuple[str, float] | tuple[str, float, float]],
        *,
        lane_width_m: float = 0.45,
        signs: tuple[TrackSign, ...] = (),
        missing: tuple[tuple[float, float, int], ...] = (),
        sign_gap_m: float = 0.15,
    ) -> None:
        segments: list[Segment] = []
        x = y = h = s = 0.0
        for piece in pieces:
            if piece[0] == "straight":
                seg = Segment(s, float(piece[1]), 0.0, x, y, h)
            elif piece[0] == "arc" and len(piece) == 3:
                radius, degrees = float(piece[1]), float(piece[2])
                if radius < 1.0:
                    raise ValueError(f"track curves need a radius of at least 1 m, got {radius}")
                seg = Segment(s, radius * math.radians(abs(degrees)), math.copysign(1.0 / radius, degrees), x, y, h)
            else:
                raise ValueError(f"unknown track piece {piece!r}")
            segments.append(seg)
            x, y, h = seg.pose(seg.length)
            s += seg.length
        turns = h / (2 * math.pi)
        if math.hypot(x, y) > 1e-6 or abs(turns - round(turns)) > 1e-6:
            raise ValueError(f"track pieces do not close: end at ({x:.3f}, {y:.3f}), heading {math.degrees(h):.1f} deg")
        self.segments = tuple(segments)
        self.length = s
        self.lane_width_m = lane_width_m
        self.signs = signs
        self.missing = missing
        self.sign_gap_m = sign_gap_m

    def _segment(self, s: float) -> tuple[Segment, float]:
        s %= self.length
        for seg in self.segments:
            if s < seg.s0 + seg.length:
                return seg, s - seg.s0
        last = self.segments[-1]
        return last, last.length

    def pose(self, s: float, lateral: float = 0.0) -> tuple[float, float, float]:
        """World pose of the point ``lateral`` metres left of the centre line at arc length ``s``."""
        seg, d = self._segment(s)
        x, y, h = seg.pose(d)
        return x - lateral * math.sin(h), y + lateral * math.cos(h), h

    def curvature(self, s: float) -> float:
        """Curvature of the centre line at ``s``."""
        return self._segment(s)[0].curvature

    def mean_curvature(self, s: float, ahead_m: float) -> float:
        """Mean curvature over ``[s, s + ahead_m]`` (the heading change over that stretch ÷ its length)."""
        if ahead_m <= 0:
            return self.curvature(s)
        if ahead_m >= self.length:
            return 0.0
        turn = self.pose(s + ahead_m)[2] - self.pose(s)[2]
        return ((turn + math.pi) % (2 * math.pi) - math.pi) / ahead_m

    def project(self, x: float, y: float, s_hint: float | None = None) -> tuple[float, float]:
        """The track position nearest (x, y): (s in ``[0, length)``, lateral offset, left +).

        With ``s_hint`` only the stretch within 1.5 m of it is searched, so a car
        is never matched to another part of the track.
        """
        best: tuple[float, float, float] | None = None
        for seg in self.segments:
            if s_hint is not None:
                gap = min(
                    abs(_wrap(s_hint - seg.s0, self.length)), abs(_wrap(s_hint - seg.s0 - seg.length, self.length))
                )
                inside = _wrap(s_hint - seg.s0, self.length) % self.length <= seg.length
                if gap > 1.5 and not inside:
                    continue
            d, lat = seg.project(x, y)
            px, py, _ = seg.pose(d)
            dist = math.hypot(x - px, y - py)
            if best is None or dist < best[0]:
                best = (dist, (seg.s0 + d) % self.length, lat)
        assert best is not None
        return best[1], best[2]

    def line_painted(self, s: float, side: int) -> bool:
        """Whether the line on ``side`` (+1 left, -1 right) is painted at ``s``."""
        s %= self.length
        return not any(a <= s < b and side == sd for a, b, sd in self.missing)

    def sign_position(self, sign: TrackSign) -> tuple[float, float, float]:
        """World position of a sign's foot and the direction its face looks to (against the traffic)."""
        x, y, h = self.pose(sign.s, sign.side * (self.lane_width_m / 2 + self.sign_gap_m))
        return x, y, h + math.pi

    @property
    def stop_lines(self) -> tuple[float, ...]:
        """Arc lengths of the stop lines (one at every stop sign)."""
        return tuple(sign.s for sign in self.signs if sign.kind == "stop")


def _wrap(ds: float, length: float) -> float:
    return (ds + length / 2) % length - length / 2


def default_track(lane_width_m: float = 0.45) -> Track:
    """The simulator's loop (14.6 m): a speed-limit sign before an S-bend, a stretch without the
    left line, a 180-degree left curve (R 1 m), a stop sign with its stop line, a second S-bend
    and a second 180-degree curve.
    """
    pieces: list[tuple[str, float] | tuple[str, float, float]] = [
        ("straight", 1.5),
        ("arc", 1.2, 35.0),
        ("arc", 1.2, -35.0),
        ("straight", 1.2),
        ("arc", 1.0, 180.0),
        ("straight", 2.2),
        ("arc", 1.2, 35.0),
        ("arc", 1.2, -35.0),
        ("straight", 0.5),
        ("arc", 1.0, 180.0),
    ]
    bend = 1.2 * math.radians(35.0)
    s_straight2 = 1.5 + 2 * bend
    s_straight3 = s_straight2 + 1.2 + math.pi
    return Track(
        pieces,
        lane_width_m=lane_width_m,
        signs=(
            TrackSign("speed_limit", 1.0, -1, "30"),
            TrackSign("stop", s_straight3 + 1.8, -1),
        ),
        missing=((s_straight2 + 0.15, s_straight2 + 1.05, +1),),
    )

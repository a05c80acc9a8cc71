"""Lane centre lines built from constant-curvature pieces (S-bends, tight curves).

Conventions follow the seedcam lane frame: its origin is the centre-line point
nearest to the car's reference point (the floor point below the camera), x runs
along the lane tangent there and y to the left. A car at lateral offset ``o``
(left positive) and heading ``psi`` (car yawed left of the lane positive) sits at
``(0, o)`` in the lane frame, its x axis along ``(cos psi, sin psi)``. Curvature
is positive when the lane bends left.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

__all__ = ["CurvePiece", "LanePath", "car_to_lane_frame", "lane_frame_to_car"]

logger = logging.getLogger(__name__)

_STRAIGHT = 1e-5


def car_to_lane_frame(
    x: np.ndarray, y: np.ndarray, offset_m: float, heading_rad: float
) -> tuple[np.ndarray, np.ndarray]:
    """Car-frame floor points to lane-frame points.

    Args:
        x, y: car-frame coordinates (x forward, y left).
        offset_m: car offset from the centre line, left positive.
        heading_rad: car yaw relative to the lane tangent, left positive.

    Returns:
        Lane-frame ``(xl, yl)``.
    """
    c, s = math.cos(heading_rad), math.sin(heading_rad)
    return c * x - s * y, offset_m + s * x + c * y


def lane_frame_to_car(
    xl: np.ndarray, yl: np.ndarray, offset_m: float, heading_rad: float
) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`car_to_lane_frame`."""
    c, s = math.cos(heading_rad), math.sin(heading_rad)
    dy = yl - offset_m
    return c * xl + s * dy, -s * xl + c * dy


@dataclass(frozen=True)
class CurvePiece:
    """A constant-curvature piece of the centre line.

    Attributes:
        start_arc: arc length where the piece starts (the first piece extends backwards).
        kappa: curvature, left positive.
        x, y, theta: lane-frame pose of the centre line at ``start_arc``.
    """

    start_arc: float
    kappa: float
    x: float
    y: float
    theta: float

    def pose_at(self, arc: float) -> tuple[float, float, float]:
        """Pose ``(x, y, theta)`` at arc length ``arc`` on this piece's circle."""
        length = arc - self.start_arc
        k = self.kappa
        if abs(k) < _STRAIGHT:
            return self.x + length * math.cos(self.theta), self.y + length * math.sin(self.theta), self.theta
        th = self.theta + k * length
        return (
            self.x + (math.sin(th) - math.sin(self.theta)) / k,
            self.y - (math.cos(th) - math.cos(self.theta)) / k,
            th,
        )

    def local(self, xl: np.ndarray, yl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Signed lateral distance (left positive) and arc length of lane-frame points."""
        c, s = math.cos(self.theta), math.sin(self.theta)
        px, py = xl - self.x, yl - self.y
        dx, dy = c * px + s * py, -s * px + c * py
        k = self.kappa
        if abs(k) < _STRAIGHT:
            return dy, self.start_arc + dx
        sign = 1.0 if k > 0 else -1.0
        r = 1.0 / abs(k)
        dy = sign * dy
        lat = r - np.hypot(dx, dy - r)
        ang = np.arctan2(dx, r - dy)
        ang = np.where(ang < -0.5 * math.pi, ang + 2.0 * math.pi, ang)
        return sign * lat, self.start_arc + ang * r


class LanePath:
    """Centre line made of constant-curvature pieces, starting at the lane-frame origin.

    Args:
        kappa0: curvature at the reference point (and behind it).
        breaks: ``(arc, kappa)`` pairs: from arc length ``arc`` on, the curvature is ``kappa``.
            Arcs must increase and be positive.
    """

    def __init__(self, kappa0: float, breaks: tuple[tuple[float, float], ...] = ()) -> None:
        pieces = [CurvePiece(0.0, kappa0, 0.0, 0.0, 0.0)]
        last = 0.0
        for arc, kappa in breaks:
            if arc <= last:
                raise ValueError("curvature breaks must have increasing positive arcs")
            x, y, th = pieces[-1].pose_at(arc)
            pieces.append(CurvePiece(arc, kappa, x, y, th))
            last = arc
        self.pieces = tuple(pieces)

    @property
    def kappa0(self) -> float:
        """Curvature at the reference point."""
        return self.pieces[0].kappa

    def coords(self, xl: np.ndarray, yl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lateral offset and arc length of lane-frame points relative to the centre line."""
        lat, arc = self.pieces[0].local(xl, yl)
        for piece in self.pieces[1:]:
            beyond = arc >= piece.start_arc
            if not np.any(beyond):
                break
            lat_p, arc_p = piece.local(xl, yl)
            lat = np.where(beyond, lat_p, lat)
            arc = np.where(beyond, arc_p, arc)
        return lat, arc

    def point(self, arc: float, lateral: float) -> tuple[float, float, float]:
        """Lane-frame point at arc length ``arc`` and lateral offset ``lateral``, and the tangent angle there."""
        piece = self.pieces[0]
        for p in self.pieces[1:]:
            if arc >= p.start_arc:
                piece = p
        x, y, th = piece.pose_at(arc)
        return x - lateral * math.sin(th), y + lateral * math.cos(th), th

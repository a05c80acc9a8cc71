"""Lane geometry: a circle (exact; a straight line when kappa -> 0), optionally bent further ahead.

A curvature rate ``r`` (1/m^2) makes the curvature at arc length ``s`` ``kappa + r s``
(an S-bend when it changes sign in view), to third order: the circle's lateral
coordinate is shifted by ``r s^3 / 6``. The shift and its first two derivatives are
zero at the car, so the pose and the curvature there stay exact.

The *lane frame* has its origin at the centre-line point nearest to the car's
reference point (the floor point below the camera), x along the lane tangent
there and y to the left. A car at lateral offset ``o`` (left positive) and
heading ``psi`` (yawed left positive) sits at ``(0, o)`` in the lane frame.
"""

from __future__ import annotations

import math
from typing import TypeVar

import numpy as np

__all__ = [
    "MAX_LINE_RANGE_M",
    "car_to_lane",
    "centerline_point",
    "lane_to_car",
    "lateral_and_arc",
    "painted_stretch",
    "turned_angle",
]

#: lane markings are painted up to this distance along the lane
MAX_LINE_RANGE_M = 6.0
#: ... and while the lane has turned less than this from the car (about 110 degrees of a tight bend)
_MAX_TURN_RAD = 1.9
_KAPPA_EPS = 1e-6
#: coordinates: one point (float) or many (an array), the same kind in and out
Coords = TypeVar("Coords", np.ndarray, float)


def car_to_lane(x: Coords, y: Coords, offset_m: float, heading_rad: float) -> tuple[Coords, Coords]:
    """Transform car-frame floor points to the lane frame."""
    c, s = math.cos(heading_rad), math.sin(heading_rad)
    return c * x - s * y, offset_m + s * x + c * y


def lane_to_car(xl: Coords, yl: Coords, offset_m: float, heading_rad: float) -> tuple[Coords, Coords]:
    """Inverse of :func:`car_to_lane`."""
    c, s = math.cos(heading_rad), math.sin(heading_rad)
    dy = yl - offset_m
    return c * xl + s * dy, -s * xl + c * dy


def lateral_and_arc(xl: np.ndarray, yl: np.ndarray, kappa: float, rate: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Signed lateral distance (left +) from the centre line and arc length along it.

    Uses forms that stay exact and numerically stable as ``kappa`` goes to 0:
    ``lat = (2y - k r^2) / (1 + sqrt(1 - k (2y - k r^2)))`` and
    ``s = atan2(k x, 1 - k y) / k``; a curvature ``rate`` (1/m^2) then shifts
    ``lat`` by ``-rate s^3 / 6`` (see the module docstring).
    """
    if abs(kappa) < _KAPPA_EPS:
        lat, arc = np.asarray(yl, dtype=np.float64), np.asarray(xl, dtype=np.float64)
    else:
        a = 2.0 * yl - kappa * (xl * xl + yl * yl)
        q = np.clip(1.0 - kappa * a, 0.0, None)
        lat = a / (1.0 + np.sqrt(q))
        arc = np.arctan2(kappa * xl, 1.0 - kappa * yl) / kappa
    if rate:
        lat = lat - (rate / 6.0) * arc * arc * arc
    return lat, arc


def turned_angle(arc: np.ndarray, kappa: float, rate: float = 0.0) -> np.ndarray:
    """How far the lane has turned (rad) from the car to arc length ``arc``: ``kappa s + rate s^2 / 2``."""
    if not rate:
        return arc * kappa
    return arc * (kappa + 0.5 * rate * arc)


def painted_stretch(arc: np.ndarray, kappa: float, rate: float = 0.0) -> np.ndarray:
    """Where along the lane its markings are painted: from 0.3 m behind the car to
    :data:`MAX_LINE_RANGE_M` ahead, and no further round a bend than ~110 degrees."""
    keep = (arc > -0.3) & (arc < MAX_LINE_RANGE_M)
    if abs(kappa) >= _KAPPA_EPS or rate:
        keep &= np.abs(turned_angle(arc, kappa, rate)) < _MAX_TURN_RAD
    return keep


def centerline_point(arc_m: float, lateral_m: float, kappa: float) -> tuple[float, float]:
    """Lane-frame position of the point at arc length ``arc_m`` and lateral ``lateral_m``."""
    if abs(kappa) < _KAPPA_EPS:
        return arc_m, lateral_m
    ang = kappa * arc_m
    px = math.sin(ang) / kappa
    py = (1.0 - math.cos(ang)) / kappa
    return px - lateral_m * math.sin(ang), py + lateral_m * math.cos(ang)

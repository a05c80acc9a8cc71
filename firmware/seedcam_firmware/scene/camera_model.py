"""Pinhole camera mounted on the car, pitched down towards the floor.

Camera frame (OpenCV): x right, y down, z forward. Car frame (REP-103): x forward,
y left, z up, origin on the floor directly below the camera.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

__all__ = ["DEFAULT_CAMERA", "CameraModel", "GroundRays"]


@dataclass(frozen=True)
class CameraModel:
    """Intrinsics and mounting of the camera.

    Attributes:
        width, height: image size in pixels.
        hfov_deg: horizontal field of view (square pixels).
        pitch_deg: downward pitch of the optical axis.
        height_m: height of the optical centre above the floor.
    """

    width: int = 320
    height: int = 240
    hfov_deg: float = 95.0
    pitch_deg: float = 15.0
    height_m: float = 0.12

    @property
    def focal_px(self) -> float:
        """Focal length in pixels."""
        return (self.width / 2.0) / math.tan(math.radians(self.hfov_deg) / 2.0)

    @property
    def principal_point(self) -> tuple[float, float]:
        """(cx, cy) in pixel coordinates (pixel centres at integers)."""
        return (self.width - 1) / 2.0, (self.height - 1) / 2.0

    @property
    def horizon_row(self) -> float:
        """Image row of the horizon line."""
        return self.principal_point[1] - self.focal_px * math.tan(math.radians(self.pitch_deg))

    def project(self, points_car: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Project car-frame points (N x 3, z up from the floor) to pixels.

        Returns:
            ``(uv, depth)``: N x 2 pixel coordinates and N camera-forward depths
            (points with depth <= 0 are behind the camera and their uv is junk).
        """
        p = math.radians(self.pitch_deg)
        v = np.asarray(points_car, dtype=np.float64) - np.array([0.0, 0.0, self.height_m])
        xc = -v[:, 1]
        yc = -math.sin(p) * v[:, 0] - math.cos(p) * v[:, 2]
        zc = math.cos(p) * v[:, 0] - math.sin(p) * v[:, 2]
        cx, cy = self.principal_point
        f = self.focal_px
        safe = np.where(zc > 1e-9, zc, 1e-9)
        uv = np.stack([cx + f * xc / safe, cy + f * yc / safe], axis=1)
        return uv, zc

    def to_dict(self) -> dict[str, float]:
        """The geometry as a JSON-friendly dict (stored in model manifests)."""
        return {
            "width": self.width,
            "height": self.height,
            "hfov_deg": self.hfov_deg,
            "pitch_deg": self.pitch_deg,
            "height_m": self.height_m,
        }


DEFAULT_CAMERA = CameraModel()


@dataclass(frozen=True)
class GroundRays:
    """Per-pixel floor intersection of the camera rays (cached per camera).

    Attributes:
        ground: H x W bool, the ray hits the floor within ``max_range_m``.
        x, y: H x W floor coordinates in the car frame (0 where not ground).
        footprint: H x W approximate size of one pixel on the floor, metres.
        range_m: H x W distance from camera to the floor point.
        index: flat indices of the floor pixels; ``gx``, ``gy``, ``gfootprint``,
            ``grange`` are float32 copies of the above at those pixels only.
    """

    ground: np.ndarray
    x: np.ndarray
    y: np.ndarray
    footprint: np.ndarray
    range_m: np.ndarray
    index: np.ndarray
    gx: np.ndarray
    gy: np.ndarray
    gfootprint: np.ndarray
    grange: np.ndarray


@functools.lru_cache(maxsize=8)
def ground_rays(camera: CameraModel, max_range_m: float = 12.0) -> GroundRays:
    """Intersect every pixel's ray with the floor plane ``z = 0``."""
    p = math.radians(camera.pitch_deg)
    f = camera.focal_px
    cx, cy = camera.principal_point
    u, v = np.meshgrid(np.arange(camera.width, dtype=np.float64), np.arange(camera.height, dtype=np.float64))
    xn = (u - cx) / f
    yn = (v - cy) / f
    down = math.sin(p) + math.cos(p) * yn  # -z component of the (unnormalised) ray
    fwd = math.cos(p) - math.sin(p) * yn
    hit = down > 1e-6
    t = np.where(hit, camera.height_m / np.where(hit, down, 1.0), 0.0)
    x = t * fwd
    y = -t * xn
    rng = t * np.sqrt(1.0 + xn * xn + yn * yn)
    ground = hit & (np.hypot(x, y) < max_range_m)
    x = np.where(ground, x, 0.0)
    y = np.where(ground, y, 0.0)
    # lateral size of a pixel on the floor grows with the range
    footprint = np.where(ground, rng / f, 1.0)
    rng = np.where(ground, rng, 0.0)
    index = np.flatnonzero(ground)
    flat = [a.ravel()[index].astype(np.float32) for a in (x, y, footprint, rng)]
    arrays = (ground, x, y, footprint, rng, index, *flat)
    for arr in arrays:
        arr.setflags(write=False)
    return GroundRays(*arrays)

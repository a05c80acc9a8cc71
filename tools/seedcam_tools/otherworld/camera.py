"""A jittered pinhole camera (pitch, roll, height) around the shared seedcam mounting."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from seedcam_firmware.scene.camera_model import DEFAULT_CAMERA, CameraModel

__all__ = ["FloorMap", "JitterCamera", "sample_camera"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FloorMap:
    """Floor intersection of a set of rays.

    Attributes:
        hit: N bool, the ray reaches the floor ahead within range.
        x, y: N car-frame floor coordinates (metres; far-away values where not ``hit``).
        t: N ray parameters of the floor point (inf where not ``hit``).
    """

    hit: np.ndarray
    x: np.ndarray
    y: np.ndarray
    t: np.ndarray


class JitterCamera:
    """Pinhole camera with the seedcam intrinsics and a perturbed mounting.

    The car frame is REP-103 (x forward, y left, z up) with its origin on the
    floor below the nominal camera; only the optical centre height changes.

    Args:
        base: the nominal camera (intrinsics and mounting).
        dpitch_deg: extra downward pitch.
        roll_deg: roll about the optical axis (positive turns the image clockwise).
        dheight_m: extra height of the optical centre.
    """

    def __init__(
        self, base: CameraModel = DEFAULT_CAMERA, dpitch_deg: float = 0.0, roll_deg: float = 0.0, dheight_m: float = 0.0
    ) -> None:
        self.width = base.width
        self.height = base.height
        self.f = base.focal_px
        self.cx, self.cy = base.principal_point
        self.height_m = base.height_m + dheight_m
        p = math.radians(base.pitch_deg + dpitch_deg)
        r = math.radians(roll_deg)
        ex = np.array([0.0, -1.0, 0.0])
        ey = np.array([-math.sin(p), 0.0, -math.cos(p)])
        ez = np.array([math.cos(p), 0.0, -math.sin(p)])
        self.rot = np.stack([math.cos(r) * ex - math.sin(r) * ey, math.sin(r) * ex + math.cos(r) * ey, ez])
        self.centre = np.array([0.0, 0.0, self.height_m])

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Project car-frame points (N x 3) to pixels.

        Args:
            points: N x 3 car-frame points.

        Returns:
            ``(uv, depth)``: N x 2 pixels and N forward depths (uv is junk where depth <= 0).
        """
        p = np.asarray(points, dtype=np.float64).reshape(-1, 3) - self.centre
        r = self.rot
        cam = np.stack([p[:, 0] * r[i, 0] + p[:, 1] * r[i, 1] + p[:, 2] * r[i, 2] for i in range(3)], axis=-1)
        z = np.where(cam[:, 2] > 1e-6, cam[:, 2], 1e-6)
        uv = np.stack([self.cx + self.f * cam[:, 0] / z, self.cy + self.f * cam[:, 1] / z], axis=1)
        return uv, cam[:, 2]

    def rays(self) -> np.ndarray:
        """Unnormalised car-frame ray directions of all pixels, (H * W) x 3 in row-major order."""
        u, v = np.meshgrid(np.arange(self.width, dtype=np.float64), np.arange(self.height, dtype=np.float64))
        a = (u.ravel() - self.cx) / self.f
        b = (v.ravel() - self.cy) / self.f
        r = self.rot
        return np.stack([a * r[0, i] + b * r[1, i] + r[2, i] for i in range(3)], axis=-1)

    def floor(self, rays: np.ndarray, max_range_m: float = 30.0) -> FloorMap:
        """Intersect rays from the optical centre with the floor plane ``z = 0``.

        Args:
            rays: N x 3 ray directions from :meth:`rays`.
            max_range_m: farther floor points are not counted as hits.

        Returns:
            The floor map (points beyond range keep a capped, smooth position).
        """
        down = -rays[:, 2]
        ok = down > 1e-4
        t = np.where(ok, self.height_m / np.maximum(down, 1e-4), np.inf)
        tc = np.minimum(t, max_range_m * 4)
        x = tc * rays[:, 0]
        y = tc * rays[:, 1]
        hit = ok & (t * np.linalg.norm(rays, axis=-1) < max_range_m)
        return FloorMap(hit=hit, x=x, y=y, t=np.where(hit, t, np.inf))


def sample_camera(rng: np.random.Generator) -> JitterCamera:
    """Draw a slightly perturbed camera (pitch and roll within 1 degree, height within 8 mm).

    Args:
        rng: the scene's random generator.

    Returns:
        The jittered camera.
    """
    return JitterCamera(
        DEFAULT_CAMERA,
        dpitch_deg=float(rng.uniform(-1.0, 1.0)),
        roll_deg=float(rng.uniform(-1.0, 1.0)),
        dheight_m=float(rng.uniform(-0.008, 0.008)),
    )

"""Image-space compositing of projected 3D pieces: AA polygons, warped sprites, an owner buffer."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import cv2
import numpy as np

from .camera import JitterCamera

__all__ = ["Compositor", "FacePatch", "face_basis"]

logger = logging.getLogger(__name__)

_SHIFT = 4
_ONE = 1 << _SHIFT


def face_basis(normal_yaw: float, tilt: float = 0.0, roll: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Right, up and normal vectors of a vertical face whose normal points along ``normal_yaw``.

    Args:
        normal_yaw: direction the face looks at (car frame yaw).
        tilt: lean backwards, radians.
        roll: in-plane rotation, radians.

    Returns:
        ``(right, up, normal)`` as seen by a viewer in front of the face.
    """
    n = np.array([math.cos(normal_yaw), math.sin(normal_yaw), 0.0])
    z = np.array([0.0, 0.0, 1.0])
    right = np.cross(-n, z)
    up = z * math.cos(tilt) + n * math.sin(tilt) * -1.0
    n = np.cross(right, up)
    cr, sr = math.cos(roll), math.sin(roll)
    return cr * right + sr * up, -sr * right + cr * up, n


@dataclass
class FacePatch:
    """Where a labelled face landed in the image.

    Attributes:
        roi: ``(x0, y0, x1, y1)`` integer region that holds its mask.
        mask: bool mask of the face pixels (alpha >= 0.5) inside ``roi``.
        box: clipped float pixel box of the face outline, or None when it is out of view.
        inside: fraction of the outline area inside the image.
    """

    roi: tuple[int, int, int, int]
    mask: np.ndarray
    box: tuple[float, float, float, float] | None
    inside: float


class Compositor:
    """Paints pieces far-to-near into a float BGR image and records who owns each pixel.

    Args:
        image: H x W x 3 float32 BGR background (floor and wall), modified in place.
        camera: the scene camera.
    """

    def __init__(self, image: np.ndarray, camera: JitterCamera) -> None:
        self.image = image
        self.camera = camera
        self.h, self.w = image.shape[:2]
        self.owner = np.zeros((self.h, self.w), np.int16)

    def project(self, pts: np.ndarray) -> np.ndarray | None:
        """Project car-frame points; None when any lies too close to or behind the camera."""
        uv, depth = self.camera.project(pts)
        if np.any(depth < 0.03):
            return None
        return uv

    def _roi(self, uv: np.ndarray) -> tuple[int, int, int, int] | None:
        x0 = max(int(math.floor(uv[:, 0].min())) - 1, 0)
        y0 = max(int(math.floor(uv[:, 1].min())) - 1, 0)
        x1 = min(int(math.ceil(uv[:, 0].max())) + 2, self.w)
        y1 = min(int(math.ceil(uv[:, 1].max())) + 2, self.h)
        if x1 <= x0 or y1 <= y0:
            return None
        return x0, y0, x1, y1

    def polygon_alpha(self, uv: np.ndarray) -> tuple[tuple[int, int, int, int], np.ndarray] | None:
        """Anti-aliased coverage of a convex image polygon, as (roi, alpha in [0, 1])."""
        roi = self._roi(uv)
        if roi is None:
            return None
        x0, y0, x1, y1 = roi
        mask = np.zeros((y1 - y0, x1 - x0), np.uint8)
        pts = np.round((uv - [x0, y0]) * _ONE).astype(np.int32)
        cv2.fillConvexPoly(mask, pts, 255, cv2.LINE_AA, _SHIFT)
        return roi, mask.astype(np.float32) / 255.0

    def fill(
        self, pts3d: np.ndarray, colour: np.ndarray | tuple[float, float, float], owner: int = -1, opacity: float = 1.0
    ) -> bool:
        """Fill the projection of a convex 3D polygon (or the hull of 3D points) with a flat colour."""
        uv = self.project(pts3d)
        if uv is None:
            return False
        hull = cv2.convexHull(uv.astype(np.float32)).reshape(-1, 2)
        got = self.polygon_alpha(hull)
        if got is None:
            return False
        (x0, y0, x1, y1), alpha = got
        alpha = alpha * opacity
        view = self.image[y0:y1, x0:x1]
        view *= 1.0 - alpha[..., None]
        view += alpha[..., None] * np.asarray(colour, np.float32)
        if owner != 0:
            self.owner[y0:y1, x0:x1][alpha >= 0.5] = owner
        return True

    def shadow(self, pts3d: np.ndarray, strength: float, blur_px: float = 2.0) -> None:
        """Darken the floor under a projected footprint (soft contact shadow)."""
        uv = self.project(pts3d)
        if uv is None:
            return
        pad = int(3 * blur_px) + 2
        got = self.polygon_alpha(np.vstack([uv, uv[:1]]))
        if got is None:
            return
        (x0, y0, x1, y1), alpha = got
        xa, ya, xb, yb = max(x0 - pad, 0), max(y0 - pad, 0), min(x1 + pad, self.w), min(y1 + pad, self.h)
        big = np.zeros((yb - ya, xb - xa), np.float32)
        big[y0 - ya : y1 - ya, x0 - xa : x1 - xa] = alpha
        big = cv2.GaussianBlur(big, (0, 0), blur_px)
        self.image[ya:yb, xa:xb] *= (1.0 - strength * big)[..., None]

    def sprite(
        self, rgba: np.ndarray, corners3d: np.ndarray, outline3d: np.ndarray, owner: int, shade: float = 1.0
    ) -> FacePatch | None:
        """Warp a sprite onto the projection of its 3D corners and composite it.

        Args:
            rgba: H x W x 4 uint8 or float32 sprite (BGR + straight alpha).
            corners3d: 4 x 3 car-frame corners (top-left, top-right, bottom-right, bottom-left).
            outline3d: N x 3 car-frame face outline (for the truth box and the inside fraction).
            owner: owner id written where the face is opaque (positive for labelled faces).
            shade: light level multiplying the face colour.

        Returns:
            The face patch, or None when it does not reach the image.
        """
        uv = self.project(corners3d)
        ol = self.project(outline3d)
        if uv is None or ol is None:
            return None
        roi = self._roi(uv)
        if roi is None:
            return None
        x0, y0, x1, y1 = roi
        sp = rgba.astype(np.float32) / (255.0 if rgba.dtype == np.uint8 else 1.0)
        pm = np.concatenate([sp[..., :3] * sp[..., 3:] * shade, sp[..., 3:]], axis=-1)
        span = max(np.ptp(uv[:, 0]), np.ptp(uv[:, 1]), 1.0)
        sh, sw = pm.shape[:2]
        factor = 1.5 * span / max(sh, sw)
        if factor < 1.0:
            nw, nh = max(2, int(round(sw * factor))), max(2, int(round(sh * factor)))
            pm = cv2.resize(pm, (nw, nh), interpolation=cv2.INTER_AREA)
            sh, sw = nh, nw
        src = np.array([[0, 0], [sw, 0], [sw, sh], [0, sh]], np.float32) - 0.5
        hom = cv2.getPerspectiveTransform(src, (uv - [x0, y0]).astype(np.float32))
        warped = cv2.warpPerspective(
            pm,
            hom,
            (x1 - x0, y1 - y0),
            flags=cv2.INTER_LINEAR,
            borderMode=cv2.BORDER_CONSTANT,
            borderValue=(0, 0, 0, 0),
        )
        alpha = warped[..., 3]
        view = self.image[y0:y1, x0:x1]
        view *= 1.0 - alpha[..., None]
        view += warped[..., :3]
        mask = alpha >= 0.5
        self.owner[y0:y1, x0:x1][mask] = owner
        return FacePatch(roi=roi, mask=mask, box=None, inside=0.0) if owner <= 0 else self._truth(roi, mask, ol)

    def _truth(self, roi: tuple[int, int, int, int], mask: np.ndarray, outline_uv: np.ndarray) -> FacePatch:
        poly = outline_uv.astype(np.float32)
        full = abs(cv2.contourArea(poly))
        frame = np.array([[0, 0], [self.w, 0], [self.w, self.h], [0, self.h]], np.float32) - 0.5
        area, inter = cv2.intersectConvexConvex(poly, frame)
        if inter is None or area <= 1.0 or full <= 0:
            return FacePatch(roi=roi, mask=mask, box=None, inside=0.0)
        pts = inter.reshape(-1, 2) + 0.5  # pixel centres at integers -> edges at integers
        box = (
            float(np.clip(pts[:, 0].min(), 0, self.w)),
            float(np.clip(pts[:, 1].min(), 0, self.h)),
            float(np.clip(pts[:, 0].max(), 0, self.w)),
            float(np.clip(pts[:, 1].max(), 0, self.h)),
        )
        return FacePatch(roi=roi, mask=mask, box=box, inside=float(min(area / full, 1.0)))

    def visible_fraction(self, patch: FacePatch, owner: int) -> float:
        """Part of a face's in-image pixels that still show the face after everything was painted."""
        x0, y0, x1, y1 = patch.roi
        total = int(patch.mask.sum())
        if total == 0:
            return 1.0
        return float((self.owner[y0:y1, x0:x1][patch.mask] == owner).sum()) / total

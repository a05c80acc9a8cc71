"""Plate crops for the OCR model: cut a detected plate out of a frame and rectify it.

:func:`crop_plate` is the one function that turns a detector's plate box into the
OCR model's pixels. The firmware calls it on every detected plate and the OCR
training data is made with it too, so the model is trained on exactly the pixels
it sees on the board.

Steps:

1. Grow the box by ``margin`` of its size on every side (a detector's box is
   rarely tight).
2. Look for the plate around the box: a bright, roughly rectangular blob
   (Otsu threshold, then a higher one; external contours) that agrees with the
   box in place and size and does not run into the background. Its corners are
   the blob's minimum-area rectangle, or the convex quadrilateral that
   ``approxPolyDP`` makes of its hull when that is a plausible perspective view
   of a plate (near-vertical sides, covering the rectangle); grown a little so
   that a blurred edge never cuts the text.
3. Perspective-warp that quadrilateral onto the ``out_width x out_height``
   output (a yawed or tilted plate comes out flat). When no plausible
   quadrilateral is found, the grown box itself is resized to the output.

Coordinates: boxes are normalised ``(x0, y0, x1, y1)`` with 0..1 spanning the
frame's pixel edges (pixel ``i`` covers ``[i, i + 1) / W``), the convention of
the scene renderer's truth boxes. Parts of the region outside the frame are
filled by repeating the frame's edge pixels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import cv2
import numpy as np

from .boxes import box_iou

__all__ = ["crop_box", "crop_plate", "find_plate_quad"]

#: height in pixels of the working image the plate is searched in
_WORK_HEIGHT = 64
#: the widest working image
_WORK_MAX_WIDTH = 512
#: the plate is searched for in the box grown by at least this fraction of its size on each side
_SEARCH_MARGIN = 0.25
#: grey-level range below which a region counts as flat (no plate to find)
_MIN_CONTRAST = 24
#: accepted width / height of the found quadrilateral (a yawed plate looks narrower)
_ASPECT_RANGE = (1.4, 7.0)
#: a plate blob covers at least this fraction of the detector box (boxes are trusted to about +-20 %)
_MIN_AREA_OF_PRIOR = 0.25
#: blob area / area of its fitted quadrilateral must reach this
_MIN_RECTANGULARITY = 0.8
#: largest tilt from vertical of the left / right sides, and from horizontal of the top / bottom ones
_MAX_SIDE_TILT_DEG = 20.0
_MAX_EDGE_TILT_DEG = 25.0
#: a perspective quadrilateral from approxPolyDP must cover this much of the blob's minimum-area
#: rectangle, and its left / right sides must be this close to vertical, to be used instead of it
_MIN_QUAD_COVER = 0.92
_MAX_QUAD_SIDE_TILT_DEG = 10.0
#: the quadrilateral's bounding box must overlap the (clipped) detector box this much (IoU; the
#: bright blob is the plate's face inside its dark rim, smaller than the box) ...
_MIN_IOU = 0.3
#: ... and its centre must lie this close to the box's centre (fraction of the box size)
_MAX_CENTRE_OFFSET = 0.2
#: the found quadrilateral grows by these fractions of its width / height on each side
#: (a blurred edge must not cut off the text)
_QUAD_PAD = (0.03, 0.06)
#: the largest supersampling factor used before area-averaging down to the output
_MAX_SUPERSAMPLE = 4


def _check_inputs(
    frame_bgr: np.ndarray, box: Sequence[float], out_width: int, out_height: int, margin: float
) -> tuple[float, float, float, float]:
    if not isinstance(frame_bgr, np.ndarray) or frame_bgr.ndim != 3 or frame_bgr.shape[2] != 3:
        raise ValueError(f"expected an H x W x 3 BGR frame, got {getattr(frame_bgr, 'shape', type(frame_bgr))}")
    if frame_bgr.dtype != np.uint8 or frame_bgr.shape[0] < 1 or frame_bgr.shape[1] < 1:
        raise ValueError(f"expected a non-empty uint8 frame, got {frame_bgr.shape} {frame_bgr.dtype}")
    try:
        x0, y0, x1, y1 = (float(v) for v in box)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"box must be four numbers (x0, y0, x1, y1), got {box!r}") from exc
    if not all(math.isfinite(v) for v in (x0, y0, x1, y1)):
        raise ValueError(f"box must be finite, got {box!r}")
    if x1 <= x0 or y1 <= y0:
        raise ValueError(f"box must have positive area (x1 > x0, y1 > y0), got {box!r}")
    if int(out_width) != out_width or int(out_height) != out_height or out_width < 1 or out_height < 1:
        raise ValueError(f"output size must be positive integers, got {out_width} x {out_height}")
    if not math.isfinite(margin) or margin < 0:
        raise ValueError(f"margin must be finite and >= 0, got {margin}")
    return x0, y0, x1, y1


# Four points are few: plain float arithmetic on them is several times faster than numpy's calls.


def _order_corners(pts: np.ndarray) -> np.ndarray:
    """Four points as (top-left, top-right, bottom-right, bottom-left)."""
    points = [(float(x), float(y)) for x, y in np.asarray(pts).reshape(4, 2).tolist()]
    cx = (points[0][0] + points[1][0] + points[2][0] + points[3][0]) / 4.0
    cy = (points[0][1] + points[1][1] + points[2][1] + points[3][1]) / 4.0
    # clockwise in image coordinates (y down), starting anywhere
    points.sort(key=lambda p: math.atan2(p[1] - cy, p[0] - cx))
    start = min(range(4), key=lambda i: points[i][0] + points[i][1])  # top-left: smallest x + y
    return np.array(points[start:] + points[:start], np.float64)


def _distance(a: Sequence[float], b: Sequence[float]) -> float:
    dx, dy = float(b[0]) - float(a[0]), float(b[1]) - float(a[1])
    return math.sqrt(dx * dx + dy * dy)


def _quad_size(q: np.ndarray) -> tuple[float, float]:
    """Mean width and height of an ordered quadrilateral."""
    w = (_distance(q[0], q[1]) + _distance(q[3], q[2])) / 2.0
    h = (_distance(q[0], q[3]) + _distance(q[1], q[2])) / 2.0
    return w, h


def _percentile(pixels: np.ndarray, q: float) -> float:
    """``np.percentile(pixels, q)`` (linear interpolation) of uint8 pixels, from their histogram."""
    n = pixels.size
    index = (n - 1) * (q / 100.0)
    below = math.floor(index)
    cumulative = np.cumsum(np.bincount(pixels.ravel(), minlength=256))
    a = int(np.searchsorted(cumulative, below, side="right"))  # the value of rank `below` (0-based)
    b = int(np.searchsorted(cumulative, min(below + 1, n - 1), side="right"))
    t = index - below
    return b - (b - a) * (1.0 - t) if t >= 0.5 else a + (b - a) * t


def _side_angles_ok(q: np.ndarray, max_side_tilt_deg: float = 0.0) -> bool:
    """Left/right sides near vertical and top/bottom sides near horizontal (ordered quadrilateral)."""
    max_side = max_side_tilt_deg or _MAX_SIDE_TILT_DEG
    for a, b, vertical in ((q[0], q[1], False), (q[3], q[2], False), (q[0], q[3], True), (q[1], q[2], True)):
        dx, dy = abs(b[0] - a[0]), abs(b[1] - a[1])
        tilt = math.degrees(math.atan2(dx, dy) if vertical else math.atan2(dy, dx))
        if tilt > (max_side if vertical else _MAX_EDGE_TILT_DEG):
            return False
    return True


def _candidate(cnt: np.ndarray, valid: tuple[int, int, int, int], prior_area: float) -> np.ndarray | None:
    """The ordered edge-coordinate quadrilateral of a plate-like contour, or None."""
    area = float(cv2.contourArea(cnt))
    if area < _MIN_AREA_OF_PRIOR * prior_area:
        return None
    x, y, w, h = cv2.boundingRect(cnt)
    touches = (x <= valid[0]) + (y <= valid[1]) + (x + w >= valid[2]) + (y + h >= valid[3])
    if touches >= 3:  # merged with the background (the plate cannot span the search region)
        return None
    rect = _order_corners(cv2.boxPoints(cv2.minAreaRect(cnt)))
    rect_area = abs(float(cv2.contourArea(rect.astype(np.float32))))
    if rect_area <= 0 or area / rect_area < _MIN_RECTANGULARITY:
        return None
    # a perspective quadrilateral replaces the rectangle only when it is a plausible view of the
    # plate (near-vertical sides) and covers about as much: blur or dark text eating into the
    # blob's edge makes approxPolyDP slant a side, which would shear the text
    quad = rect
    hull = cv2.convexHull(cnt)
    approx = cv2.approxPolyDP(hull, 0.04 * cv2.arcLength(hull, True), True)
    if len(approx) == 4 and cv2.isContourConvex(approx):
        poly = _order_corners(approx)
        poly_area = abs(float(cv2.contourArea(poly.astype(np.float32))))
        if poly_area >= _MIN_QUAD_COVER * rect_area and _side_angles_ok(poly, _MAX_QUAD_SIDE_TILT_DEG):
            quad = poly
    qw, qh = _quad_size(quad)
    if qh <= 0 or not _ASPECT_RANGE[0] <= qw / qh <= _ASPECT_RANGE[1] or not _side_angles_ok(quad):
        return None
    # contour points are pixel centres: the blob's edge lies half a pixel further out
    return quad + 0.5 + 0.5 * np.sign(quad - quad.mean(axis=0))


def find_plate_quad(
    gray: np.ndarray, valid: tuple[int, int, int, int], prior: tuple[float, float, float, float]
) -> np.ndarray | None:
    """The plate's bright quadrilateral in a grey working image, or None.

    Tries Otsu's threshold of the in-frame pixels and a higher one between it
    and the bright end of the box (for plates that touch a bright background);
    keeps the plate-like blob that overlaps the prior box best.

    Args:
        gray: uint8 grey image of the search region (outside-frame parts black).
        valid: ``(x0, y0, x1, y1)`` integer pixel rectangle of ``gray`` that lies
            inside the frame (thresholds are chosen from these pixels only).
        prior: the detector box in ``gray``'s edge coordinates, clipped to ``valid``.

    Returns:
        4 x 2 float64 corners (top-left, top-right, bottom-right, bottom-left) in
        ``gray``'s edge coordinates, or None when no blob looks like a plate.
    """
    vx0, vy0, vx1, vy1 = valid
    smooth = cv2.GaussianBlur(gray, (3, 3), 0)
    inside = smooth[vy0:vy1, vx0:vx1]
    if inside.size < 16 or int(inside.max()) - int(inside.min()) < _MIN_CONTRAST:
        return None  # flat region: nothing to find
    otsu, _ = cv2.threshold(inside, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    px0, py0 = math.floor(prior[0]), math.floor(prior[1])
    in_prior = smooth[py0 : math.ceil(prior[3]), px0 : math.ceil(prior[2])]
    bright = _percentile(in_prior, 90) if in_prior.size else float(inside.max())
    prior_area = (prior[2] - prior[0]) * (prior[3] - prior[1])
    best: tuple[float, np.ndarray] | None = None
    for thr in sorted({float(otsu), (float(otsu) + bright) / 2.0}):
        binary = np.zeros_like(gray)
        binary[vy0:vy1, vx0:vx1] = cv2.threshold(inside, thr, 255, cv2.THRESH_BINARY)[1]  # inside > thr
        contours, _ = cv2.findContours(binary, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        for cnt in contours:
            quad = _candidate(cnt, valid, prior_area)
            if quad is None:
                continue
            bb = (float(quad[:, 0].min()), float(quad[:, 1].min()), float(quad[:, 0].max()), float(quad[:, 1].max()))
            off_x = abs((bb[0] + bb[2]) - (prior[0] + prior[2])) / 2 / (prior[2] - prior[0])
            off_y = abs((bb[1] + bb[3]) - (prior[1] + prior[3])) / 2 / (prior[3] - prior[1])
            score = box_iou(bb, prior)
            if max(off_x, off_y) > _MAX_CENTRE_OFFSET or score < _MIN_IOU:
                continue
            if best is None or score > best[0]:
                best = (score, quad)
    return None if best is None else best[1]


def _grow_quad(quad: np.ndarray, pad_x: float, pad_y: float) -> np.ndarray:
    """``quad`` grown by ``pad_x`` / ``pad_y`` of its width / height on each side, in its own perspective."""
    unit = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], np.float32)
    m = cv2.getPerspectiveTransform(unit, quad.astype(np.float32))
    grown = np.array([[-pad_x, -pad_y], [1 + pad_x, -pad_y], [1 + pad_x, 1 + pad_y], [-pad_x, 1 + pad_y]], np.float32)
    return cv2.perspectiveTransform(grown[None], m)[0].astype(np.float64)


def _warp_quad(frame: np.ndarray, quad: np.ndarray, out_w: int, out_h: int) -> np.ndarray:
    """Warp the frame's quadrilateral ``quad`` (edge coordinates, ordered) to ``out_w x out_h``."""
    w, h = _quad_size(quad)
    ss = int(min(_MAX_SUPERSAMPLE, max(1, math.ceil(max(w / out_w, h / out_h)))))
    ww, wh = out_w * ss, out_h * ss
    dst = np.array([[0, 0], [ww, 0], [ww, wh], [0, wh]], np.float32) - 0.5
    src = quad.astype(np.float32) - 0.5
    m = cv2.getPerspectiveTransform(dst, src)
    out = cv2.warpPerspective(
        frame, m, (ww, wh), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderMode=cv2.BORDER_REPLICATE
    )
    if ss > 1:
        out = cv2.resize(out, (out_w, out_h), interpolation=cv2.INTER_AREA)
    return out


def _grown_box(bx0: float, by0: float, bx1: float, by1: float, margin: float) -> np.ndarray:
    """The pixel box grown by ``margin`` of its size on each side, as an ordered quadrilateral."""
    mx, my = margin * (bx1 - bx0), margin * (by1 - by0)
    return np.array(
        [[bx0 - mx, by0 - my], [bx1 + mx, by0 - my], [bx1 + mx, by1 + my], [bx0 - mx, by1 + my]], np.float64
    )


def crop_box(
    frame_bgr: np.ndarray,
    box: tuple[float, float, float, float],
    out_width: int,
    out_height: int,
    *,
    margin: float = 0.1,
) -> np.ndarray:
    """The box itself, grown by ``margin`` of its size on each side, resized to the output (no plate search).

    What :func:`crop_plate` returns when it finds no plate in the box; arguments, result and errors as there.
    """
    x0, y0, x1, y1 = _check_inputs(frame_bgr, box, out_width, out_height, margin)
    fh, fw = frame_bgr.shape[:2]
    return _warp_quad(
        frame_bgr, _grown_box(x0 * fw, y0 * fh, x1 * fw, y1 * fh, margin), int(out_width), int(out_height)
    )


def crop_plate(
    frame_bgr: np.ndarray,
    box: tuple[float, float, float, float],
    out_width: int,
    out_height: int,
    *,
    margin: float = 0.1,
    frame_gray: np.ndarray | None = None,
) -> np.ndarray:
    """The rectified crop of a plate the detector boxed in ``frame_bgr``.

    Args:
        frame_bgr: H x W x 3 uint8 BGR camera frame.
        box: normalised ``(x0, y0, x1, y1)`` plate box; may reach outside 0..1.
        out_width, out_height: size of the returned crop in pixels.
        margin: the box grows by this fraction of its width / height on each side
            before the plate is searched for (and is the crop when none is found).
        frame_gray: ``frame_bgr`` converted to grey (``cv2.COLOR_BGR2GRAY``), when the
            caller crops several plates from one frame; else it is converted here.

    Returns:
        ``out_height x out_width x 3`` uint8 BGR crop: the plate's bright
        quadrilateral warped flat when one is found, else the grown box resized.

    Raises:
        ValueError: not an H x W x 3 uint8 frame, a box that is not four finite
            numbers with ``x1 > x0`` and ``y1 > y0``, a non-positive output size,
            or a negative margin.
    """
    x0, y0, x1, y1 = _check_inputs(frame_bgr, box, out_width, out_height, margin)
    out_w, out_h = int(out_width), int(out_height)
    fh, fw = frame_bgr.shape[:2]
    bx0, by0, bx1, by1 = x0 * fw, y0 * fh, x1 * fw, y1 * fh  # edge coordinates, pixels
    bw, bh = bx1 - bx0, by1 - by0
    fallback = _grown_box(bx0, by0, bx1, by1, margin)
    search = max(margin, _SEARCH_MARGIN)
    rx0, ry0 = bx0 - search * bw, by0 - search * bh
    rx1, ry1 = bx1 + search * bw, by1 + search * bh

    # search for the plate in a grey working image of the region, _WORK_HEIGHT rows high
    sy = _WORK_HEIGHT / (ry1 - ry0)
    work_w = int(min(_WORK_MAX_WIDTH, max(8, round((rx1 - rx0) * sy))))
    sx = work_w / (rx1 - rx0)
    # work = (frame - r0) * scale in edge coordinates, written for OpenCV's pixel-centre maps
    affine = np.array([[sx, 0.0, (0.5 - rx0) * sx - 0.5], [0.0, sy, (0.5 - ry0) * sy - 0.5]])
    if frame_gray is None:
        frame_gray = cv2.cvtColor(frame_bgr, cv2.COLOR_BGR2GRAY)
    elif frame_gray.shape != frame_bgr.shape[:2]:
        raise ValueError(f"frame_gray is {frame_gray.shape}, the frame is {frame_bgr.shape[:2]}")
    gray = cv2.warpAffine(
        frame_gray,
        affine,
        (work_w, _WORK_HEIGHT),
        flags=cv2.INTER_LINEAR,
        borderMode=cv2.BORDER_CONSTANT,
    )
    valid = (
        min(max(math.ceil(-rx0 * sx), 0), work_w),
        min(max(math.ceil(-ry0 * sy), 0), _WORK_HEIGHT),
        min(max(math.floor((fw - rx0) * sx), 0), work_w),
        min(max(math.floor((fh - ry0) * sy), 0), _WORK_HEIGHT),
    )
    prior = (
        max((bx0 - rx0) * sx, valid[0]),
        max((by0 - ry0) * sy, valid[1]),
        min((bx1 - rx0) * sx, valid[2]),
        min((by1 - ry0) * sy, valid[3]),
    )
    quad = None
    if valid[2] - valid[0] >= 4 and valid[3] - valid[1] >= 4 and prior[2] > prior[0] and prior[3] > prior[1]:
        quad = find_plate_quad(gray, valid, prior)
    if quad is None:
        return _warp_quad(frame_bgr, fallback, out_w, out_h)
    quad = _grow_quad(quad, *_QUAD_PAD) / np.array([sx, sy]) + np.array([rx0, ry0])  # frame edge coordinates
    return _warp_quad(frame_bgr, quad, out_w, out_h)

"""Sign policy: stop signs (full stop before the line, hold, go, ignore that sign) and speed-limit zones.

Detections count only when confirmed: the label must be seen with enough score in
``k`` of the last ``n`` results. Distances come from the size of the sign's box
and the known size of sign faces and camera mounting, and are turned into
odometer positions (distance along the car's path), so the car can keep
approaching a stop line after the sign has left the camera's view. A speed-limit
reading about where a stop sign was read in the last ``n`` results does not
count: it is that stop sign, misread (seen far off and turned, a stop sign can
pass for a speed-limit sign in a few frames; the stop sign wins).
"""

from __future__ import annotations

import collections
import math
from dataclasses import dataclass

from seedcam.agv.config import AgvConfig
from seedcam.types import Box, Detection, Result

__all__ = ["SignEvent", "SignPolicy", "sign_distance"]

_EDGE = 0.004  #: a box this close to the image's top or bottom edge is clipped: its height is not the sign's
_STOPPED_MPS = 0.01


@dataclass(frozen=True)
class SignEvent:
    """Something the sign policy decided.

    Attributes:
        time: host monotonic instant.
        kind: ``stop_seen`` (confirmed, approaching), ``stopped`` (full stop reached),
            ``go`` (hold over), ``speed_limit`` (zone entered), ``speed_limit_end``.
        odometer_m: the car's odometer at the decision.
        line_odometer_m: where the policy puts the stop line or the zone's end.
        value: the zone's speed (speed_limit), or the hold time (go).
    """

    time: float
    kind: str
    odometer_m: float
    line_odometer_m: float = math.nan
    value: float = math.nan


def sign_distance(box: Box, frame_width: int, frame_height: int, config: AgvConfig) -> float | None:
    """Forward distance (m, car frame) from the camera's floor point to a sign, from its box's height.

    The top and bottom edges of an upright face at a known height project to
    rows that depend only on its forward distance (not on its lateral place),
    so the box's height is inverted exactly through the pitched pinhole camera.
    The width is not used: off the optical axis a pitched camera slants the
    face's sides, which widens its box.

    Returns:
        The distance, or None for a degenerate box or one cut by the top or bottom of the image.
    """
    if frame_width <= 0 or frame_height <= 0:
        return None
    if box.y_min <= _EDGE or box.y_max >= 1.0 - _EDGE:
        return None
    size = box.height * frame_height - config.sign_box_pad_px  # the face's own projected height
    if size < 2.0:
        return None
    focal = (frame_width / 2.0) / math.tan(config.camera_hfov_rad / 2.0)
    c, s = math.cos(config.camera_pitch_rad), math.sin(config.camera_pitch_rad)
    top = config.sign_centre_height_m + config.sign_face_m / 2 - config.camera_height_m
    bottom = top - config.sign_face_m

    def height_px(x: float) -> float:
        return focal * ((-s * x - c * bottom) / (c * x - s * bottom) - (-s * x - c * top) / (c * x - s * top))

    near, far = 0.1, 20.0  # height_px falls as x grows
    if size >= height_px(near):
        return near
    if size <= height_px(far):
        return None
    for _ in range(50):
        mid = 0.5 * (near + far)
        near, far = (mid, far) if height_px(mid) > size else (near, mid)
    return 0.5 * (near + far)


def _number(text: str) -> float | None:
    digits = "".join(ch for ch in text if ch.isdigit())
    return float(digits) if digits and len(digits) <= 3 else None


class _Votes:
    """k-of-n confirmation of one kind of sign."""

    def __init__(self, k: int, n: int) -> None:
        self.k = k
        self._seen: collections.deque[bool] = collections.deque(maxlen=n)

    def add(self, seen: bool) -> bool:
        self._seen.append(seen)
        return sum(self._seen) >= self.k

    def clear(self) -> None:
        self._seen.clear()

    def any(self) -> bool:
        return any(self._seen)


class SignPolicy:
    """Speed caps from traffic signs.

    Args:
        config: the controller settings.
    """

    def __init__(self, config: AgvConfig) -> None:
        self.config = config
        self.events: list[SignEvent] = []
        self.state = "cruise"  #: cruise | approach | hold
        self._sign_labels = frozenset(config.stop_labels) | frozenset(config.speed_limit_labels)
        self._stop_votes = _Votes(config.confirm_k, config.confirm_n)
        self._limit_votes = _Votes(config.confirm_k, config.confirm_n)
        self._line_estimates: collections.deque[float] = collections.deque(maxlen=7)
        #: where stop signs were read in each of the last n results (odometer m), for label conflicts
        self._recent_stops: collections.deque[tuple[float, ...]] = collections.deque(maxlen=config.confirm_n)
        self._line_odo = math.nan
        self._hold_since = math.nan
        self._ignore_stop_until = -math.inf
        self._zone_end = -math.inf
        self._zone_speed = config.speed_limit_mps
        self._zone_sign_odo = -math.inf

    # ------------------------------------------------------------------ input

    def observe(self, result: Result, odometer_at_capture: float, now: float, odometer_now: float) -> None:
        """Take a result captured when the odometer read ``odometer_at_capture``."""
        cfg = self.config
        stops: list[tuple[Detection, float]] = []
        limits: list[tuple[Detection, float]] = []
        for det in result.detections:
            if det.score < cfg.sign_min_score or det.label not in self._sign_labels:
                continue
            distance = sign_distance(det.box, result.frame_width, result.frame_height, cfg)
            if distance is None or distance > cfg.sign_max_distance_m:
                continue
            if det.label in cfg.stop_labels:
                stops.append((det, distance))
            elif det.label in cfg.speed_limit_labels:
                limits.append((det, distance))
        self._recent_stops.append(tuple(odometer_at_capture + distance for _, distance in stops))
        limits = [(det, d) for det, d in limits if not self._read_as_stop(odometer_at_capture + d)]
        self._observe_stop(stops, odometer_at_capture, now, odometer_now)
        self._observe_limit(limits, result, odometer_at_capture, now, odometer_now)

    def _read_as_stop(self, sign_odo: float) -> bool:
        """Whether a stop sign was read about there in the last n results (then that is what it is)."""
        margin = self.config.sign_conflict_m
        return any(abs(sign_odo - odo) <= margin for odos in self._recent_stops for odo in odos)

    def _observe_stop(
        self, stops: list[tuple[Detection, float]], odo_capture: float, now: float, odo_now: float
    ) -> None:
        if odo_now < self._ignore_stop_until or self.state == "hold":
            self._stop_votes.clear()
            return
        if stops:  # the nearest one matters
            _, distance = min(stops, key=lambda s: s[1])
            line = odo_capture + distance
            if line > self._ignore_stop_until:
                self._line_estimates.append(line)
        confirmed = self._stop_votes.add(bool(stops))
        if self.state == "cruise" and not self._stop_votes.any():
            self._line_estimates.clear()  # an old sighting says nothing about the next sign
        if self.state == "cruise" and confirmed and self._line_estimates:
            self.state = "approach"
            self._line_odo = _median(self._line_estimates)
            self.events.append(SignEvent(now, "stop_seen", odo_now, self._line_odo))
        elif self.state == "approach" and stops and self._line_estimates:
            self._line_odo = _median(self._line_estimates)

    def _observe_limit(
        self, limits: list[tuple[Detection, float]], result: Result, odo_capture: float, now: float, odo_now: float
    ) -> None:
        cfg = self.config
        confirmed = self._limit_votes.add(bool(limits))
        if not (confirmed and limits):
            return
        det, distance = min(limits, key=lambda s: s[1])
        sign_odo = odo_capture + distance
        speed = cfg.speed_limit_mps
        for line in result.text_lines:  # a number read inside the sign: cm/s on our scale
            value = _number(line.text)
            if value and line.box is not None and _inside(line.box, det.box):
                speed = value / 100.0
        if sign_odo - self._zone_sign_odo > cfg.speed_zone_length_m:  # a new sign, not the same one again
            self._zone_sign_odo = sign_odo
            self._zone_speed = speed
            self.events.append(SignEvent(now, "speed_limit", odo_now, sign_odo + cfg.speed_zone_length_m, speed))
        self._zone_end = max(self._zone_end, sign_odo + cfg.speed_zone_length_m)

    # ------------------------------------------------------------------ output

    def limit(self, now: float, odometer_m: float, speed_mps: float) -> tuple[float, str]:
        """The highest speed the signs allow now, and why (``inf, ""`` when none applies)."""
        cfg = self.config
        cap, reason = math.inf, ""
        if odometer_m < self._zone_end:
            cap, reason = self._zone_speed, "speed_limit"
        elif math.isfinite(self._zone_end):
            self.events.append(SignEvent(now, "speed_limit_end", odometer_m, self._zone_end))
            self._zone_end = -math.inf
        if self.state == "approach":
            remaining = self._line_odo - cfg.stop_margin_m - odometer_m
            if remaining <= 0.01:
                cap, reason = 0.0, "stop_sign"
                if abs(speed_mps) <= _STOPPED_MPS:
                    self.state = "hold"
                    self._hold_since = now
                    self.events.append(SignEvent(now, "stopped", odometer_m, self._line_odo))
            else:
                # brake at half the car's deceleration: a stop that errs on the early side
                approach = math.sqrt(cfg.decel_mps2 * remaining)
                if approach < cap:
                    cap, reason = max(approach, 0.05), "stop_sign"
        if self.state == "hold":
            if now - self._hold_since >= cfg.stop_hold_s:
                self.state = "cruise"
                self._ignore_stop_until = self._line_odo + cfg.stop_ignore_after_m
                self._line_estimates.clear()
                self._stop_votes.clear()
                self.events.append(SignEvent(now, "go", odometer_m, self._line_odo, now - self._hold_since))
            else:
                cap, reason = 0.0, "stop_sign"
        return cap, reason


def _median(values: collections.deque[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def _inside(inner: Box, outer: Box) -> bool:
    cx, cy = (inner.x_min + inner.x_max) / 2, (inner.y_min + inner.y_max) / 2
    return outer.x_min <= cx <= outer.x_max and outer.y_min <= cy <= outer.y_max

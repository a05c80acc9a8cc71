"""Settings of the AGV controller: one frozen dataclass, every field with a unit and a default."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

__all__ = ["AgvConfig", "DriveCommand"]


@dataclass(frozen=True)
class DriveCommand:
    """What the controller asks of the motors.

    Attributes:
        speed_mps: target forward speed of the car, m/s (0 = brake to a stop).
        steering_rad: front-wheel angle, rad, positive = steer LEFT (REP-103).
        reason: why the controller chose this command (``"lane"``, ``"watchdog"``,
            ``"stop_sign"`` ...), for logs and tests.
    """

    speed_mps: float
    steering_rad: float
    reason: str = "lane"

    @property
    def stopped(self) -> bool:
        """True when the command asks for zero throttle."""
        return self.speed_mps == 0.0


@dataclass(frozen=True)
class AgvConfig:
    """Tuning of the controller parts. Lengths in metres, times in seconds, angles in radians.

    The car is a kinematic bicycle whose camera sits above the front axle (the
    lane reference point is the floor point below the camera).
    """

    # vehicle
    wheelbase_m: float = 0.15
    max_steering_rad: float = 0.5
    # lane keeper: steering = feed-forward + heading term - atan(k_offset * offset / (v + soft_speed))
    k_offset: float = 2.5  #: 1/s: how fast the offset decays
    k_heading: float = 0.9  #: dimensionless gain on the heading error
    soft_speed_mps: float = 0.15  #: keeps the offset gain finite at low speed
    ff_min_confidence: float = 0.6  #: curvature feed-forward only above this confidence
    min_offset_confidence: float = 0.3  #: below this the lane counts as lost
    max_result_age_s: float = 0.4  #: older results are not steered on
    compensate_latency: bool = True  #: predict each lane state from its capture instant to now
    # speed policy
    cruise_speed_mps: float = 0.5
    min_speed_mps: float = 0.15
    max_lateral_accel_mps2: float = 0.3  #: speed on a curve: sqrt(a / |curvature|)
    low_confidence_speed_mps: float = 0.25
    accel_mps2: float = 0.8
    decel_mps2: float = 1.2
    # watchdog
    #: no fresh result for this long: throttle 0 (10 ms under the 150 ms requirement, for the loop's wake-up)
    watchdog_timeout_s: float = 0.14
    watchdog_good_frames: int = 5  #: good results in a row that release the latch
    coast_distance_m: float = 0.5  #: lane lost with the sensor alive: coast at most this far
    coast_speed_mps: float = 0.25
    # signs
    stop_labels: tuple[str, ...] = ("stop",)
    speed_limit_labels: tuple[str, ...] = ("speed_limit",)
    sign_min_score: float = 0.5
    confirm_k: int = 3  #: act on a sign seen in k ...
    confirm_n: int = 5  #: ... of the last n results
    sign_max_distance_m: float = 1.8  #: ignore signs estimated farther than this
    stop_margin_m: float = 0.12  #: stop this far before the line (the line is at the sign)
    stop_hold_s: float = 2.5  #: full stop this long (>= 2 s by the traffic rule)
    stop_ignore_after_m: float = 0.6  #: after going, ignore stop signs until this far past the line
    speed_limit_mps: float = 0.3  #: speed in a speed-limit zone (when no number is read)
    speed_zone_length_m: float = 2.5
    #: a speed-limit reading this close (m) to where a stop sign was read within the last n results
    #: is that stop sign, misread (a far, strongly turned stop sign can look like a speed limit)
    sign_conflict_m: float = 0.6
    # camera (for sign distances): the sensor's mounting
    camera_hfov_rad: float = math.radians(95.0)
    camera_pitch_rad: float = math.radians(15.0)
    camera_height_m: float = 0.12
    sign_face_m: float = 0.10  #: side of a sign's face
    sign_centre_height_m: float = 0.17
    sign_box_pad_px: float = 1.0  #: how many pixels a detector's box is wider than the face it covers

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and (math.isnan(value) or value < 0):
                raise ValueError(f"AgvConfig.{f.name} must be >= 0, got {value!r}")
        if not 0 < self.confirm_k <= self.confirm_n:
            raise ValueError("AgvConfig needs 0 < confirm_k <= confirm_n")
        if self.watchdog_good_frames < 1:
            raise ValueError("AgvConfig.watchdog_good_frames must be >= 1")
        if self.wheelbase_m <= 0 or self.watchdog_timeout_s <= 0:
            raise ValueError("AgvConfig.wheelbase_m and watchdog_timeout_s must be > 0")

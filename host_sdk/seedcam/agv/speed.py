"""Speed policy: cruise on straights, slower on tight curves and when the lane is uncertain."""

from __future__ import annotations

import math

from seedcam.agv.config import AgvConfig
from seedcam.agv.lane_keeper import LaneEstimate
from seedcam.types import LaneState, LaneStatus

__all__ = ["SpeedPolicy"]


class SpeedPolicy:
    """Target speed from the lane: ``min(cruise, sqrt(a_lat / |curvature|))``, capped when unsure.

    Args:
        config: the controller settings.
    """

    def __init__(self, config: AgvConfig) -> None:
        self.config = config

    def target(self, estimate: LaneEstimate | None, lane: LaneState | None) -> float:
        """The speed the lane allows, m/s (0 without any estimate)."""
        cfg = self.config
        if estimate is None:
            return 0.0
        speed = cfg.cruise_speed_mps
        kappa = abs(estimate.curvature_per_m)
        if kappa > 1e-6:
            speed = min(speed, math.sqrt(cfg.max_lateral_accel_mps2 / kappa))
        unsure = lane is None or lane.status is not LaneStatus.OK or not estimate.use_curvature
        unsure = unsure or (lane is not None and min(lane.offset_confidence, lane.heading_confidence) < 0.6)
        if unsure:
            speed = min(speed, cfg.low_confidence_speed_mps)
        return max(speed, cfg.min_speed_mps)

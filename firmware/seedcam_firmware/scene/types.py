"""Plain data records describing a synthetic road scene and its ground truth.

Conventions (REP-103, car frame): +x forward, +y LEFT, +z up, metres and radians.
The lane reference point is the point on the floor directly below the camera.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "OBJECT_KINDS",
    "LaneTruth",
    "ObjectTruth",
    "SceneObject",
    "SceneSpec",
    "SceneTruth",
]

#: object kinds the renderer knows how to draw
OBJECT_KINDS: tuple[str, ...] = (
    "stop",
    "speed_limit",
    "turn_left",
    "turn_right",
    "crossing",
    "parking",
    "plate",
)


@dataclass(frozen=True)
class LaneTruth:
    """Lane state of the car, measured at the floor point directly below the camera.

    Attributes:
        offset_m: lateral offset of the reference point from the lane centre line,
            positive when the car is LEFT of centre.
        heading_rad: car yaw minus lane-tangent yaw at the reference point,
            positive when the car is yawed LEFT (counter-clockwise).
        curvature_per_m: signed lane curvature at the reference point, positive
            when the lane bends LEFT.
        lane_width_m: distance between the centres of the two boundary lines.
        left_visible: the left boundary line is drawn with visible contrast.
        right_visible: the right boundary line is drawn with visible contrast.
    """

    offset_m: float
    heading_rad: float
    curvature_per_m: float
    lane_width_m: float
    left_visible: bool
    right_visible: bool

    @property
    def status(self) -> str:
        """``"ok"`` (both lines), ``"one_line"`` or ``"lost"`` (none)."""
        n = int(self.left_visible) + int(self.right_visible)
        return ("lost", "one_line", "ok")[n]


@dataclass(frozen=True)
class SceneObject:
    """A billboard standing on the floor, placed in the car frame.

    Attributes:
        kind: one of :data:`OBJECT_KINDS`.
        forward_m: distance ahead of the camera's floor point (car +x).
        left_m: lateral position, positive to the LEFT (car +y).
        text: text of a ``"plate"`` (e.g. ``"AGV-042"``) or the number of a
            ``"speed_limit"`` sign (e.g. ``"30"``); ignored by other kinds.
        yaw_rad: rotation of the face about its vertical axis, counter-clockwise
            seen from above; 0 faces the car squarely.
    """

    kind: str
    forward_m: float
    left_m: float
    text: str = ""
    yaw_rad: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in OBJECT_KINDS:
            raise ValueError(f"unknown object kind {self.kind!r}; expected one of {OBJECT_KINDS}")
        if abs(self.yaw_rad) >= 1.4:
            raise ValueError("yaw_rad must be within +-1.4 rad (the face must stay visible)")


@dataclass(frozen=True)
class SceneSpec:
    """Everything needed to render one frame deterministically.

    Lane pose (``offset_m``, ``heading_rad``, ``curvature_per_m``, ``lane_width_m``)
    follows the :class:`LaneTruth` conventions; ``curvature_rate_per_m2`` bends the
    lane further ahead without changing the pose at the car. Appearance parameters vary the
    look without changing the geometry. ``noise_seed`` seeds sensor noise so that
    ``render(spec)`` is a pure function of ``spec``.
    """

    offset_m: float = 0.0
    heading_rad: float = 0.0
    curvature_per_m: float = 0.0
    #: change of the curvature per metre along the lane (1/m^2): 0 is a circle; an S-bend
    #: when it turns the curvature's sign in view (see :func:`~.geometry.lateral_and_arc`)
    curvature_rate_per_m2: float = 0.0
    lane_width_m: float = 0.45
    # line appearance
    line_width_m: float = 0.025
    left_style: str = "solid"  # "solid" | "dashed" | "none"
    right_style: str = "solid"
    left_contrast: float = 1.0  # 0 (invisible) .. 1 (full paint)
    right_contrast: float = 1.0
    line_bgr: tuple[float, float, float] = (0.95, 0.95, 0.95)  # 0..1
    dash_m: float = 0.15
    gap_m: float = 0.12
    dash_phase_m: float = 0.0
    # floor / background
    floor_bgr: tuple[float, float, float] = (0.35, 0.35, 0.37)
    texture_strength: float = 0.08
    texture_seed: int = 0
    wall_bgr: tuple[float, float, float] = (0.55, 0.58, 0.6)
    # shadows: (forward_m, left_m, radius_forward_m, radius_left_m, darkness 0..1), lane frame
    shadows: tuple[tuple[float, float, float, float, float], ...] = ()
    # camera / lighting
    gain: float = 1.0
    gamma: float = 1.0
    defocus_sigma_px: float = 0.0
    motion_blur_px: float = 0.0
    motion_angle_deg: float = 0.0
    noise_sigma: float = 0.01  # std of additive noise, 0..1 scale
    noise_seed: int = 0
    objects: tuple[SceneObject, ...] = field(default_factory=tuple)
    # occluders drawn in front of everything: (x_min, y_min, x_max, y_max normalised to the image, grey 0..1)
    occluders: tuple[tuple[float, float, float, float, float], ...] = ()

    def __post_init__(self) -> None:
        for name in ("left_style", "right_style"):
            if getattr(self, name) not in ("solid", "dashed", "none"):
                raise ValueError(f"{name} must be 'solid', 'dashed' or 'none'")
        if not 0.05 <= self.lane_width_m <= 2.0:
            raise ValueError("lane_width_m must be within 0.05..2.0 m")

    @property
    def left_visible(self) -> bool:
        """The left line is drawn with visible contrast."""
        return self.left_style != "none" and self.left_contrast >= VISIBLE_CONTRAST

    @property
    def right_visible(self) -> bool:
        """The right line is drawn with visible contrast."""
        return self.right_style != "none" and self.right_contrast >= VISIBLE_CONTRAST


#: a line with less contrast than this counts as not visible in the truth
VISIBLE_CONTRAST = 0.2


@dataclass(frozen=True)
class ObjectTruth:
    """Where an object landed in the image.

    Attributes:
        kind: the object's kind.
        text: the object's text (plates, speed limits), else ``""``.
        box: ``(x_min, y_min, x_max, y_max)`` normalised to 0..1 of the image
            width/height, clipped to the image.
        forward_m: the object's distance ahead (car frame).
        left_m: the object's lateral position (car frame, +left).
    """

    kind: str
    text: str
    box: tuple[float, float, float, float]
    forward_m: float
    left_m: float


@dataclass(frozen=True)
class SceneTruth:
    """Ground truth of one rendered frame."""

    lane: LaneTruth
    objects: tuple[ObjectTruth, ...]

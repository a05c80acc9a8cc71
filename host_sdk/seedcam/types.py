"""The typed values the SDK hands to user code: frozen dataclasses, never protobuf objects."""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "Box",
    "Detection",
    "LaneStatus",
    "LaneState",
    "TextLine",
    "Classification",
    "Result",
    "ModelInfo",
    "DeviceInfo",
    "LinkStats",
    "Health",
    "ConfigValue",
    "Snapshot",
    "TaskList",
    "PreviewFrame",
    "PreviewSettings",
    "BlackBoxFileInfo",
]


@dataclass(frozen=True)
class Box:
    """An axis-aligned box, normalised to the camera frame (0..1, origin top-left)."""

    x_min: float
    y_min: float
    x_max: float
    y_max: float

    @property
    def width(self) -> float:
        return self.x_max - self.x_min

    @property
    def height(self) -> float:
        return self.y_max - self.y_min

    @property
    def area(self) -> float:
        """Width x height; 0 for an empty (or inverted) box."""
        return max(0.0, self.width) * max(0.0, self.height)

    def iou(self, other: Box) -> float:
        """Intersection over union with ``other``; 0 when they do not overlap or both are empty."""
        inter = max(0.0, min(self.x_max, other.x_max) - max(self.x_min, other.x_min)) * max(
            0.0, min(self.y_max, other.y_max) - max(self.y_min, other.y_min)
        )
        union = self.area + other.area - inter
        return inter / union if union > 0 else 0.0

    def to_pixels(self, width: int, height: int) -> tuple[int, int, int, int]:
        """The box in pixels of a ``width`` x ``height`` frame: (x0, y0, x1, y1)."""
        return (
            round(self.x_min * width),
            round(self.y_min * height),
            round(self.x_max * width),
            round(self.y_max * height),
        )


@dataclass(frozen=True)
class Detection:
    """One detected object."""

    class_id: int
    label: str
    score: float
    box: Box


class LaneStatus(enum.Enum):
    """How much of the lane the sensor sees."""

    UNKNOWN = "unknown"
    OK = "ok"  #: both lines seen
    ONE_LINE = "one_line"  #: one line seen; geometry from it and the lane width
    LOST = "lost"  #: no line seen; the geometry fields are not meaningful


@dataclass(frozen=True)
class LaneState:
    """The car's pose in its lane, metric, REP-103 axes (x forward, y left).

    Attributes:
        offset_m: lateral offset of the car from the lane centre; positive = car left of centre.
        heading_rad: car heading relative to the lane tangent; positive = yawed left.
        curvature_per_m: lane curvature at the car; positive = lane bends left.
        reference_forward_m: where the offset is measured, metres ahead of the camera's ground point.
    """

    status: LaneStatus
    offset_m: float
    heading_rad: float
    curvature_per_m: float
    offset_confidence: float
    heading_confidence: float
    curvature_confidence: float
    lane_width_m: float
    reference_forward_m: float = 0.0

    @property
    def heading_deg(self) -> float:
        return math.degrees(self.heading_rad)


@dataclass(frozen=True)
class TextLine:
    """A line of text read by OCR, with the plate's box."""

    text: str
    confidence: float
    char_confidences: tuple[float, ...] = ()
    box: Box | None = None


@dataclass(frozen=True)
class Classification:
    """One class of a classifier's top-k."""

    class_id: int
    label: str
    score: float


@dataclass(frozen=True)
class Result:
    """Everything the sensor found in one frame.

    Attributes:
        frame_id: the camera frame's number on the sensor.
        capture_timestamp_us: capture time on the sensor's monotonic clock.
        timings_us: per-stage durations on the sensor, microseconds.
        model_ids: the models that produced this result.
        lane: lane state, or None when the lane task is off.
        received_monotonic: host ``time.monotonic()`` when the SDK decoded the frame.
    """

    frame_id: int
    capture_timestamp_us: int
    timings_us: Mapping[str, int] = field(default_factory=dict)
    model_ids: tuple[str, ...] = ()
    lane: LaneState | None = None
    detections: tuple[Detection, ...] = ()
    text_lines: tuple[TextLine, ...] = ()
    classifications: tuple[Classification, ...] = ()
    frame_width: int = 0
    frame_height: int = 0
    send_timestamp_us: int = 0
    received_monotonic: float = 0.0


@dataclass(frozen=True)
class ModelInfo:
    """A model bundle on the sensor."""

    id: str
    name: str
    version: str
    task: str
    precision: str
    sha256: str = ""
    active: bool = False
    input_shape: tuple[int, ...] = ()
    size_bytes: int = 0
    #: the model's class names by class id (``detect`` and ``classify`` models), every one of
    #: them, not only those seen in results; empty when the model has none (lane, ocr), its
    #: names are too long for the link (over 4 KiB) or the firmware predates the field
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeviceInfo:
    """What the sensor says about itself (the Hello)."""

    protocol_version: int
    firmware_version: str
    boot_id: str
    serial_number: str
    max_frame_size: int
    models: tuple[ModelInfo, ...] = ()
    board: str = ""
    tasks_enabled: tuple[str, ...] = ()
    camera: str = ""
    frame_width: int = 0
    frame_height: int = 0
    uptime_s: float = 0.0


@dataclass(frozen=True)
class LinkStats:
    """Link counters of one side (see :class:`seedcam.protocol.LinkCounters`)."""

    frames_rx: int = 0
    frames_tx: int = 0
    bytes_rx: int = 0
    bytes_tx: int = 0
    crc_errors: int = 0
    decode_errors: int = 0
    resyncs: int = 0
    seq_lost: int = 0
    oversize: int = 0
    bad_version: int = 0
    bytes_dropped: int = 0
    duplicates: int = 0  #: frames dropped because their sequence number was seen already (duplicates, replays)
    bad_flags: int = 0  #: frames refused for an undefined flag bit

    @property
    def corrupted(self) -> int:
        """Frames that arrived damaged or malformed, all reasons together (duplicates are not among them)."""
        return self.crc_errors + self.decode_errors + self.oversize + self.bad_version + self.bad_flags


@dataclass(frozen=True)
class Health:
    """The sensor's periodic health report."""

    boot_id: str
    uptime_s: float
    fps: float
    frames_captured: int
    frames_processed: int
    frames_dropped: int
    link: LinkStats
    active_models: tuple[str, ...] = ()
    timestamp_us: int = 0
    undecodable_requests: int = 0
    camera_errors: int = 0
    #: task -> frames whose outputs were NaN or infinite (the canary dropped their findings)
    invalid_outputs: Mapping[str, int] = field(default_factory=dict)
    #: models the canary rolled back since boot
    canary_rollbacks: int = 0
    #: requests refused for a missing, bad or too old link-key signature
    unauthenticated_requests: int = 0
    #: non-empty when the config file did not boot: why, and that the last configuration that booted runs
    config_fallback: str = ""
    #: the newest captured frame's id
    latest_frame_id: int = 0
    #: results the link dropped since boot: the host did not take them in time (bandwidth), or too large
    results_dropped: int = 0


@dataclass(frozen=True)
class ConfigValue:
    """A configuration value read from or written to the sensor.

    Attributes:
        key: the dotted key, section or ``""`` (everything).
        value: the value the device stored (local-only paths read as ``"<local>"``).
        restart_required: the change takes effect after a firmware restart.
        persisted: the device wrote the change into its config file, so it survives a
            restart (False: it lasts until the firmware restarts; always False for a read).
    """

    key: str
    value: object
    restart_required: bool = False
    persisted: bool = False


@dataclass(frozen=True)
class Snapshot:
    """A JPEG of one camera frame."""

    jpeg: bytes
    frame_id: int
    capture_timestamp_us: int
    width: int
    height: int


@dataclass(frozen=True)
class TaskList:
    """Which tasks run on the sensor, and which it could run."""

    enabled: tuple[str, ...]
    available: tuple[str, ...] = ()


@dataclass(frozen=True)
class PreviewFrame:
    """One JPEG of the preview stream: the frame whose :class:`Result` has the same ``frame_id``.

    Attributes:
        frame_id: the frame's id (that of its Result).
        timestamp_us: the frame's capture time, on the sensor's clock (that of ``Result.capture_timestamp_us``).
        jpeg: the JPEG, scaled down to the stream's ``max_width``.
        width: the JPEG's width in pixels.
        height: the JPEG's height in pixels.
    """

    frame_id: int
    timestamp_us: int
    jpeg: bytes
    width: int
    height: int


@dataclass(frozen=True)
class PreviewSettings:
    """What the sensor applied to a preview request (:meth:`seedcam.Sensor.start_preview`).

    Attributes:
        fps: the preview rate the sensor expects to send (at most the one asked for; 0: stopped).
        quality: JPEG quality 1..100.
        max_width: frames wider than this are scaled down.
        line_limited: the link's line rate holds the stream below the rate asked for.
        message: what fits and why, in words.
        lease_s: the stream stops this long after the host's last request (the SDK renews it).
        width: the preview frames' width in pixels (0 before the first frame).
        height: their height.
    """

    fps: float
    quality: int
    max_width: int
    line_limited: bool = False
    message: str = ""
    lease_s: float = 0.0
    width: int = 0
    height: int = 0


@dataclass(frozen=True)
class BlackBoxFileInfo:
    """One frozen black-box file on the sensor.

    Attributes:
        name: its name (what :meth:`seedcam.Sensor.blackbox_pull` takes).
        trigger: what froze it: ``lane_lost``, ``label``, ``crc_burst`` or ``host``.
        reason: the same in words (a host's trigger: its reason).
        trigger_timestamp_us: when, on the sensor's clock.
        first_timestamp_us: its oldest entry's time, on the sensor's clock.
        size: its size in bytes (what a pull transfers).
        results: results it holds.
        entries: entries it holds (results, health reports, log records, thumbnails).
        boot_id: the boot of the sensor that froze it.
    """

    name: str
    trigger: str
    reason: str
    trigger_timestamp_us: int
    first_timestamp_us: int
    size: int
    results: int
    entries: int
    boot_id: str

    @property
    def seconds(self) -> float:
        """The span it holds before its trigger."""
        return max(0, self.trigger_timestamp_us - self.first_timestamp_us) / 1e6

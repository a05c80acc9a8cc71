"""Protobuf ↔ dataclass conversion, shared by the firmware (encode) and the SDK (decode).

The public SDK never hands out ``*_pb2`` objects; this module is the only place
that maps between the two, so one round-trip test covers both ends.

One convention for every type ``thing``:

* ``thing_to_pb(value, out=None) -> message``: fills ``out`` when given (an
  empty message, usually a field of a bigger one: ``health_to_pb(h, event.health)``),
  else a new message; returns the message it filled.
* ``thing_from_pb(message) -> value``: the frozen dataclass. It raises only
  :class:`~seedcam.errors.ProtocolError`, for content the schema cannot check
  (a config value that is not JSON).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TypeVar

from google.protobuf.message import DecodeError, Message

from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import ProtocolError
from seedcam.protocol.compact import ResultDictionary
from seedcam.protocol.framing import LinkCounters
from seedcam.types import (
    BlackBoxFileInfo,
    Box,
    Classification,
    ConfigValue,
    Detection,
    DeviceInfo,
    Health,
    LaneState,
    LaneStatus,
    LinkStats,
    ModelInfo,
    PreviewSettings,
    Result,
    Snapshot,
    TaskList,
    TextLine,
)
from seedcam.update_types import InstallResult, SlotGroup, SlotInfo

__all__ = [
    "parse",
    "status_name",
    "box_to_pb",
    "box_from_pb",
    "lane_to_pb",
    "lane_from_pb",
    "result_to_pb",
    "result_from_pb",
    "result_dictionary_to_pb",
    "result_dictionary_from_pb",
    "model_info_to_pb",
    "model_info_from_pb",
    "preview_settings_from_pb",
    "blackbox_file_info_from_pb",
    "model_list_to_pb",
    "model_list_from_pb",
    "device_info_to_pb",
    "device_info_from_pb",
    "link_stats_from_counters",
    "link_stats_to_pb",
    "link_stats_from_pb",
    "health_to_pb",
    "health_from_pb",
    "config_value_to_pb",
    "config_value_from_pb",
    "snapshot_to_pb",
    "snapshot_from_pb",
    "task_list_to_pb",
    "task_list_from_pb",
    "install_result_to_pb",
    "install_result_from_pb",
    "slot_groups_to_pb",
    "slot_groups_from_pb",
]

M = TypeVar("M", bound=Message)

_LANE_STATUS_TO_PB = {
    LaneStatus.UNKNOWN: pb.LaneState.STATUS_UNSPECIFIED,
    LaneStatus.OK: pb.LaneState.OK,
    LaneStatus.ONE_LINE: pb.LaneState.ONE_LINE,
    LaneStatus.LOST: pb.LaneState.LOST,
}
_LANE_STATUS_FROM_PB = {v: k for k, v in _LANE_STATUS_TO_PB.items()}
_LINK_FIELDS = tuple(LinkStats.__dataclass_fields__)


def parse(message_type: type[M], payload: bytes) -> M:
    """Parse a payload as ``message_type``.

    Raises:
        ProtocolError: the bytes are not a valid message of that type.
    """
    message = message_type()
    try:
        message.ParseFromString(payload)
    except DecodeError as exc:
        raise ProtocolError(f"undecodable {message_type.__name__}: {exc}") from exc
    return message


def status_name(code: int) -> str:
    """``STATUS_NOT_FOUND`` → ``"NOT_FOUND"``; unknown codes become ``"CODE_<n>"``."""
    try:
        return pb.StatusCode.Name(code).removeprefix("STATUS_")
    except ValueError:
        return f"CODE_{code}"


# ---------------------------------------------------------------- results


def box_to_pb(box: Box, out: pb.Box | None = None) -> pb.Box:
    out = pb.Box() if out is None else out
    out.x_min, out.y_min, out.x_max, out.y_max = box.x_min, box.y_min, box.x_max, box.y_max
    return out


def box_from_pb(message: pb.Box) -> Box:
    return Box(message.x_min, message.y_min, message.x_max, message.y_max)


def lane_to_pb(lane: LaneState, out: pb.LaneState | None = None) -> pb.LaneState:
    out = pb.LaneState() if out is None else out
    out.status = _LANE_STATUS_TO_PB[lane.status]
    out.offset_m = lane.offset_m
    out.heading_rad = lane.heading_rad
    out.curvature_per_m = lane.curvature_per_m
    out.offset_confidence = lane.offset_confidence
    out.heading_confidence = lane.heading_confidence
    out.curvature_confidence = lane.curvature_confidence
    out.lane_width_m = lane.lane_width_m
    out.reference_forward_m = lane.reference_forward_m
    return out


def lane_from_pb(message: pb.LaneState) -> LaneState:
    return LaneState(
        status=_LANE_STATUS_FROM_PB.get(message.status, LaneStatus.UNKNOWN),
        offset_m=message.offset_m,
        heading_rad=message.heading_rad,
        curvature_per_m=message.curvature_per_m,
        offset_confidence=message.offset_confidence,
        heading_confidence=message.heading_confidence,
        curvature_confidence=message.curvature_confidence,
        lane_width_m=message.lane_width_m,
        reference_forward_m=message.reference_forward_m,
    )


def result_to_pb(result: Result, out: pb.Result | None = None) -> pb.Result:
    """Build the wire message for a result."""
    message = pb.Result() if out is None else out
    message.frame_id = result.frame_id
    message.capture_timestamp_us = result.capture_timestamp_us
    message.model_ids[:] = result.model_ids
    message.frame_width = result.frame_width
    message.frame_height = result.frame_height
    message.send_timestamp_us = result.send_timestamp_us
    for stage, duration in result.timings_us.items():
        message.timings.add(stage=stage, duration_us=duration)
    if result.lane is not None:
        lane_to_pb(result.lane, message.lane)
    for det in result.detections:
        item = message.detections.add(class_id=det.class_id, label=det.label, score=det.score)
        box_to_pb(det.box, item.box)
    for line in result.text_lines:
        text_item = message.text_lines.add(
            text=line.text, confidence=line.confidence, char_confidences=line.char_confidences
        )
        if line.box is not None:
            box_to_pb(line.box, text_item.box)
    for cls in result.classifications:
        message.classifications.add(class_id=cls.class_id, label=cls.label, score=cls.score)
    return message


def result_from_pb(message: pb.Result, *, received_monotonic: float = 0.0) -> Result:
    """Build the public dataclass from a wire message."""
    return Result(
        frame_id=message.frame_id,
        capture_timestamp_us=message.capture_timestamp_us,
        timings_us={t.stage: t.duration_us for t in message.timings},
        model_ids=tuple(message.model_ids),
        lane=lane_from_pb(message.lane) if message.HasField("lane") else None,
        detections=tuple(Detection(d.class_id, d.label, d.score, box_from_pb(d.box)) for d in message.detections),
        text_lines=tuple(
            TextLine(
                t.text,
                t.confidence,
                tuple(t.char_confidences),
                box_from_pb(t.box) if t.HasField("box") else None,
            )
            for t in message.text_lines
        ),
        classifications=tuple(Classification(c.class_id, c.label, c.score) for c in message.classifications),
        frame_width=message.frame_width,
        frame_height=message.frame_height,
        send_timestamp_us=message.send_timestamp_us,
        received_monotonic=received_monotonic,
    )


def result_dictionary_to_pb(
    dictionary: ResultDictionary, out: pb.ResultDictionary | None = None
) -> pb.ResultDictionary:
    out = pb.ResultDictionary() if out is None else out
    out.generation = dictionary.generation
    out.model_ids[:] = dictionary.model_ids
    for class_id, label in dictionary.detection_labels:
        out.detection_labels.add(class_id=class_id, label=label)
    for class_id, label in dictionary.classification_labels:
        out.classification_labels.add(class_id=class_id, label=label)
    out.stages[:] = dictionary.stages
    out.timings = dictionary.timings
    out.frame_width, out.frame_height = dictionary.frame_width, dictionary.frame_height
    out.reference_forward_m = dictionary.reference_forward_m
    out.frame_id, out.timestamp_us = dictionary.frame_id, dictionary.timestamp_us
    return out


def result_dictionary_from_pb(message: pb.ResultDictionary) -> ResultDictionary:
    return ResultDictionary(
        generation=message.generation,
        model_ids=tuple(message.model_ids),
        detection_labels=tuple((e.class_id, e.label) for e in message.detection_labels),
        classification_labels=tuple((e.class_id, e.label) for e in message.classification_labels),
        stages=tuple(message.stages),
        timings=message.timings or "summary",
        frame_width=message.frame_width,
        frame_height=message.frame_height,
        reference_forward_m=message.reference_forward_m,
        frame_id=message.frame_id,
        timestamp_us=message.timestamp_us,
    )


# ---------------------------------------------------------------- device, models, health


def model_info_to_pb(info: ModelInfo, out: pb.ModelInfo | None = None) -> pb.ModelInfo:
    out = pb.ModelInfo() if out is None else out
    out.id, out.name, out.version, out.task = info.id, info.name, info.version, info.task
    out.precision, out.sha256, out.active = info.precision, info.sha256, info.active
    out.input_shape[:] = info.input_shape
    out.size_bytes = info.size_bytes
    out.labels[:] = info.labels
    return out


def model_info_from_pb(message: pb.ModelInfo) -> ModelInfo:
    return ModelInfo(
        id=message.id,
        name=message.name,
        version=message.version,
        task=message.task,
        precision=message.precision,
        sha256=message.sha256,
        active=message.active,
        input_shape=tuple(message.input_shape),
        size_bytes=message.size_bytes,
        labels=tuple(message.labels),
    )


def model_list_to_pb(models: Iterable[ModelInfo], out: pb.ModelList | None = None) -> pb.ModelList:
    out = pb.ModelList() if out is None else out
    for info in models:
        model_info_to_pb(info, out.models.add())
    return out


def model_list_from_pb(message: pb.ModelList) -> tuple[ModelInfo, ...]:
    return tuple(model_info_from_pb(m) for m in message.models)


def device_info_to_pb(info: DeviceInfo, out: pb.DeviceInfo | None = None) -> pb.DeviceInfo:
    out = pb.DeviceInfo() if out is None else out
    out.protocol_version = info.protocol_version
    out.firmware_version = info.firmware_version
    out.boot_id = info.boot_id
    out.serial_number = info.serial_number
    out.max_frame_size = info.max_frame_size
    for model in info.models:
        model_info_to_pb(model, out.models.add())
    out.board = info.board
    out.tasks_enabled[:] = info.tasks_enabled
    out.camera = info.camera
    out.frame_width, out.frame_height = info.frame_width, info.frame_height
    out.uptime_s = info.uptime_s
    return out


def device_info_from_pb(message: pb.DeviceInfo) -> DeviceInfo:
    return DeviceInfo(
        protocol_version=message.protocol_version,
        firmware_version=message.firmware_version,
        boot_id=message.boot_id,
        serial_number=message.serial_number,
        max_frame_size=message.max_frame_size,
        models=tuple(model_info_from_pb(m) for m in message.models),
        board=message.board,
        tasks_enabled=tuple(message.tasks_enabled),
        camera=message.camera,
        frame_width=message.frame_width,
        frame_height=message.frame_height,
        uptime_s=message.uptime_s,
    )


def link_stats_from_counters(counters: LinkCounters) -> LinkStats:
    return LinkStats(**{name: getattr(counters, name) for name in _LINK_FIELDS})


def link_stats_to_pb(stats: LinkStats, out: pb.LinkCounters | None = None) -> pb.LinkCounters:
    out = pb.LinkCounters() if out is None else out
    for name in _LINK_FIELDS:
        setattr(out, name, getattr(stats, name))
    return out


def link_stats_from_pb(message: pb.LinkCounters) -> LinkStats:
    return LinkStats(**{name: getattr(message, name) for name in _LINK_FIELDS})


def health_to_pb(health: Health, out: pb.Health | None = None) -> pb.Health:
    out = pb.Health() if out is None else out
    out.boot_id = health.boot_id
    out.uptime_s = health.uptime_s
    out.fps = health.fps
    out.frames_captured = health.frames_captured
    out.frames_processed = health.frames_processed
    out.frames_dropped = health.frames_dropped
    link_stats_to_pb(health.link, out.link)
    out.active_models[:] = health.active_models
    out.timestamp_us = health.timestamp_us
    out.undecodable_requests = health.undecodable_requests
    out.camera_errors = health.camera_errors
    out.invalid_outputs.clear()
    out.invalid_outputs.update(health.invalid_outputs)
    out.canary_rollbacks = health.canary_rollbacks
    out.unauthenticated_requests = health.unauthenticated_requests
    out.config_fallback = health.config_fallback
    out.latest_frame_id = health.latest_frame_id
    out.results_dropped = health.results_dropped
    return out


def health_from_pb(message: pb.Health) -> Health:
    return Health(
        boot_id=message.boot_id,
        uptime_s=message.uptime_s,
        fps=message.fps,
        frames_captured=message.frames_captured,
        frames_processed=message.frames_processed,
        frames_dropped=message.frames_dropped,
        link=link_stats_from_pb(message.link),
        active_models=tuple(message.active_models),
        timestamp_us=message.timestamp_us,
        undecodable_requests=message.undecodable_requests,
        camera_errors=message.camera_errors,
        invalid_outputs=dict(message.invalid_outputs),
        canary_rollbacks=message.canary_rollbacks,
        unauthenticated_requests=message.unauthenticated_requests,
        config_fallback=message.config_fallback,
        latest_frame_id=message.latest_frame_id,
        results_dropped=message.results_dropped,
    )


# ---------------------------------------------------------------- answers to calls


def config_value_to_pb(value: ConfigValue, out: pb.ConfigValue | None = None) -> pb.ConfigValue:
    """The value travels as JSON.

    Raises:
        TypeError: ``value.value`` cannot be encoded as JSON.
    """
    out = pb.ConfigValue() if out is None else out
    out.key = value.key
    out.value_json = json.dumps(value.value)
    out.restart_required = value.restart_required
    out.persisted = value.persisted
    return out


def config_value_from_pb(message: pb.ConfigValue) -> ConfigValue:
    """An empty ``value_json`` reads as None.

    Raises:
        ProtocolError: ``value_json`` is not JSON.
    """
    try:
        value = json.loads(message.value_json) if message.value_json else None
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"device sent an undecodable config value: {exc}") from exc
    return ConfigValue(message.key, value, message.restart_required, message.persisted)


def snapshot_to_pb(snapshot: Snapshot, out: pb.Snapshot | None = None) -> pb.Snapshot:
    out = pb.Snapshot() if out is None else out
    out.jpeg = snapshot.jpeg
    out.frame_id = snapshot.frame_id
    out.capture_timestamp_us = snapshot.capture_timestamp_us
    out.width, out.height = snapshot.width, snapshot.height
    return out


def snapshot_from_pb(message: pb.Snapshot) -> Snapshot:
    return Snapshot(message.jpeg, message.frame_id, message.capture_timestamp_us, message.width, message.height)


def task_list_to_pb(tasks: TaskList, out: pb.TaskList | None = None) -> pb.TaskList:
    out = pb.TaskList() if out is None else out
    out.enabled[:] = tasks.enabled
    out.available[:] = tasks.available
    return out


def task_list_from_pb(message: pb.TaskList) -> TaskList:
    return TaskList(tuple(message.enabled), tuple(message.available))


# ---------------------------------------------------------------- updates


def install_result_to_pb(install: InstallResult, out: pb.InstallReport | None = None) -> pb.InstallReport:
    out = pb.InstallReport() if out is None else out
    out.name, out.slot, out.bundle_id = install.name, install.slot, install.bundle_id
    out.activated = install.activated
    out.selftest_max_error = install.selftest_max_error
    out.previous_slot = install.previous_slot
    out.restart_pending = install.restart_pending
    return out


def install_result_from_pb(message: pb.InstallReport) -> InstallResult:
    return InstallResult(
        name=message.name,
        slot=message.slot,
        bundle_id=message.bundle_id,
        activated=message.activated,
        selftest_max_error=message.selftest_max_error,
        previous_slot=message.previous_slot,
        restart_pending=message.restart_pending,
    )


def slot_groups_to_pb(groups: Sequence[SlotGroup], out: pb.SlotList | None = None) -> pb.SlotList:
    out = pb.SlotList() if out is None else out
    for group in groups:
        item = out.groups.add(name=group.name, security_counter=group.security_counter, running=group.running)
        for s in group.slots:
            item.slots.add(
                slot=s.slot,
                bundle_id=s.bundle_id,
                version=s.version,
                sha256=s.sha256,
                security_counter=s.security_counter,
                active=s.active,
                previous=s.previous,
                state=s.state,
            )
    return out


def slot_groups_from_pb(message: pb.SlotList) -> tuple[SlotGroup, ...]:
    return tuple(
        SlotGroup(
            name=g.name,
            slots=tuple(
                SlotInfo(s.slot, s.bundle_id, s.version, s.sha256, s.security_counter, s.active, s.previous, s.state)
                for s in g.slots
            ),
            security_counter=g.security_counter,
            running=g.running,
        )
        for g in message.groups
    )


def preview_settings_from_pb(message: pb.PreviewSettings) -> PreviewSettings:
    """The typed form of a device's answer to a preview request."""
    return PreviewSettings(
        fps=round(message.fps, 3),
        quality=message.quality,
        max_width=message.max_width,
        line_limited=message.line_limited,
        message=message.message,
        lease_s=round(message.lease_s, 3),
        width=message.width,
        height=message.height,
    )


def blackbox_file_info_from_pb(message: pb.BlackBoxFileInfo) -> BlackBoxFileInfo:
    """The typed form of a black-box file's info."""
    return BlackBoxFileInfo(
        name=message.name,
        trigger=message.trigger,
        reason=message.reason,
        trigger_timestamp_us=message.trigger_timestamp_us,
        first_timestamp_us=message.first_timestamp_us,
        size=message.size,
        results=message.results,
        entries=message.entries,
        boot_id=message.boot_id,
    )

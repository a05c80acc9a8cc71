"""Tests of the protobuf <-> dataclass codec (seedcam.protocol.codec)."""

from __future__ import annotations

import dataclasses

import pytest
from google.protobuf.message import DecodeError
from hypothesis import given, settings
from hypothesis import strategies as st

from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import ProtocolError, SensorError
from seedcam.protocol import codec
from seedcam.protocol.framing import LinkCounters
from seedcam.types import (
    Box,
    Classification,
    Detection,
    DeviceInfo,
    Health,
    LaneState,
    LaneStatus,
    LinkStats,
    ModelInfo,
    Result,
    TextLine,
)

# ----------------------------------------------------------------- strategies

U32 = st.integers(0, 2**32 - 1)
U64 = st.integers(0, 2**64 - 1)
I32 = st.integers(-(2**31), 2**31 - 1)
# float32-representable (so the wire's float fields reproduce them exactly); no NaN (NaN != NaN)
F32 = st.floats(width=32, allow_nan=False)
F64 = st.floats(allow_nan=False)
TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
SMALL = {"max_size": 4}

boxes = st.builds(Box, F32, F32, F32, F32)
lanes = st.builds(
    LaneState,
    status=st.sampled_from(list(LaneStatus)),
    offset_m=F32,
    heading_rad=F32,
    curvature_per_m=F32,
    offset_confidence=F32,
    heading_confidence=F32,
    curvature_confidence=F32,
    lane_width_m=F32,
    reference_forward_m=F32,
)
detections = st.builds(Detection, U32, TEXT, F32, boxes)
text_lines = st.builds(TextLine, TEXT, F32, st.lists(F32, **SMALL).map(tuple), st.none() | boxes)
classifications = st.builds(Classification, U32, TEXT, F32)
results = st.builds(
    Result,
    frame_id=U64,
    capture_timestamp_us=U64,
    timings_us=st.dictionaries(TEXT, U32, **SMALL),
    model_ids=st.lists(TEXT, **SMALL).map(tuple),
    lane=st.none() | lanes,
    detections=st.lists(detections, **SMALL).map(tuple),
    text_lines=st.lists(text_lines, **SMALL).map(tuple),
    classifications=st.lists(classifications, **SMALL).map(tuple),
    frame_width=U32,
    frame_height=U32,
    send_timestamp_us=U64,
)
model_infos = st.builds(
    ModelInfo,
    id=TEXT,
    name=TEXT,
    version=TEXT,
    task=TEXT,
    precision=TEXT,
    sha256=TEXT,
    active=st.booleans(),
    input_shape=st.lists(I32, **SMALL).map(tuple),
    size_bytes=U64,
)
device_infos = st.builds(
    DeviceInfo,
    protocol_version=U32,
    firmware_version=TEXT,
    boot_id=TEXT,
    serial_number=TEXT,
    max_frame_size=U32,
    models=st.lists(model_infos, **SMALL).map(tuple),
    board=TEXT,
    tasks_enabled=st.lists(TEXT, **SMALL).map(tuple),
    camera=TEXT,
    frame_width=U32,
    frame_height=U32,
    uptime_s=F64,
)
link_stats = st.builds(LinkStats, **{name: U64 for name in LinkStats.__dataclass_fields__})
healths = st.builds(
    Health,
    boot_id=TEXT,
    uptime_s=F64,
    fps=F32,
    frames_captured=U64,
    frames_processed=U64,
    frames_dropped=U64,
    link=link_stats,
    active_models=st.lists(TEXT, **SMALL).map(tuple),
    timestamp_us=U64,
    undecodable_requests=U64,
)


def _wire(message) -> bytes:
    return message.SerializeToString()


# ----------------------------------------------------------------- round trips


@settings(max_examples=50, deadline=None)
@given(result=results, received=st.floats(0, 1e9))
def test_result_roundtrip(result, received):
    data = _wire(codec.result_to_pb(result))
    back = codec.result_from_pb(codec.parse(pb.Result, data), received_monotonic=received)
    assert back == dataclasses.replace(result, received_monotonic=received)
    assert isinstance(back.model_ids, tuple)
    assert isinstance(back.detections, tuple)
    assert (back.lane is None) == (result.lane is None)
    assert [t.box is None for t in back.text_lines] == [t.box is None for t in result.text_lines]


@settings(max_examples=50, deadline=None)
@given(info=device_infos)
def test_device_info_roundtrip(info):
    out = pb.DeviceInfo()
    codec.device_info_to_pb(info, out)
    back = codec.device_info_from_pb(codec.parse(pb.DeviceInfo, _wire(out)))
    assert back == info


@settings(max_examples=50, deadline=None)
@given(info=device_infos)
def test_device_info_roundtrip_inside_hello_status_event(info):
    event = pb.StatusEvent()
    codec.device_info_to_pb(info, event.hello.device)
    parsed = codec.parse(pb.StatusEvent, _wire(event))
    assert parsed.WhichOneof("body") == "hello"
    assert codec.device_info_from_pb(parsed.hello.device) == info


@settings(max_examples=50, deadline=None)
@given(health=healths)
def test_health_roundtrip(health):
    event = pb.StatusEvent()
    codec.health_to_pb(health, event.health)
    parsed = codec.parse(pb.StatusEvent, _wire(event))
    assert parsed.WhichOneof("body") == "health"
    assert codec.health_from_pb(parsed.health) == health


@settings(max_examples=50, deadline=None)
@given(models=st.lists(model_infos, max_size=5))
def test_model_list_roundtrip(models):
    out = pb.ModelList()
    codec.model_list_to_pb(models, out)
    parsed = codec.parse(pb.ModelList, _wire(out))
    assert [codec.model_info_from_pb(m) for m in parsed.models] == models


def test_empty_result_roundtrip_keeps_absent_lane_absent():
    result = Result(frame_id=0, capture_timestamp_us=0)
    message = codec.result_to_pb(result)
    assert not message.HasField("lane")
    assert codec.result_from_pb(codec.parse(pb.Result, _wire(message))) == result


def test_all_zero_lane_and_box_stay_present():
    # A lane/box whose every field is zero must not turn into "absent".
    lane = LaneState(LaneStatus.UNKNOWN, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    result = Result(1, 2, lane=lane, text_lines=(TextLine("", 0.0, (), Box(0.0, 0.0, 0.0, 0.0)),))
    back = codec.result_from_pb(codec.parse(pb.Result, _wire(codec.result_to_pb(result))))
    assert back.lane == lane
    assert back.text_lines[0].box == Box(0.0, 0.0, 0.0, 0.0)


@pytest.mark.parametrize(
    "status, wire_value",
    [
        (LaneStatus.UNKNOWN, pb.LaneState.STATUS_UNSPECIFIED),
        (LaneStatus.OK, pb.LaneState.OK),
        (LaneStatus.ONE_LINE, pb.LaneState.ONE_LINE),
        (LaneStatus.LOST, pb.LaneState.LOST),
    ],
)
def test_lane_status_maps_to_schema_values(status, wire_value):
    lane = LaneState(status, 0.1, 0.2, 0.3, 1.0, 1.0, 1.0, 3.5)
    message = codec.result_to_pb(Result(0, 0, lane=lane))
    assert message.lane.status == wire_value
    assert codec.result_from_pb(message).lane.status is status


def test_unknown_lane_status_from_newer_firmware_is_unknown():
    message = pb.Result(frame_id=1)
    message.lane.status = 9  # proto3 enums are open: a newer firmware may send it
    message.lane.offset_m = 0.25
    lane = codec.result_from_pb(codec.parse(pb.Result, _wire(message))).lane
    assert lane.status is LaneStatus.UNKNOWN
    assert lane.offset_m == 0.25


def test_result_field_numbers_are_wire_stable():
    # frame_id = field 1 varint 300 (ac 02), capture_timestamp_us = field 2 varint 1,
    # frame_width = field 9 varint 640 (80 05).
    message = codec.result_to_pb(Result(frame_id=300, capture_timestamp_us=1, frame_width=640))
    assert _wire(message) == bytes.fromhex("08ac02 1001 488005")


def test_link_stats_from_counters_copies_every_counter():
    names = [f.name for f in dataclasses.fields(LinkCounters)]
    assert names == [f.name for f in dataclasses.fields(LinkStats)]
    assert set(names) <= set(pb.LinkCounters.DESCRIPTOR.fields_by_name)
    counters = LinkCounters(**{name: i + 1 for i, name in enumerate(names)})
    stats = codec.link_stats_from_counters(counters)
    assert dataclasses.asdict(stats) == vars(counters)
    assert stats.corrupted == counters.corrupted
    out = pb.LinkCounters()
    codec.link_stats_to_pb(stats, out)
    assert codec.link_stats_from_pb(codec.parse(pb.LinkCounters, _wire(out))) == stats


# -------------------------------------------------------------------- parse


@pytest.mark.parametrize(
    "message_type, garbage",
    [
        (pb.Result, b"\xff"),  # field 31 with wire type 7: no such wire type
        (pb.Result, b"\x08"),  # truncated varint
        (pb.Result, b"\x22\x05ab"),  # length 5, only 2 bytes follow
        (pb.Result, b"\x22\x01\xff"),  # model_ids: invalid UTF-8 in a proto3 string
        (
            pb.Health,
            b"\x0a\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",
        ),  # over-long varint
        (pb.StatusEvent, b"\x0a\x03\x0a\x05\x08"),  # nested length overruns its parent
        (pb.Response, b"\x0f"),  # field 1, wire type 7
    ],
)
def test_parse_garbage_raises_protocol_error(message_type, garbage):
    with pytest.raises(ProtocolError) as info:
        codec.parse(message_type, garbage)
    assert isinstance(info.value, SensorError)
    assert not isinstance(info.value, DecodeError)
    assert isinstance(info.value.__cause__, DecodeError)
    assert message_type.__name__ in str(info.value)


def test_parse_valid_payload_returns_message_of_that_type():
    message = codec.parse(pb.Result, b"\x08\x07")
    assert isinstance(message, pb.Result)
    assert message.frame_id == 7
    assert codec.parse(pb.Health, b"") == pb.Health()


@settings(max_examples=150, deadline=None)
@given(
    data=st.binary(max_size=64),
    message_type=st.sampled_from([pb.Result, pb.StatusEvent, pb.Response]),
)
def test_parse_random_bytes_returns_or_raises_protocol_error_only(data, message_type):
    try:
        message = codec.parse(message_type, data)
    except ProtocolError:
        return
    assert isinstance(message, message_type)


# ---------------------------------------------------------------- status_name


@pytest.mark.parametrize(
    "code, name",
    [
        (0, "OK"),
        (1, "INVALID_ARGUMENT"),
        (2, "NOT_FOUND"),
        (3, "UNSUPPORTED"),
        (4, "FAILED_PRECONDITION"),
        (5, "BUSY"),
        (6, "INTERNAL"),
        (7, "UNAVAILABLE"),
        (8, "UNAUTHENTICATED"),
        (9, "CODE_9"),
        (99, "CODE_99"),
        (-1, "CODE_-1"),
    ],
)
def test_status_name(code, name):
    assert codec.status_name(code) == name


def test_status_name_covers_every_schema_code():
    for value in pb.StatusCode.values():
        assert not codec.status_name(value).startswith(("STATUS_", "CODE_"))

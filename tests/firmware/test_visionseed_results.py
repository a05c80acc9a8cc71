"""VisionSeed mode: Results as dataV2 trees (the model-id table), heartbeats, the AVR 600-byte bound."""

from __future__ import annotations

import struct

import pytest

from seedcam.types import Box, Classification, Detection, LaneState, LaneStatus, Result, TextLine
from seedcam_firmware.visionseed._proto import visionseed_pb2 as vs
from seedcam_firmware.visionseed.datav2 import NodeType, decode_datav2
from seedcam_firmware.visionseed.framing import VisionSeedDecoder, encode_visionseed
from seedcam_firmware.visionseed.results import (
    MODEL_CLASSIFICATION,
    MODEL_DETECTION,
    MODEL_LANE,
    MODEL_PLATE_OCR,
    datav2_nodes,
    heartbeat_message,
    result_message,
)

AVR_BUFFER = 600  # the Arduino AVR client's receive buffer


def lane(status: LaneStatus = LaneStatus.OK) -> LaneState:
    return LaneState(status, 0.05, -0.06, 0.2, 0.9, 0.8, 0.7, 0.45)


def make_result(tasks: tuple[str, ...] = ("lane",), **fields: object) -> Result:
    return Result(
        frame_id=42,
        capture_timestamp_us=123_456_789,
        timings_us={f"task:{t}": 100 for t in tasks},
        frame_width=320,
        frame_height=240,
        **fields,  # type: ignore[arg-type]
    )


def tree(result: Result) -> dict[tuple[int, ...], tuple[NodeType, bytes]]:
    message = result_message(result)
    nodes = decode_datav2(message.result.dataV2)
    by_path = {n.path: (n.type, n.data) for n in nodes}
    assert len(by_path) == len(nodes), "a path appears twice"
    return by_path


def varint(data: bytes) -> int:
    value, shift = 0, 0
    for byte in data:
        value |= (byte & 0x7F) << shift
        shift += 7
    return value


STOP = Detection(0, "stop", 0.91, Box(0.10, 0.20, 0.30, 0.50))
PLATE = Detection(6, "plate", 0.80, Box(0.60, 0.55, 0.85, 0.70))
PLATE_TEXT = TextLine("AGV-042", 0.77, (0.9,) * 7, PLATE.box)


def test_lane_is_an_array_of_offset_heading_curvature_confidence() -> None:
    nodes = tree(make_result(lane=lane()))
    node_type, data = nodes[(MODEL_LANE,)]
    assert node_type is NodeType.ARRAY
    assert struct.unpack("<4f", data) == pytest.approx((0.05, -0.06, 0.2, 0.8), abs=1e-6)  # min(offset, heading)
    lost = tree(make_result(lane=lane(LaneStatus.LOST)))
    assert struct.unpack("<4f", lost[(MODEL_LANE,)][1])[3] == 0.0
    assert set(nodes) == {(MODEL_LANE,)}  # a lane-only firmware sends nothing else


def test_detections_are_counted_rects_in_pixels_with_plate_text_as_child() -> None:
    result = make_result(("lane", "detect", "ocr"), lane=lane(), detections=(STOP, PLATE), text_lines=(PLATE_TEXT,))
    nodes = tree(result)
    assert nodes[(MODEL_DETECTION,)] == (NodeType.VARUINT32, bytes([2]))
    conf, cls, x, y, w, h = struct.unpack("<HHhhhh", nodes[(MODEL_DETECTION, 0)][1])
    assert (cls, x, y, w, h) == (0, 32, 48, 64, 72)
    assert conf == round(0.91 * 65535)
    conf, cls, x, y, w, h = struct.unpack("<HHhhhh", nodes[(MODEL_DETECTION, 1)][1])
    assert (cls, x, y, w, h) == (6, 192, 132, 80, 36)
    assert (MODEL_DETECTION, 0, MODEL_PLATE_OCR) not in nodes  # the stop sign carries no text
    node_type, data = nodes[(MODEL_DETECTION, 1, MODEL_PLATE_OCR)]
    assert node_type is NodeType.STRING
    assert struct.unpack("<H", data[:2])[0] == round(0.77 * 65535) and data[2:] == b"AGV-042\x00"
    assert (MODEL_PLATE_OCR,) not in nodes


def test_text_is_matched_by_overlap_when_the_box_is_not_identical() -> None:
    moved = TextLine("XY-1", 0.9, (), Box(0.61, 0.55, 0.85, 0.71))
    nodes = tree(make_result(("detect", "ocr"), detections=(STOP, PLATE), text_lines=(moved,)))
    assert nodes[(MODEL_DETECTION, 1, MODEL_PLATE_OCR)][1][2:] == b"XY-1\x00"


def test_readings_without_a_reported_detection_go_under_the_ocr_model() -> None:
    nodes = tree(make_result(("ocr",), text_lines=(PLATE_TEXT,)))
    assert (MODEL_DETECTION,) not in nodes
    assert nodes[(MODEL_PLATE_OCR,)] == (NodeType.VARUINT32, bytes([1]))
    assert nodes[(MODEL_PLATE_OCR, 0)][1][2:] == b"AGV-042\x00"
    empty = tree(make_result(("ocr",)))
    assert empty[(MODEL_PLATE_OCR,)] == (NodeType.VARUINT32, bytes([0]))


def test_a_task_that_ran_and_found_nothing_reports_a_zero_count() -> None:
    nodes = tree(make_result(("lane", "detect", "classify"), lane=lane()))
    assert varint(nodes[(MODEL_DETECTION,)][1]) == 0
    assert varint(nodes[(MODEL_CLASSIFICATION,)][1]) == 0


def test_classifications_are_counted_best_first() -> None:
    classes = (Classification(3, "urban", 0.7), Classification(1, "highway", 0.2))
    nodes = tree(make_result(("classify",), classifications=classes))
    assert varint(nodes[(MODEL_CLASSIFICATION,)][1]) == 2
    assert nodes[(MODEL_CLASSIFICATION, 0)] == (NodeType.CLASSIFICATION, struct.pack("<HH", round(0.7 * 65535), 3))
    assert struct.unpack("<HH", nodes[(MODEL_CLASSIFICATION, 1)][1]) == (round(0.2 * 65535), 1)


def test_result_message_carries_frame_id_and_capture_time() -> None:
    message = result_message(make_result(lane=lane()))
    assert message.result.frameId == 42 and message.result.frameTimestampUs == 123_456_789
    assert not message.result.HasField("systemStatusResult")


def test_lane_and_two_detections_fit_the_avr_600_byte_buffer() -> None:
    """The worst case of that frame: long plate texts, big ids and times, 0x10/0x11 bytes that escape."""
    escape_heavy = Box(0x10 / 320, 0x11 / 240, (0x10 + 0x1111) / 320, (0x11 + 0x1010) / 240)
    detections = (
        Detection(0x11, "plate", 0x1010 / 65535, escape_heavy),
        Detection(0x10, "plate", 0x1111 / 65535, escape_heavy),
    )
    lines = tuple(TextLine("W" * 12, 0x1011 / 65535, (), d.box) for d in detections)
    result = Result(
        frame_id=2**63,
        capture_timestamp_us=2**63,
        timings_us={"task:lane": 1, "task:detect": 1, "task:ocr": 1, "task:classify": 1},
        lane=lane(),
        detections=detections,
        text_lines=lines,
        classifications=tuple(Classification(i, "c", 0.5) for i in range(3)),
        frame_width=320,
        frame_height=240,
    )
    wire = encode_visionseed(result_message(result).SerializeToString())
    assert len(wire) <= AVR_BUFFER, len(wire)
    payloads = VisionSeedDecoder().feed(wire)
    parsed = vs.YtMsg()
    parsed.ParseFromString(payloads[0])
    assert len(decode_datav2(parsed.result.dataV2)) == 1 + 2 + 2 + 1 + 1 + 3  # count, rects, texts, lane, classes


def test_heartbeats_are_system_status_results_with_the_required_fields() -> None:
    first = heartbeat_message(0, frame_id=9, timestamp_us=5)
    payload = first.SerializeToString()
    again = vs.YtMsg()
    again.ParseFromString(payload)  # required fields set: strict parsing accepts it
    status = again.result.systemStatusResult
    assert status.heartBeatId == 0 and status.freeHeap > 0
    assert again.result.frameId == 9 and not again.result.HasField("dataV2")
    assert heartbeat_message(2**31 + 3).result.systemStatusResult.heartBeatId == 3  # wraps within int32


def test_every_node_path_fits_dataV2_limits_with_many_detections() -> None:
    many = tuple(Detection(i % 7, "plate", 0.5, Box(0.0, 0.0, 0.1, 0.1)) for i in range(100))
    nodes = datav2_nodes(make_result(("detect",), detections=many))
    assert len(nodes) == 101 and max(max(n.path) for n in nodes) <= 255

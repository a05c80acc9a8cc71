"""Protocol 2's compact Result layout: sizes on the wire, what survives the rounding, dictionaries, bad payloads."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seedcam.errors import ProtocolError
from seedcam.protocol import codec
from seedcam.protocol.compact import (
    SUMMARY_STAGE,
    CompactDecoder,
    CompactEncoder,
    ResultDictionary,
    StaleDictionary,
)
from seedcam.protocol.framing import Channel, Frame, encode_frame
from seedcam.types import Box, Classification, Detection, LaneState, LaneStatus, Result, TextLine

CAPTURE_US = 3_600_000_000  # an hour after boot
LANE = LaneState(LaneStatus.OK, 0.0123, -0.0456, 0.31, 0.9, 0.8, 0.55, 0.45)
PLATE = Detection(6, "plate", 0.93, Box(0.40, 0.50, 0.55, 0.56))
SIGNS = (
    Detection(0, "stop", 0.81, Box(0.1, 0.1, 0.2, 0.25)),
    Detection(1, "speed_limit", 0.7, Box(0.7, 0.2, 0.8, 0.33)),
)
MODELS = ("lane-int8@2.0.0", "detect-int8@4.0.0", "ocr-int8@2.0.0")


def _result(frame_id: int = 108_000, **fields: object) -> Result:
    base = Result(
        frame_id=frame_id,
        capture_timestamp_us=CAPTURE_US + (frame_id - 108_000) * 33_333,
        timings_us={"task:lane": 900, "lane:invoke": 400, "capture_to_result": 5000},
        model_ids=MODELS,
        lane=LANE,
        frame_width=320,
        frame_height=240,
    )
    return replace(base, **fields)


def _full_result(frame_id: int = 108_000) -> Result:
    line = TextLine("AGV-042", 0.91, (0.95, 0.9, 0.85, 0.99, 0.7, 0.6, 1.0), PLATE.box)
    return _result(frame_id, detections=(PLATE, *SIGNS), text_lines=(line,))


def _pair(timings: str = "summary") -> tuple[CompactEncoder, CompactDecoder]:
    return CompactEncoder(timings), CompactDecoder()


def _send(encoder: CompactEncoder, decoder: CompactDecoder, result: Result, latency_us: int = 7000) -> Result:
    dictionary, payload = encoder.encode(result, result.capture_timestamp_us + latency_us)
    if dictionary is not None:
        decoder.set_dictionary(dictionary)
    return decoder.decode(payload)


def _wire_size(payload: bytes) -> int:
    return len(encode_frame(Frame(Channel.RESULT, 1234, payload)))


def test_lane_plus_three_detections_and_a_plate_fit_64_bytes_on_the_wire_and_lane_alone_28() -> None:
    encoder = CompactEncoder()
    _, full = encoder.encode(_full_result(), CAPTURE_US + 7000)
    _, lane_only = encoder.encode(_result(108_001), CAPTURE_US + 40_000)
    assert _wire_size(full) <= 64, _wire_size(full)
    assert _wire_size(lane_only) <= 28, _wire_size(lane_only)
    v1_full = codec.result_to_pb(_full_result()).SerializeToString()  # protocol 1 sent this
    assert _wire_size(v1_full) > 4 * _wire_size(full)


def test_a_result_survives_the_round_trip_within_its_rounding() -> None:
    sent = _full_result()
    got = _send(*_pair(), sent)
    assert (got.frame_id, got.model_ids, got.frame_width, got.frame_height) == (sent.frame_id, MODELS, 320, 240)
    assert abs(got.capture_timestamp_us - sent.capture_timestamp_us) < 100
    assert got.timings_us == {SUMMARY_STAGE: 7000}
    assert got.send_timestamp_us == got.capture_timestamp_us + 7000
    assert got.lane is not None and got.lane.status is LaneStatus.OK
    assert got.lane.offset_m == pytest.approx(LANE.offset_m, abs=5e-5)
    assert got.lane.heading_rad == pytest.approx(LANE.heading_rad, abs=5e-5)
    assert got.lane.curvature_per_m == pytest.approx(LANE.curvature_per_m, abs=1e-4)
    assert got.lane.lane_width_m == pytest.approx(LANE.lane_width_m, abs=5e-3)
    for conf in ("offset_confidence", "heading_confidence", "curvature_confidence"):
        assert getattr(got.lane, conf) == pytest.approx(getattr(LANE, conf), abs=0.5 / 31)
    assert [(d.class_id, d.label) for d in got.detections] == [(d.class_id, d.label) for d in sent.detections]
    for mine, theirs in zip(got.detections, sent.detections, strict=True):
        assert mine.score == pytest.approx(theirs.score, abs=0.5 / 255)
        assert mine.box.iou(theirs.box) > 0.97
    (line,) = got.text_lines
    assert line.text == "AGV-042" and line.box == got.detections[0].box  # the plate's box, by reference
    assert line.confidence == pytest.approx(0.91, abs=0.5 / 127)
    assert line.char_confidences == pytest.approx(sent.text_lines[0].char_confidences, abs=0.5 / 15)


def test_classifications_other_text_boxes_and_no_char_confidences_round_trip() -> None:
    sent = _result(
        lane=None,
        text_lines=(TextLine("ÜBER 12", 0.5, (), Box(0.0, 0.0, 1.0, 1.0)), TextLine("x" * 40, 1.0, (0.5,) * 40)),
        classifications=(Classification(3, "cat", 0.6), Classification(9, "dog", 0.25)),
    )
    got = _send(*_pair("off"), sent)
    assert got.lane is None and got.timings_us == {} and got.send_timestamp_us == 0
    assert [(c.class_id, c.label) for c in got.classifications] == [(3, "cat"), (9, "dog")]
    assert got.classifications[1].score == pytest.approx(0.25, abs=0.5 / 255)
    first, second = got.text_lines
    assert (first.text, first.char_confidences, first.box) == ("ÜBER 12", (), Box(0.0, 0.0, 1.0, 1.0))
    assert second.text == "x" * 40 and second.box is None and len(second.char_confidences) == 40


def _values(value: object) -> list[object]:
    """``value`` and every dataclass inside it (tuples walked), depth first."""
    if isinstance(value, tuple):
        return [v for item in value for v in _values(item)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [value, *(v for f in dataclasses.fields(value) for v in _values(getattr(value, f.name)))]
    return []


def test_decoded_values_carry_every_field_of_their_type_and_stay_frozen() -> None:
    full = _full_result()
    sent = replace(
        full, classifications=(Classification(3, "cat", 0.6),), text_lines=(*full.text_lines, TextLine("X", 1.0))
    )
    got = _send(*_pair("full"), sent)
    built = _values(got)
    assert {type(v) for v in built} == {Result, LaneState, Detection, Box, TextLine, Classification}
    for value in built:  # the decoder builds them without __init__: every field must still be set
        assert vars(value).keys() == {f.name for f in dataclasses.fields(value)}, type(value).__name__
        assert value == replace(value)  # type: ignore[type-var]
        if not isinstance(value, Result):  # a Result holds a dict of timings: never hashable
            assert hash(value) == hash(replace(value))  # type: ignore[type-var]
        with pytest.raises(dataclasses.FrozenInstanceError):
            value.frame_id = 0  # type: ignore[attr-defined]


def test_full_timings_name_every_stage_and_summary_only_the_one_figure() -> None:
    encoder, decoder = _pair("full")
    got = _send(encoder, decoder, _result())
    assert got.timings_us == {"task:lane": 900, "lane:invoke": 400, "capture_to_result": 5000, SUMMARY_STAGE: 7000}
    encoder.set_timings("summary")
    assert _send(encoder, decoder, _result(108_001)).timings_us == {SUMMARY_STAGE: 7000}
    with pytest.raises(ValueError, match="timings must be one of"):
        encoder.set_timings("verbose")


def test_the_summary_figure_saturates_instead_of_wrapping() -> None:
    assert _send(*_pair(), _result(), latency_us=10_000_000).timings_us[SUMMARY_STAGE] == 655_350


def test_a_new_name_starts_a_new_generation_and_old_indices_keep_their_meaning() -> None:
    encoder, decoder = _pair()
    first, _ = encoder.encode(_result(detections=SIGNS[:1]), CAPTURE_US)
    assert first is not None and first.generation == 1
    same, _ = encoder.encode(_result(108_001, detections=SIGNS[:1]), CAPTURE_US)
    assert same is None  # nothing new: no announcement
    grown, _ = encoder.encode(_result(108_002, detections=SIGNS), CAPTURE_US)
    assert grown is not None and grown.generation == 2
    assert grown.detection_labels[: len(first.detection_labels)] == first.detection_labels
    switched, _ = encoder.encode(_result(108_003, model_ids=MODELS[:1]), CAPTURE_US)
    assert switched is not None and switched.model_ids == MODELS[:1] and switched.generation == 3
    assert encoder.dictionary.frame_id == 108_003  # the dictionary in force is anchored at the latest result


def test_a_result_of_a_generation_the_host_lacks_is_refused_as_stale() -> None:
    encoder, decoder = _pair()
    first, payload = encoder.encode(_result(detections=SIGNS[:1]), CAPTURE_US)
    assert first is not None
    with pytest.raises(StaleDictionary, match="holds none"):
        decoder.decode(payload)
    decoder.set_dictionary(first)
    missed, payload = encoder.encode(_result(108_001, detections=SIGNS), CAPTURE_US)  # announcement lost
    assert missed is not None
    with pytest.raises(StaleDictionary, match="generation 2"):
        decoder.decode(payload)
    decoder.set_dictionary(first)  # an older generation does not replace a newer one...
    decoder.set_dictionary(missed)
    decoder.set_dictionary(first)
    assert decoder.dictionary == missed
    assert [d.label for d in decoder.decode(payload).detections] == ["stop", "speed_limit"]


def test_an_index_beyond_the_dictionary_is_stale_not_a_crash() -> None:
    encoder, decoder = _pair()
    dictionary, payload = encoder.encode(_result(detections=SIGNS), CAPTURE_US)
    assert dictionary is not None
    decoder.set_dictionary(replace(dictionary, detection_labels=dictionary.detection_labels[:1]))
    with pytest.raises(StaleDictionary, match="label 1"):
        decoder.decode(payload)


@pytest.mark.parametrize("frame_id", [65_535, 65_536, 1_000_000, 2**40])
def test_frame_ids_and_capture_times_are_extended_across_their_wraps(frame_id: int) -> None:
    encoder, decoder = _pair()
    times = [CAPTURE_US + k * 1_700_000_000 // 3 for k in range(8)]  # steps of ~9.4 min: the 24-bit field wraps
    for step, capture in enumerate(times):
        sent = _result(frame_id + step * 20_000, capture_timestamp_us=capture)
        got = _send(encoder, decoder, sent)
        assert got.frame_id == sent.frame_id
        assert abs(got.capture_timestamp_us - capture) < 100


def test_a_host_that_joins_late_extends_from_the_dictionary_and_health_anchors() -> None:
    encoder = CompactEncoder()
    for frame_id in range(200_000, 200_010):
        encoder.encode(_result(frame_id, capture_timestamp_us=CAPTURE_US + frame_id * 100), 0)
    late = CompactDecoder()
    late.set_dictionary(encoder.dictionary)  # what an info call or a Hello carries
    _, payload = encoder.encode(_result(200_010, capture_timestamp_us=CAPTURE_US + 200_010 * 100), 0)
    assert late.decode(payload).frame_id == 200_010
    late.anchor(frame_id=300_000, timestamp_us=CAPTURE_US + 300_000 * 100)  # a Health report much later
    _, payload = encoder.encode(_result(300_002, capture_timestamp_us=CAPTURE_US + 300_002 * 100), 0)
    got = late.decode(payload)
    assert got.frame_id == 300_002 and abs(got.capture_timestamp_us - (CAPTURE_US + 300_002 * 100)) < 100


def test_values_beyond_their_fields_saturate_and_nan_is_refused() -> None:
    wild = replace(LANE, offset_m=9.0, heading_rad=-4.0, curvature_per_m=100.0, lane_width_m=12.0)
    got = _send(*_pair(), _result(lane=wild))
    assert got.lane is not None
    assert got.lane.offset_m == pytest.approx(3.2767) and got.lane.heading_rad == pytest.approx(-1.6384)
    assert got.lane.curvature_per_m == pytest.approx(3.2766) and got.lane.lane_width_m == pytest.approx(5.11)
    with pytest.raises(ValueError):
        CompactEncoder().encode(_result(lane=replace(LANE, offset_m=math.nan)), 0)
    with pytest.raises(ValueError, match="256 bytes; at most 255"):
        CompactEncoder().encode(_result(text_lines=(TextLine("y" * 256, 1.0),)), 0)


def test_truncated_and_trailing_payloads_are_protocol_errors() -> None:
    encoder, decoder = _pair()
    dictionary, payload = encoder.encode(_full_result(), CAPTURE_US)
    assert dictionary is not None
    decoder.set_dictionary(dictionary)
    for cut in range(len(payload)):
        with pytest.raises(ProtocolError):
            decoder.decode(payload[:cut])
    with pytest.raises(ProtocolError, match="after the last field"):
        decoder.decode(payload + b"\x00")


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=80))
def test_any_payload_decodes_or_raises_a_protocol_error(payload: bytes) -> None:
    decoder = CompactDecoder()
    decoder.set_dictionary(
        ResultDictionary(
            generation=(payload[0] >> 5) if payload else 1,
            detection_labels=((0, "stop"), (6, "plate")),
            classification_labels=((1, "cat"),),
            stages=("a",),
            timings="full",
        )
    )
    try:
        result = decoder.decode(payload)
    except ProtocolError:
        return
    assert result.frame_id >= 0 and result.capture_timestamp_us >= 0

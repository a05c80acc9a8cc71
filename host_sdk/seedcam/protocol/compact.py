"""Protocol 2's compact Result: a few dozen bytes a frame, so results fit a 115200-baud UART.

The RESULT channel's payload is not a protobuf message but the packed layout
below (little-endian; docs/wire.md has the table). Names (model ids, class
labels, stage names) and constants (frame size, the lane's reference distance,
the timings mode) are not repeated in every result: they travel in a
:class:`ResultDictionary`, announced before the first result that needs it and
carried by every DeviceInfo, and a result refers to them by index. Each result
carries the low 3 bits of its dictionary's generation, so a host that missed an
announcement finds out instead of mislabelling.

=========  ==================================================================
bytes      field
=========  ==================================================================
1          head: bit 0 lane, 1 detections, 2 text lines, 3 classifications,
           4 timings; bits 5-7 the dictionary generation mod 8
2          frame id mod 2^16
3          capture time mod 2^24, units of 100 µs
[2]        timings: capture→send, units of 10 µs (saturates at 655.35 ms);
           in ``full`` mode then 1 byte n and n x (stage index, LEB128 µs)
[9]        lane, a 72-bit field: offset (16 bits signed, 0.1 mm), heading
           (15 bits signed, 1e-4 rad), curvature (15 bits signed, 2e-4 /m),
           status (2 bits), the offset, heading and curvature confidences
           (5 bits each, /31), lane width (9 bits, cm)
[1+7n]     detections: n, then per detection the label index, the score
           (/255) and the box (4 x 10 bits, /1023: x_min, y_min, x_max, y_max)
[1+...]    text lines: n, then per line a head byte (bits 0-4 the text's length
           in UTF-8 bytes, 31: a length byte follows; bits 5-7 its box: 0 none,
           1 a 5-byte box follows, 2-7 the box of detection 0-5 of this result),
           the confidence (bits 0-6, /127; bit 7: per-character confidences
           follow), the text, and 4 bits (/15) per character, two a byte
[1+2n]     classifications: n, then the label index and the score (/255)
=========  ==================================================================

Frame ids and capture times are extended to full width from the nearest
reference: the previous result, the dictionary's anchor, a Health report.
Rounding is the price: boxes to 1/1023 of the frame, scores to 1/255, lane
offsets to 0.1 mm, capture times to 100 µs.
"""

from __future__ import annotations

import struct
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from seedcam.errors import ProtocolError
from seedcam.types import Box, Classification, Detection, LaneState, LaneStatus, Result, TextLine

__all__ = [
    "SUMMARY_STAGE",
    "TIMINGS_MODES",
    "CompactDecoder",
    "CompactEncoder",
    "ResultDictionary",
    "StaleDictionary",
]

#: what ``pipeline.timings`` may be: no figures, one capture→send figure, every stage
TIMINGS_MODES = ("off", "summary", "full")
#: the stage name of the summary figure in :attr:`Result.timings_us`
SUMMARY_STAGE = "capture_to_send"

_LANE, _DETECTIONS, _TEXT, _CLASSES, _TIMINGS = 1, 2, 4, 8, 16
_GENERATION_SHIFT = 5
_GENERATION_MASK = 0x07
_HEAD = struct.Struct("<BHHB")  # head, frame id, capture time (low 16 bits, high 8 bits)
_FRAME_BITS = 16
_TIME_BITS = 24
_TIME_UNIT_US = 100
_LATENCY = struct.Struct("<H")
_LATENCY_UNIT_US = 10
_MAX_TABLE = 256  # indices are one byte
_BOX_STEPS = 1023
_SCORE_STEPS = 255
_CONF_STEPS = 127
_CHAR_STEPS = 15
_LANE_CONF_STEPS = 31
_OFFSET_UNIT, _HEADING_UNIT, _CURVATURE_UNIT, _WIDTH_UNIT = 1e-4, 1e-4, 2e-4, 1e-2
_BOX_KIND_NONE, _BOX_KIND_EXPLICIT, _BOX_KIND_DETECTION = 0, 1, 2
_LONG_TEXT = 31
_CHAR_CONFIDENCES = 0x80

_Key = TypeVar("_Key", bound=Hashable)  # of a dictionary table: a label (class id, name) or a stage name

_STATUS_CODES = {LaneStatus.UNKNOWN: 0, LaneStatus.OK: 1, LaneStatus.ONE_LINE: 2, LaneStatus.LOST: 3}
_STATUS_OF_CODE = {code: status for status, code in _STATUS_CODES.items()}


class StaleDictionary(ProtocolError):
    """A compact result refers to a dictionary this side does not hold (an announcement was missed)."""


@dataclass(frozen=True)
class ResultDictionary:
    """What compact results refer to by index (the ``ResultDictionary`` of the schema)."""

    generation: int = 0
    model_ids: tuple[str, ...] = ()
    detection_labels: tuple[tuple[int, str], ...] = ()  #: index -> (class id, label)
    classification_labels: tuple[tuple[int, str], ...] = ()
    stages: tuple[str, ...] = ()  #: index -> stage name (``full`` timings)
    timings: str = "summary"
    frame_width: int = 0
    frame_height: int = 0
    reference_forward_m: float = 0.0
    frame_id: int = 0  #: anchor: a recent frame id
    timestamp_us: int = 0  #: anchor: a recent capture time


def _clamp(value: int, low: int, high: int) -> int:
    return low if value < low else high if value > high else value


def _quantise(value: float, steps: int) -> int:
    """``value`` in 0..1 as an integer 0..steps (raises ValueError for NaN)."""
    return _clamp(round(value * steps), 0, steps)


def _signed(value: float, unit: float, bits: int) -> int:
    """``value`` in ``unit`` steps as a ``bits``-wide two's complement field (saturating)."""
    limit = 1 << (bits - 1)
    return _clamp(round(value / unit), -limit, limit - 1) & ((1 << bits) - 1)


def _unsigned_field(field: int, bits: int) -> int:
    return field - (1 << bits) if field >> (bits - 1) else field


def _extend(reference: int, low: int, bits: int) -> int:
    """The full value nearest to ``reference`` whose low ``bits`` are ``low`` (never negative)."""
    modulus = 1 << bits
    delta = (low - reference) % modulus
    if delta >= modulus >> 1:
        delta -= modulus
    value = reference + delta
    return value + modulus if value < 0 else value


def _pack_box(box: Box) -> bytes:
    packed = (
        _quantise(box.x_min, _BOX_STEPS)
        | _quantise(box.y_min, _BOX_STEPS) << 10
        | _quantise(box.x_max, _BOX_STEPS) << 20
        | _quantise(box.y_max, _BOX_STEPS) << 30
    )
    return packed.to_bytes(5, "little")


def _unpack_box(data: bytes | memoryview, at: int) -> Box:
    packed = int.from_bytes(data[at : at + 5], "little")
    return Box(
        (packed & 0x3FF) / _BOX_STEPS,
        (packed >> 10 & 0x3FF) / _BOX_STEPS,
        (packed >> 20 & 0x3FF) / _BOX_STEPS,
        (packed >> 30 & 0x3FF) / _BOX_STEPS,
    )


def _pack_lane(lane: LaneState) -> bytes:
    packed = (
        _signed(lane.offset_m, _OFFSET_UNIT, 16)
        | _signed(lane.heading_rad, _HEADING_UNIT, 15) << 16
        | _signed(lane.curvature_per_m, _CURVATURE_UNIT, 15) << 31
        | _STATUS_CODES[lane.status] << 46
        | _quantise(lane.offset_confidence, _LANE_CONF_STEPS) << 48
        | _quantise(lane.heading_confidence, _LANE_CONF_STEPS) << 53
        | _quantise(lane.curvature_confidence, _LANE_CONF_STEPS) << 58
        | _clamp(round(lane.lane_width_m / _WIDTH_UNIT), 0, 511) << 63
    )
    return packed.to_bytes(9, "little")


def _unpack_lane(data: bytes | memoryview, at: int, reference_forward_m: float) -> LaneState:
    packed = int.from_bytes(data[at : at + 9], "little")
    return LaneState(
        status=_STATUS_OF_CODE[packed >> 46 & 0x3],
        offset_m=_unsigned_field(packed & 0xFFFF, 16) * _OFFSET_UNIT,
        heading_rad=_unsigned_field(packed >> 16 & 0x7FFF, 15) * _HEADING_UNIT,
        curvature_per_m=_unsigned_field(packed >> 31 & 0x7FFF, 15) * _CURVATURE_UNIT,
        offset_confidence=(packed >> 48 & 0x1F) / _LANE_CONF_STEPS,
        heading_confidence=(packed >> 53 & 0x1F) / _LANE_CONF_STEPS,
        curvature_confidence=(packed >> 58 & 0x1F) / _LANE_CONF_STEPS,
        lane_width_m=(packed >> 63 & 0x1FF) * _WIDTH_UNIT,
        reference_forward_m=reference_forward_m,
    )


def _entry(table: tuple[tuple[int, str], ...], index: int) -> tuple[int, str]:
    if index >= len(table):
        raise StaleDictionary(f"compact result names label {index}; its dictionary has {len(table)}")
    return table[index]


def _leb128(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


class CompactEncoder:
    """Encodes Results into the compact layout; owns the device's side of the dictionary.

    Not thread-safe: one sender (the link's result path) uses it.

    Args:
        timings: the initial ``pipeline.timings`` mode.

    Raises:
        ValueError: ``timings`` is not one of :data:`TIMINGS_MODES`.
    """

    def __init__(self, timings: str = "summary") -> None:
        self._dictionary = ResultDictionary(timings=self._checked_mode(timings))
        self._detection_index: dict[tuple[int, str], int] = {}
        self._classification_index: dict[tuple[int, str], int] = {}
        self._stage_index: dict[str, int] = {}
        self._timings = self._dictionary.timings
        self._last_frame_id = 0
        self._last_timestamp_us = 0

    @staticmethod
    def _checked_mode(mode: str) -> str:
        if mode not in TIMINGS_MODES:
            raise ValueError(f"timings must be one of {', '.join(TIMINGS_MODES)}, not {mode!r}")
        return mode

    @property
    def timings(self) -> str:
        """The timings mode the next result is encoded with."""
        return self._timings

    def set_timings(self, mode: str) -> None:
        """Change the timings mode (from the next result on, under a new dictionary).

        Raises:
            ValueError: ``mode`` is not one of :data:`TIMINGS_MODES`.
        """
        self._timings = self._checked_mode(mode)

    @property
    def generation(self) -> int:
        """The generation of the dictionary in force (0 before the first result)."""
        return self._dictionary.generation

    @property
    def dictionary(self) -> ResultDictionary:
        """The dictionary in force, anchored at the latest encoded result."""
        return replace(self._dictionary, frame_id=self._last_frame_id, timestamp_us=self._last_timestamp_us)

    def encode(self, result: Result, send_timestamp_us: int) -> tuple[ResultDictionary | None, bytes]:
        """The compact payload of ``result``, sent at ``send_timestamp_us`` (the summary figure's end).

        Returns:
            A new dictionary that must reach the host before the payload (None when the
            one in force covers the result), and the payload.

        Raises:
            ValueError: a value cannot be encoded (NaN, a text longer than 255 bytes).
        """
        announce = self._refresh_dictionary(result)
        dictionary = self._dictionary
        self._last_frame_id, self._last_timestamp_us = result.frame_id, result.capture_timestamp_us
        head = (dictionary.generation & _GENERATION_MASK) << _GENERATION_SHIFT
        body = bytearray()
        if dictionary.timings != "off":
            head |= _TIMINGS
            latency = max(0, send_timestamp_us - result.capture_timestamp_us) // _LATENCY_UNIT_US
            body += _LATENCY.pack(min(latency, 0xFFFF))
            if dictionary.timings == "full":
                stages = [(self._stage_index[name], us) for name, us in result.timings_us.items()]
                body.append(len(stages))
                for index, us in stages:
                    body.append(index)
                    body += _leb128(max(0, int(us)))
        if result.lane is not None:
            head |= _LANE
            body += _pack_lane(result.lane)
        if result.detections:
            head |= _DETECTIONS
            body += self._pack_detections(result.detections)
        if result.text_lines:
            head |= _TEXT
            body += self._pack_text_lines(result.text_lines, result.detections)
        if result.classifications:
            head |= _CLASSES
            body.append(len(result.classifications))
            for cls in result.classifications:
                body.append(self._classification_index[(cls.class_id, cls.label)])
                body.append(_quantise(cls.score, _SCORE_STEPS))
        ticks = result.capture_timestamp_us // _TIME_UNIT_US
        prefix = _HEAD.pack(head, result.frame_id & 0xFFFF, ticks & 0xFFFF, ticks >> 16 & 0xFF)
        return announce, prefix + bytes(body)

    def _pack_detections(self, detections: Sequence[Detection]) -> bytes:
        if len(detections) > 255:
            raise ValueError(f"{len(detections)} detections in one result; at most 255 fit")
        out = bytearray((len(detections),))
        for det in detections:
            out.append(self._detection_index[(det.class_id, det.label)])
            out.append(_quantise(det.score, _SCORE_STEPS))
            out += _pack_box(det.box)
        return bytes(out)

    @staticmethod
    def _pack_text_lines(lines: Sequence[TextLine], detections: Sequence[Detection]) -> bytes:
        if len(lines) > 255:
            raise ValueError(f"{len(lines)} text lines in one result; at most 255 fit")
        out = bytearray((len(lines),))
        boxes = [det.box for det in detections[: 8 - _BOX_KIND_DETECTION]]
        for line in lines:
            text = line.text.encode()
            if len(text) > 255:
                raise ValueError(f"a text line of {len(text)} bytes; at most 255 fit")
            if line.box is None:
                kind = _BOX_KIND_NONE
            elif line.box in boxes:
                kind = _BOX_KIND_DETECTION + boxes.index(line.box)
            else:
                kind = _BOX_KIND_EXPLICIT
            length = min(len(text), _LONG_TEXT)
            out.append(length | kind << 5)
            if length == _LONG_TEXT:
                out.append(len(text))
            if kind == _BOX_KIND_EXPLICIT:
                assert line.box is not None
                out += _pack_box(line.box)
            # per-character confidences travel only when there is one per character
            per_char = len(line.char_confidences) == len(line.text) > 0
            out.append(_quantise(line.confidence, _CONF_STEPS) | (_CHAR_CONFIDENCES if per_char else 0))
            out += text
            if per_char:
                nibbles = [_quantise(c, _CHAR_STEPS) for c in line.char_confidences]
                nibbles.append(0)
                out += bytes(nibbles[i] | nibbles[i + 1] << 4 for i in range(0, len(line.char_confidences), 2))
        return bytes(out)

    def _refresh_dictionary(self, result: Result) -> ResultDictionary | None:
        """Start a new generation when the result needs a name or constant the current one lacks."""
        old = self._dictionary
        detection_labels = [(d.class_id, d.label) for d in result.detections]
        classification_labels = [(c.class_id, c.label) for c in result.classifications]
        stages = list(result.timings_us) if self._timings == "full" else []
        reference_forward = result.lane.reference_forward_m if result.lane is not None else old.reference_forward_m
        unchanged = (
            old.generation > 0
            and old.timings == self._timings
            and old.model_ids == result.model_ids
            and (old.frame_width, old.frame_height) == (result.frame_width, result.frame_height)
            and old.reference_forward_m == reference_forward
            and all(key in self._detection_index for key in detection_labels)
            and all(key in self._classification_index for key in classification_labels)
            and all(name in self._stage_index for name in stages)
        )
        if unchanged:
            return None
        self._grow(self._detection_index, detection_labels)
        self._grow(self._classification_index, classification_labels)
        self._grow(self._stage_index, stages)
        self._dictionary = ResultDictionary(
            generation=old.generation + 1,
            model_ids=result.model_ids,
            detection_labels=tuple(self._detection_index),
            classification_labels=tuple(self._classification_index),
            stages=tuple(self._stage_index),
            timings=self._timings,
            frame_width=result.frame_width,
            frame_height=result.frame_height,
            reference_forward_m=reference_forward,
            frame_id=result.frame_id,
            timestamp_us=result.capture_timestamp_us,
        )
        return self._dictionary

    @staticmethod
    def _grow(index: dict[_Key, int], keys: Sequence[_Key]) -> None:
        """Append the new keys; a table that would overflow one byte starts over with these keys."""
        fresh = [key for key in dict.fromkeys(keys) if key not in index]
        if len(index) + len(fresh) > _MAX_TABLE:
            index.clear()
            fresh = list(dict.fromkeys(keys))
        for key in fresh:
            index[key] = len(index)


class CompactDecoder:
    """Decodes compact results; holds the host's side of the dictionary and the counters' references.

    Use from one thread (the session's reader).
    """

    def __init__(self) -> None:
        self._dictionary: ResultDictionary | None = None
        self._frame_reference = 0
        self._time_reference = 0  # in capture-time ticks

    @property
    def dictionary(self) -> ResultDictionary | None:
        return self._dictionary

    def set_dictionary(self, dictionary: ResultDictionary) -> None:
        """Use ``dictionary`` from now on (an announcement or a DeviceInfo); an older generation is ignored.

        A dictionary of generation 0 (the device has encoded no result yet) only anchors.
        """
        current = self._dictionary
        if dictionary.generation and (current is None or dictionary.generation >= current.generation):
            self._dictionary = dictionary
        self.anchor(dictionary.frame_id, dictionary.timestamp_us)

    def forget(self) -> None:
        """Drop the dictionary (the device restarted: its generations start again)."""
        self._dictionary = None

    def anchor(self, frame_id: int | None = None, timestamp_us: int | None = None) -> None:
        """Take a recent full frame id and capture time (a Health report's) as the references."""
        if frame_id is not None:
            self._frame_reference = frame_id
        if timestamp_us is not None:
            self._time_reference = timestamp_us // _TIME_UNIT_US

    def decode(self, payload: bytes, *, received_monotonic: float = 0.0) -> Result:
        """The Result of one compact payload.

        Raises:
            StaleDictionary: the payload's generation is not the dictionary's, or it names
                an index the dictionary does not have.
            ProtocolError: the payload is truncated or malformed.
        """
        dictionary = self._dictionary
        try:
            head, frame_low, time_low, time_high = _HEAD.unpack_from(payload)
        except struct.error as exc:
            raise ProtocolError(f"compact result of {len(payload)} bytes is too short") from exc
        if dictionary is None or (dictionary.generation & _GENERATION_MASK) != head >> _GENERATION_SHIFT:
            held = "none" if dictionary is None else str(dictionary.generation)
            raise StaleDictionary(
                f"result of dictionary generation {head >> _GENERATION_SHIFT} (mod 8); this side holds {held}"
            )
        try:
            return self._decode_body(
                payload, dictionary, head, frame_low, time_low | time_high << 16, received_monotonic
            )
        except IndexError as exc:
            raise ProtocolError(f"compact result of {len(payload)} bytes is cut short") from exc
        except (struct.error, UnicodeDecodeError, ValueError) as exc:
            raise ProtocolError(f"malformed compact result: {exc}") from exc

    def _decode_body(
        self,
        payload: bytes,
        dictionary: ResultDictionary,
        head: int,
        frame_low: int,
        time_low: int,
        received_monotonic: float,
    ) -> Result:
        frame_id = _extend(self._frame_reference, frame_low, _FRAME_BITS)
        ticks = _extend(self._time_reference, time_low, _TIME_BITS)
        self._frame_reference, self._time_reference = frame_id, ticks
        capture_us = ticks * _TIME_UNIT_US
        at = _HEAD.size
        end = len(payload)
        timings: dict[str, int] = {}
        send_us = 0
        if head & _TIMINGS:
            (latency,) = _LATENCY.unpack_from(payload, at)
            at += 2
            timings[SUMMARY_STAGE] = latency * _LATENCY_UNIT_US
            send_us = capture_us + timings[SUMMARY_STAGE]
            if dictionary.timings == "full":
                count = payload[at]
                at += 1
                for _ in range(count):
                    index = payload[at]
                    if index >= len(dictionary.stages):
                        raise StaleDictionary(f"compact result names stage {index}; its dictionary has fewer")
                    name = dictionary.stages[index]
                    at += 1
                    value = shift = 0
                    while True:
                        byte = payload[at]
                        at += 1
                        value |= (byte & 0x7F) << shift
                        shift += 7
                        if not byte & 0x80:
                            break
                    timings[name] = value
        lane = None
        if head & _LANE:
            if at + 9 > end:
                raise ValueError("lane field cut short")
            lane = _unpack_lane(payload, at, dictionary.reference_forward_m)
            at += 9
        detections: tuple[Detection, ...] = ()
        if head & _DETECTIONS:
            count = payload[at]
            at += 1
            if at + 7 * count > end:
                raise ValueError("detections cut short")
            labels = dictionary.detection_labels
            found = []
            for _ in range(count):  # the hot loop of a busy frame: the box unpacked inline
                class_id, label = _entry(labels, payload[at])
                packed = int.from_bytes(payload[at + 2 : at + 7], "little")
                box = Box(
                    (packed & 0x3FF) / _BOX_STEPS,
                    (packed >> 10 & 0x3FF) / _BOX_STEPS,
                    (packed >> 20 & 0x3FF) / _BOX_STEPS,
                    (packed >> 30 & 0x3FF) / _BOX_STEPS,
                )
                found.append(Detection(class_id, label, payload[at + 1] / _SCORE_STEPS, box))
                at += 7
            detections = tuple(found)
        text_lines: tuple[TextLine, ...] = ()
        if head & _TEXT:
            text_lines, at = self._decode_text_lines(payload, at, detections)
        classifications: tuple[Classification, ...] = ()
        if head & _CLASSES:
            count = payload[at]
            at += 1
            labels = dictionary.classification_labels
            found_classes = []
            for _ in range(count):
                class_id, label = _entry(labels, payload[at])
                found_classes.append(Classification(class_id, label, payload[at + 1] / _SCORE_STEPS))
                at += 2
            classifications = tuple(found_classes)
        if at != end:
            raise ValueError(f"{end - at} bytes after the last field")
        return Result(
            frame_id=frame_id,
            capture_timestamp_us=capture_us,
            timings_us=timings,
            model_ids=dictionary.model_ids,
            lane=lane,
            detections=detections,
            text_lines=text_lines,
            classifications=classifications,
            frame_width=dictionary.frame_width,
            frame_height=dictionary.frame_height,
            send_timestamp_us=send_us,
            received_monotonic=received_monotonic,
        )

    @staticmethod
    def _decode_text_lines(
        payload: bytes, at: int, detections: tuple[Detection, ...]
    ) -> tuple[tuple[TextLine, ...], int]:
        count = payload[at]
        at += 1
        lines = []
        for _ in range(count):
            line_head = payload[at]
            at += 1
            length, kind = line_head & 0x1F, line_head >> 5
            if length == _LONG_TEXT:
                length = payload[at]
                at += 1
            box: Box | None = None
            if kind == _BOX_KIND_EXPLICIT:
                if at + 5 > len(payload):
                    raise ValueError("text box cut short")
                box = _unpack_box(payload, at)
                at += 5
            elif kind >= _BOX_KIND_DETECTION:
                if kind - _BOX_KIND_DETECTION >= len(detections):
                    raise ValueError(f"text line in the box of detection {kind - _BOX_KIND_DETECTION}, which is absent")
                box = detections[kind - _BOX_KIND_DETECTION].box
            confidence_byte = payload[at]
            at += 1
            if at + length > len(payload):
                raise ValueError("text cut short")
            text = bytes(payload[at : at + length]).decode()
            at += length
            chars: tuple[float, ...] = ()
            if confidence_byte & _CHAR_CONFIDENCES:
                size = (len(text) + 1) // 2
                if at + size > len(payload):
                    raise ValueError("character confidences cut short")
                packed = payload[at : at + size]
                at += size
                chars = tuple((packed[i // 2] >> (4 * (i % 2)) & 0xF) / _CHAR_STEPS for i in range(len(text)))
            lines.append(TextLine(text, (confidence_byte & 0x7F) / _CONF_STEPS, chars, box))
        return tuple(lines), at

"""Protocol 2's compact Result: a few dozen bytes a frame, so results fit a 115200-baud UART.

The RESULT channel's payload is not a protobuf message but a packed layout
(little-endian; docs/wire.md has the table). Names (model ids, class
labels, stage names) and constants (frame size, the lane's reference distance,
the timings mode) are not repeated in every result: they travel in a
:class:`ResultDictionary`, announced before the first result that needs it and
carried by every DeviceInfo, and a result refers to them by index. Each result
carries the low 3 bits of its dictionary's generation, so a host that missed an
announcement finds out instead of mislabelling.

The bit layout of each field is in :mod:`seedcam.protocol._compact_layout`.

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
from seedcam.protocol._compact_layout import (
    BOX_KIND_DETECTION,
    BOX_KIND_EXPLICIT,
    BOX_KIND_NONE,
    BOX_STEPS,
    CHAR_CONFIDENCES,
    CHAR_STEPS,
    CLASSES,
    CONF_STEPS,
    DETECTIONS,
    FRAME_BITS,
    GENERATION_MASK,
    GENERATION_SHIFT,
    HEAD,
    LANE,
    LATENCY,
    LATENCY_UNIT_US,
    LONG_TEXT,
    MAX_TABLE,
    SCORE_STEPS,
    TEXT,
    TIME_BITS,
    TIME_UNIT_US,
    TIMINGS,
    extend,
    leb128,
    pack_box,
    pack_lane,
    quantise,
    unpack_box,
    unpack_lane,
)
from seedcam.protocol._frozen import built
from seedcam.types import Box, Classification, Detection, Result, TextLine

__all__ = [
    "SUMMARY_STAGE",
    "TIMINGS_MODES",
    "CompactDecoder",
    "CompactEncoder",
    "ResultDictionary",
    "StaleDictionary",
]

#: a byte of per-character confidences -> its two characters' values (low nibble first)
_CHAR_PAIRS = tuple(((byte & 0xF) / CHAR_STEPS, (byte >> 4) / CHAR_STEPS) for byte in range(256))

#: what ``pipeline.timings`` may be: no figures, one capture→send figure, every stage
TIMINGS_MODES = ("off", "summary", "full")
#: the stage name of the summary figure in :attr:`Result.timings_us`
SUMMARY_STAGE = "capture_to_send"

_Key = TypeVar("_Key", bound=Hashable)  # of a dictionary table: a label (class id, name) or a stage name


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


def _entry(table: tuple[tuple[int, str], ...], index: int) -> tuple[int, str]:
    if index >= len(table):
        raise StaleDictionary(f"compact result names label {index}; its dictionary has {len(table)}")
    return table[index]


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
        head = (dictionary.generation & GENERATION_MASK) << GENERATION_SHIFT
        body = bytearray()
        if dictionary.timings != "off":
            head |= TIMINGS
            latency = max(0, send_timestamp_us - result.capture_timestamp_us) // LATENCY_UNIT_US
            body += LATENCY.pack(min(latency, 0xFFFF))
            if dictionary.timings == "full":
                stages = [(self._stage_index[name], us) for name, us in result.timings_us.items()]
                body.append(len(stages))
                for index, us in stages:
                    body.append(index)
                    body += leb128(max(0, int(us)))
        if result.lane is not None:
            head |= LANE
            body += pack_lane(result.lane)
        if result.detections:
            head |= DETECTIONS
            body += self._pack_detections(result.detections)
        if result.text_lines:
            head |= TEXT
            body += self._pack_text_lines(result.text_lines, result.detections)
        if result.classifications:
            head |= CLASSES
            body.append(len(result.classifications))
            for cls in result.classifications:
                body.append(self._classification_index[(cls.class_id, cls.label)])
                body.append(quantise(cls.score, SCORE_STEPS))
        ticks = result.capture_timestamp_us // TIME_UNIT_US
        prefix = HEAD.pack(head, result.frame_id & 0xFFFF, ticks & 0xFFFF, ticks >> 16 & 0xFF)
        return announce, prefix + bytes(body)

    def _pack_detections(self, detections: Sequence[Detection]) -> bytes:
        if len(detections) > 255:
            raise ValueError(f"{len(detections)} detections in one result; at most 255 fit")
        out = bytearray((len(detections),))
        for det in detections:
            out.append(self._detection_index[(det.class_id, det.label)])
            out.append(quantise(det.score, SCORE_STEPS))
            out += pack_box(det.box)
        return bytes(out)

    @staticmethod
    def _pack_text_lines(lines: Sequence[TextLine], detections: Sequence[Detection]) -> bytes:
        if len(lines) > 255:
            raise ValueError(f"{len(lines)} text lines in one result; at most 255 fit")
        out = bytearray((len(lines),))
        boxes = [det.box for det in detections[: 8 - BOX_KIND_DETECTION]]
        for line in lines:
            text = line.text.encode()
            if len(text) > 255:
                raise ValueError(f"a text line of {len(text)} bytes; at most 255 fit")
            if line.box is None:
                kind = BOX_KIND_NONE
            elif line.box in boxes:
                kind = BOX_KIND_DETECTION + boxes.index(line.box)
            else:
                kind = BOX_KIND_EXPLICIT
            length = min(len(text), LONG_TEXT)
            out.append(length | kind << 5)
            if length == LONG_TEXT:
                out.append(len(text))
            if kind == BOX_KIND_EXPLICIT:
                assert line.box is not None
                out += pack_box(line.box)
            # per-character confidences travel only when there is one per character
            per_char = len(line.char_confidences) == len(line.text) > 0
            out.append(quantise(line.confidence, CONF_STEPS) | (CHAR_CONFIDENCES if per_char else 0))
            out += text
            if per_char:
                nibbles = [quantise(c, CHAR_STEPS) for c in line.char_confidences]
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
        if len(index) + len(fresh) > MAX_TABLE:
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
            self._time_reference = timestamp_us // TIME_UNIT_US

    def decode(self, payload: bytes, *, received_monotonic: float = 0.0) -> Result:
        """The Result of one compact payload.

        Raises:
            StaleDictionary: the payload's generation is not the dictionary's, or it names
                an index the dictionary does not have.
            ProtocolError: the payload is truncated or malformed.
        """
        dictionary = self._dictionary
        try:
            head, frame_low, time_low, time_high = HEAD.unpack_from(payload)
        except struct.error as exc:
            raise ProtocolError(f"compact result of {len(payload)} bytes is too short") from exc
        if dictionary is None or (dictionary.generation & GENERATION_MASK) != head >> GENERATION_SHIFT:
            held = "none" if dictionary is None else str(dictionary.generation)
            raise StaleDictionary(
                f"result of dictionary generation {head >> GENERATION_SHIFT} (mod 8); this side holds {held}"
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
        frame_id = extend(self._frame_reference, frame_low, FRAME_BITS)
        ticks = extend(self._time_reference, time_low, TIME_BITS)
        self._frame_reference, self._time_reference = frame_id, ticks
        capture_us = ticks * TIME_UNIT_US
        at = HEAD.size
        end = len(payload)
        timings: dict[str, int] = {}
        send_us = 0
        if head & TIMINGS:
            (latency,) = LATENCY.unpack_from(payload, at)
            at += 2
            timings[SUMMARY_STAGE] = latency * LATENCY_UNIT_US
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
        if head & LANE:
            if at + 9 > end:
                raise ValueError("lane field cut short")
            lane = unpack_lane(payload, at, dictionary.reference_forward_m)
            at += 9
        detections: tuple[Detection, ...] = ()
        if head & DETECTIONS:
            count = payload[at]
            at += 1
            if at + 7 * count > end:
                raise ValueError("detections cut short")
            labels = dictionary.detection_labels
            found = []
            for _ in range(count):  # the hot loop of a busy frame: the box unpacked inline
                class_id, label = _entry(labels, payload[at])
                packed = int.from_bytes(payload[at + 2 : at + 7], "little")
                box = built(
                    Box,
                    x_min=(packed & 0x3FF) / BOX_STEPS,
                    y_min=(packed >> 10 & 0x3FF) / BOX_STEPS,
                    x_max=(packed >> 20 & 0x3FF) / BOX_STEPS,
                    y_max=(packed >> 30 & 0x3FF) / BOX_STEPS,
                )
                found.append(
                    built(Detection, class_id=class_id, label=label, score=payload[at + 1] / SCORE_STEPS, box=box)
                )
                at += 7
            detections = tuple(found)
        text_lines: tuple[TextLine, ...] = ()
        if head & TEXT:
            text_lines, at = self._decode_text_lines(payload, at, detections)
        classifications: tuple[Classification, ...] = ()
        if head & CLASSES:
            count = payload[at]
            at += 1
            labels = dictionary.classification_labels
            found_classes = []
            for _ in range(count):
                class_id, label = _entry(labels, payload[at])
                found_classes.append(
                    built(Classification, class_id=class_id, label=label, score=payload[at + 1] / SCORE_STEPS)
                )
                at += 2
            classifications = tuple(found_classes)
        if at != end:
            raise ValueError(f"{end - at} bytes after the last field")
        return built(
            Result,
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
            if length == LONG_TEXT:
                length = payload[at]
                at += 1
            box: Box | None = None
            if kind == BOX_KIND_EXPLICIT:
                if at + 5 > len(payload):
                    raise ValueError("text box cut short")
                box = unpack_box(payload, at)
                at += 5
            elif kind >= BOX_KIND_DETECTION:
                if kind - BOX_KIND_DETECTION >= len(detections):
                    raise ValueError(f"text line in the box of detection {kind - BOX_KIND_DETECTION}, which is absent")
                box = detections[kind - BOX_KIND_DETECTION].box
            confidence_byte = payload[at]
            at += 1
            if at + length > len(payload):
                raise ValueError("text cut short")
            text = bytes(payload[at : at + length]).decode()
            at += length
            chars: tuple[float, ...] = ()
            if confidence_byte & CHAR_CONFIDENCES:
                size = (len(text) + 1) // 2
                if at + size > len(payload):
                    raise ValueError("character confidences cut short")
                packed = payload[at : at + size]
                at += size
                chars = tuple(value for byte in packed for value in _CHAR_PAIRS[byte])[: len(text)]
            lines.append(
                built(
                    TextLine,
                    text=text,
                    confidence=(confidence_byte & 0x7F) / CONF_STEPS,
                    char_confidences=chars,
                    box=box,
                )
            )
        return tuple(lines), at

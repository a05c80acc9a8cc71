"""The bit layout of protocol 2's compact Result fields: quantisation, packed boxes and lanes, varints.

:mod:`seedcam.protocol.compact` builds and reads whole results from these
pieces (little-endian; docs/wire.md has the same table):

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
"""

from __future__ import annotations

import struct

from seedcam.protocol._frozen import built
from seedcam.types import Box, LaneState, LaneStatus

LANE, DETECTIONS, TEXT, CLASSES, TIMINGS = 1, 2, 4, 8, 16
GENERATION_SHIFT = 5
GENERATION_MASK = 0x07
HEAD = struct.Struct("<BHHB")  # head, frame id, capture time (low 16 bits, high 8 bits)
FRAME_BITS = 16
TIME_BITS = 24
TIME_UNIT_US = 100
LATENCY = struct.Struct("<H")
LATENCY_UNIT_US = 10
MAX_TABLE = 256  # indices are one byte
BOX_STEPS = 1023
SCORE_STEPS = 255
CONF_STEPS = 127
CHAR_STEPS = 15
LANE_CONF_STEPS = 31
OFFSET_UNIT, HEADING_UNIT, CURVATURE_UNIT, WIDTH_UNIT = 1e-4, 1e-4, 2e-4, 1e-2
BOX_KIND_NONE, BOX_KIND_EXPLICIT, BOX_KIND_DETECTION = 0, 1, 2
LONG_TEXT = 31
CHAR_CONFIDENCES = 0x80

STATUS_CODES = {LaneStatus.UNKNOWN: 0, LaneStatus.OK: 1, LaneStatus.ONE_LINE: 2, LaneStatus.LOST: 3}
STATUS_OF_CODE = {code: status for status, code in STATUS_CODES.items()}


def clamp(value: int, low: int, high: int) -> int:
    return low if value < low else high if value > high else value


def quantise(value: float, steps: int) -> int:
    """``value`` in 0..1 as an integer 0..steps (raises ValueError for NaN)."""
    return clamp(round(value * steps), 0, steps)


def signed(value: float, unit: float, bits: int) -> int:
    """``value`` in ``unit`` steps as a ``bits``-wide two's complement field (saturating)."""
    limit = 1 << (bits - 1)
    return clamp(round(value / unit), -limit, limit - 1) & ((1 << bits) - 1)


def unsigned_field(field: int, bits: int) -> int:
    return field - (1 << bits) if field >> (bits - 1) else field


def extend(reference: int, low: int, bits: int) -> int:
    """The full value nearest to ``reference`` whose low ``bits`` are ``low`` (never negative)."""
    modulus = 1 << bits
    delta = (low - reference) % modulus
    if delta >= modulus >> 1:
        delta -= modulus
    value = reference + delta
    return value + modulus if value < 0 else value


def pack_box(box: Box) -> bytes:
    packed = (
        quantise(box.x_min, BOX_STEPS)
        | quantise(box.y_min, BOX_STEPS) << 10
        | quantise(box.x_max, BOX_STEPS) << 20
        | quantise(box.y_max, BOX_STEPS) << 30
    )
    return packed.to_bytes(5, "little")


def unpack_box(data: bytes | memoryview, at: int) -> Box:
    packed = int.from_bytes(data[at : at + 5], "little")
    return built(
        Box,
        x_min=(packed & 0x3FF) / BOX_STEPS,
        y_min=(packed >> 10 & 0x3FF) / BOX_STEPS,
        x_max=(packed >> 20 & 0x3FF) / BOX_STEPS,
        y_max=(packed >> 30 & 0x3FF) / BOX_STEPS,
    )


def pack_lane(lane: LaneState) -> bytes:
    packed = (
        signed(lane.offset_m, OFFSET_UNIT, 16)
        | signed(lane.heading_rad, HEADING_UNIT, 15) << 16
        | signed(lane.curvature_per_m, CURVATURE_UNIT, 15) << 31
        | STATUS_CODES[lane.status] << 46
        | quantise(lane.offset_confidence, LANE_CONF_STEPS) << 48
        | quantise(lane.heading_confidence, LANE_CONF_STEPS) << 53
        | quantise(lane.curvature_confidence, LANE_CONF_STEPS) << 58
        | clamp(round(lane.lane_width_m / WIDTH_UNIT), 0, 511) << 63
    )
    return packed.to_bytes(9, "little")


def unpack_lane(data: bytes | memoryview, at: int, reference_forward_m: float) -> LaneState:
    packed = int.from_bytes(data[at : at + 9], "little")
    return built(
        LaneState,
        status=STATUS_OF_CODE[packed >> 46 & 0x3],
        offset_m=unsigned_field(packed & 0xFFFF, 16) * OFFSET_UNIT,
        heading_rad=unsigned_field(packed >> 16 & 0x7FFF, 15) * HEADING_UNIT,
        curvature_per_m=unsigned_field(packed >> 31 & 0x7FFF, 15) * CURVATURE_UNIT,
        offset_confidence=(packed >> 48 & 0x1F) / LANE_CONF_STEPS,
        heading_confidence=(packed >> 53 & 0x1F) / LANE_CONF_STEPS,
        curvature_confidence=(packed >> 58 & 0x1F) / LANE_CONF_STEPS,
        lane_width_m=(packed >> 63 & 0x1FF) * WIDTH_UNIT,
        reference_forward_m=reference_forward_m,
    )


def leb128(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)

"""dataV2 trees: byte layout, the 600-byte Arduino budget, round trips."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seedcam.errors import ProtocolError
from seedcam_firmware.visionseed.datav2 import (
    Node,
    NodeType,
    array_node,
    classification_node,
    count_node,
    decode_datav2,
    encode_datav2,
    rect_node,
    string_node,
)


def test_byte_layout_of_each_node_type() -> None:
    tree = encode_datav2(
        [
            count_node([2], 300),
            rect_node([2, 0], 1.0, 3, 10, 20, -5, 40),
            string_node([2, 0, 5], 0.5, "AGV-042"),
            classification_node([7], 0.25, 9),
            array_node([9], [0.5, -1.0]),
        ]
    )
    expected = (
        b"\x05"
        + b"\x01\x02\x05\x02\xac\x02"  # [2] VARUINT32, len 2, 300 as LEB128
        + b"\x02\x02\x00\x00\x0c"
        + struct.pack("<HHhhhh", 65535, 3, 10, 20, -5, 40)
        + b"\x03\x02\x00\x05\x03\x0a"
        + struct.pack("<H", 32768)
        + b"AGV-042\x00"
        + b"\x01\x07\x02\x04"
        + struct.pack("<HH", 16384, 9)
        + b"\x01\x09\x01\x08"
        + struct.pack("<2f", 0.5, -1.0)
    )
    assert tree == expected


def test_one_lane_state_and_two_detections_fit_the_arduino_buffer() -> None:
    tree = encode_datav2(
        [
            count_node([1], 2),
            rect_node([1, 0], 0.97, 0, 100, 80, 40, 40),
            rect_node([1, 1], 0.91, 6, 200, 90, 60, 30),
            string_node([1, 1, 3], 0.99, "AGV-042"),
            array_node([10], [0.031, -0.05, 0.2, 0.98]),
        ]
    )
    assert len(tree) < 100  # with the YtMsg/YtResult wrapping and framing, far below 600 bytes


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError):
        encode_datav2([count_node([1], 0)] * 256)
    with pytest.raises(ValueError):
        encode_datav2([Node((256,), NodeType.ARRAY, b"")])
    with pytest.raises(ValueError):
        rect_node([1], float("nan"), 0, 0, 0, 0, 0)
    for broken in (b"", b"\x01", b"\x01\x01\x02\x09\x00", b"\x01\x01\x02\x01\x05ab"):
        with pytest.raises(ProtocolError):
            decode_datav2(broken)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.integers(0, 255), max_size=4),
            st.sampled_from(list(NodeType)),
            st.binary(max_size=300),
        ),
        max_size=20,
    )
)
def test_round_trip(records: list[tuple[list[int], NodeType, bytes]]) -> None:
    nodes = [Node(tuple(path), kind, data) for path, kind, data in records]
    assert decode_datav2(encode_datav2(nodes)) == nodes

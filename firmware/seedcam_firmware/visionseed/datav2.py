"""VisionSeed's ``dataV2`` result tree: encode (firmware) and decode (tests, tools).

``dataV2`` is little-endian: ``u8 count``, then ``count`` records of
``u8 pathLen, u8 path[pathLen], u8 type, varint len, data[len]``. A path names a
node: ``[M]`` holds a count of model M's objects, ``[M, i]`` the i-th object,
``[M, i, C]`` what child model C found on that object's crop.
"""

from __future__ import annotations

import enum
import math
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from seedcam.errors import ProtocolError

__all__ = [
    "NodeType",
    "Node",
    "encode_datav2",
    "decode_datav2",
    "rect_node",
    "array_node",
    "string_node",
    "classification_node",
    "count_node",
]

_MAX_NODES = 255
_CONF_SCALE = 65535
_MAX_VARINT_BYTES = 5  # a LEB128 uint32
_MAX_VARINT = 0xFFFF_FFFF


class NodeType(enum.IntEnum):
    RECT = 0
    ARRAY = 1
    CLASSIFICATION = 2
    STRING = 3
    POINTS = 4
    VARUINT32 = 5


@dataclass(frozen=True)
class Node:
    """One record of the tree: where it sits, what it is, its raw bytes."""

    path: tuple[int, ...]
    type: NodeType
    data: bytes


def _varint(value: int) -> bytes:
    if value < 0:
        raise ValueError("varint must be >= 0")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _conf(confidence: float) -> int:
    if not math.isfinite(confidence):
        raise ValueError(f"confidence {confidence!r} is not finite")
    return round(min(max(confidence, 0.0), 1.0) * _CONF_SCALE)


def _i16(value: float) -> int:
    return max(-32768, min(32767, round(value)))


def rect_node(path: Sequence[int], confidence: float, class_id: int, x: float, y: float, w: float, h: float) -> Node:
    """A RECT: box in pixels of the camera frame (top-left x, y, width, height)."""
    data = struct.pack("<HHhhhh", _conf(confidence), class_id & 0xFFFF, _i16(x), _i16(y), _i16(w), _i16(h))
    return Node(tuple(path), NodeType.RECT, data)


def array_node(path: Sequence[int], values: Iterable[float]) -> Node:
    """An ARRAY of float32."""
    values = list(values)
    return Node(tuple(path), NodeType.ARRAY, struct.pack(f"<{len(values)}f", *values))


def classification_node(path: Sequence[int], confidence: float, class_id: int) -> Node:
    """A CLASSIFICATION (confidence, class)."""
    return Node(tuple(path), NodeType.CLASSIFICATION, struct.pack("<HH", _conf(confidence), class_id & 0xFFFF))


def string_node(path: Sequence[int], confidence: float, text: str) -> Node:
    """A STRING (confidence, UTF-8 text, NUL)."""
    return Node(tuple(path), NodeType.STRING, struct.pack("<H", _conf(confidence)) + text.encode() + b"\x00")


def count_node(path: Sequence[int], count: int) -> Node:
    """A VARUINT32, used for ``[M]``: how many objects model M found."""
    return Node(tuple(path), NodeType.VARUINT32, _varint(count))


def encode_datav2(nodes: Sequence[Node]) -> bytes:
    """Serialize a tree.

    Raises:
        ValueError: more than 255 nodes, a path longer than 255, or a path element over 255.
    """
    if len(nodes) > _MAX_NODES:
        raise ValueError(f"dataV2 holds at most {_MAX_NODES} nodes, got {len(nodes)}")
    out = bytearray((len(nodes),))
    for node in nodes:
        if len(node.path) > 255 or any(not 0 <= p <= 255 for p in node.path):
            raise ValueError(f"bad dataV2 path {node.path}")
        out.append(len(node.path))
        out += bytes(node.path)
        out.append(int(node.type))
        out += _varint(len(node.data))
        out += node.data
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """A LEB128 length at ``pos``: ``(value, position after it)``; at most 5 bytes, below 2^32.

    Raises:
        ProtocolError: longer than 5 bytes, 2^32 or more, or cut short by the end of the input.
    """
    value = 0
    for index in range(_MAX_VARINT_BYTES):
        if pos + index >= len(data):
            raise ProtocolError("malformed dataV2: a varint runs past the end")
        byte = data[pos + index]
        value |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            if value > _MAX_VARINT:
                raise ProtocolError(f"malformed dataV2: varint {value} is 2^32 or more")
            return value, pos + index + 1
    raise ProtocolError(f"malformed dataV2: a varint longer than {_MAX_VARINT_BYTES} bytes")


def decode_datav2(data: bytes) -> list[Node]:
    """Parse a tree, in time linear in its size.

    A length varint may take at most 5 bytes and must be below 2^32; the tree must end
    with its last record (trailing bytes are refused).

    Raises:
        ProtocolError: truncated, malformed, a varint too long, or bytes after the last record.
    """
    data = bytes(data)
    nodes: list[Node] = []
    try:
        count, pos = data[0], 1
        for _ in range(count):
            path_len = data[pos]
            path = tuple(data[pos + 1 : pos + 1 + path_len])
            pos += 1 + path_len
            node_type = NodeType(data[pos])
            length, pos = _read_varint(data, pos + 1)
            if pos + length > len(data) or len(path) != path_len:
                raise IndexError("record runs past the end")
            nodes.append(Node(path, node_type, data[pos : pos + length]))
            pos += length
    except (IndexError, ValueError) as exc:
        raise ProtocolError(f"malformed dataV2: {exc}") from exc
    if pos != len(data):
        raise ProtocolError(f"malformed dataV2: {len(data) - pos} trailing bytes after the last record")
    return nodes

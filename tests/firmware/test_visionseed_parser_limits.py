"""Issue 14, finding 12: the VisionSeed ``dataV2`` parser's limits, and the link that counts what it refuses.

Before the fix the parser accepted bytes after the last record and read a length varint of
any length, in quadratic time (a 200 kB varint: 6.9 s). Now a varint is at most 5 bytes
and below 2^32, trailing bytes are refused, and a tree parses in time linear in its size.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from seedcam.errors import ProtocolError
from seedcam.protocol.framing import Channel, Frame
from seedcam_firmware.visionseed._proto import visionseed_pb2 as vs
from seedcam_firmware.visionseed.datav2 import (
    Node,
    NodeType,
    array_node,
    count_node,
    decode_datav2,
    encode_datav2,
    rect_node,
)
from seedcam_firmware.visionseed.link import RpcOutcome, VisionSeedPersonality

TREE = encode_datav2([count_node([1], 2), rect_node([1, 0], 0.9, 3, 1, 2, 3, 4), rect_node([1, 1], 0.8, 6, 5, 6, 7, 8)])


def _record(length_varint: bytes, data: bytes = b"") -> bytes:
    """A one-record tree ``[1]`` ARRAY whose length is written as ``length_varint``."""
    return b"\x01\x01\x01" + bytes((NodeType.ARRAY,)) + length_varint + data


@pytest.mark.parametrize("tail", [b"\x00", b"\xff", b"\x01\x01\x01\x05\x01\x00", TREE])
def test_trailing_bytes_are_refused(tail: bytes) -> None:
    assert len(decode_datav2(TREE)) == 3
    with pytest.raises(ProtocolError, match="trailing"):
        decode_datav2(TREE + tail)


def test_a_length_varint_is_at_most_5_bytes_and_below_2_to_the_32() -> None:
    assert decode_datav2(_record(b"\x84\x80\x80\x80\x00", b"abcd")) == [Node((1,), NodeType.ARRAY, b"abcd")]
    assert decode_datav2(_record(b"\x04", b"abcd")) == [Node((1,), NodeType.ARRAY, b"abcd")]
    for too_long in (b"\x84\x80\x80\x80\x80\x00", b"\x80" * 6 + b"\x00", b"\x80" * 1000 + b"\x04"):
        with pytest.raises(ProtocolError, match="varint"):
            decode_datav2(_record(too_long, b"abcd"))
    with pytest.raises(ProtocolError, match="varint"):
        decode_datav2(_record(b"\x80\x80\x80\x80\x10"))  # 2^32
    with pytest.raises(ProtocolError):
        decode_datav2(_record(b"\xff\xff\xff\xff\x0f"))  # 2^32 - 1 fits the varint, not the input


def _best_of(parse: Callable[[], object], budget_s: float = 0.3, most: int = 50) -> float:
    """The least time of repeated calls, repeated while the budget lasts (at least once)."""
    best, spent, runs = float("inf"), 0.0, 0
    while runs < most and (runs == 0 or spent < budget_s):
        start = time.perf_counter()
        try:
            parse()
        except ProtocolError:
            pass
        took = time.perf_counter() - start
        best, spent, runs = min(best, took), spent + took, runs + 1
    return best


def _ratio(make: Callable[[int], bytes], n: int) -> float:
    small, large = make(n), make(2 * n)
    return _best_of(lambda: decode_datav2(large)) / _best_of(lambda: decode_datav2(small))


def test_a_200_kB_varint_heavy_input_is_refused_in_linear_time() -> None:
    # the finding's input: one record whose length varint runs over the whole input; before, each of its
    # bytes added 7 bits to an ever larger int (quadratic: 100 kB took 0.29 s, 200 kB 1.8 s)
    def long_varint(n: int) -> bytes:
        return _record(b"\xff" * (n - 5) + b"\x01")

    assert _ratio(long_varint, 100_000) < 3.0  # linear: 2; quadratic: 4
    with pytest.raises(ProtocolError):
        decode_datav2(long_varint(200_000))

    # varint-heavy but well-formed: 255 records, each length a padded 5-byte varint
    def many_varints(n: int) -> bytes:
        size = n // 255 - 10
        padded = bytes((0x80 | size & 0x7F, 0x80 | size >> 7 & 0x7F, 0x80 | size >> 14, 0x80, 0x00))
        return b"\xff" + (b"\x02\x01\x02" + bytes((NodeType.ARRAY,)) + padded + bytes(size)) * 255

    assert len(decode_datav2(many_varints(200_000))) == 255
    assert _ratio(many_varints, 100_000) < 3.0


def _no_rpc(rpc: vs.YtRpc) -> RpcOutcome:
    return vs.YtRpcResponse(code=vs.YtRpcResponse.ERROR_OTHER), None


def _replies() -> tuple[list[bytes], Callable[..., bool]]:
    sent: list[bytes] = []

    def reply(channel: Channel, payload: bytes, **_: object) -> bool:
        sent.append(payload)
        return True

    return sent, reply


def test_the_link_counts_a_refused_datav2_tree_from_the_host() -> None:
    personality = VisionSeedPersonality(_no_rpc)  # never started: handle() parses on the caller's thread
    sent, reply = _replies()
    good = vs.YtMsg(result=vs.YtResult(frameId=1, dataV2=encode_datav2([array_node([9], [1.0])])))
    personality.handle(Frame(Channel.CONTROL, 0, good.SerializeToString()), reply)
    assert personality.undecodable_requests == 0
    for bad in (TREE + b"\x00", _record(b"\x80" * 100 + b"\x00")):
        message = vs.YtMsg(result=vs.YtResult(frameId=2, dataV2=bad))
        personality.handle(Frame(Channel.CONTROL, 0, message.SerializeToString()), reply)
    assert personality.undecodable_requests == 2
    assert sent == []  # a result from the host is never answered

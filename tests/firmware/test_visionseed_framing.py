"""VisionSeed framing: the published test vectors, chunking, and damage."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seedcam_firmware.visionseed._proto import visionseed_pb2 as vs
from seedcam_firmware.visionseed.framing import VisionSeedDecoder, encode_visionseed

# (payload, wire bytes) from the VisionSeed wire description in the shared design folder
VECTORS = [
    ("0a 04 08 01 10 01", "10 00 00 06 ac 5a 0a 04 08 01 11 01 01 a0 b5"),
    ("0a 06 08 29 10 10 20 11", "10 00 00 08 4d 94 0a 06 08 29 11 01 11 01 20 11 00 f0 df"),
    ("12 06 08 01 10 00 20 05", "10 00 00 08 4d 94 12 06 08 01 11 01 00 20 05 c8 fe"),
    ("1a 09 08 07 22 05 08 00 20 80 08", "10 00 00 0b 7d f7 1a 09 08 07 22 05 08 00 20 80 08 1b 89"),
]


@pytest.mark.parametrize(("payload", "wire"), VECTORS)
def test_golden_vectors_encode_and_decode(payload: str, wire: str) -> None:
    payload_bytes, wire_bytes = bytes.fromhex(payload), bytes.fromhex(wire)
    assert encode_visionseed(payload_bytes) == wire_bytes
    decoder = VisionSeedDecoder()
    assert decoder.feed(wire_bytes) == [payload_bytes]
    assert decoder.counters.frames_rx == 1 and decoder.counters.corrupted == 0


def test_byte_at_a_time_equals_one_feed() -> None:
    stream = b"".join(bytes.fromhex(w) for _, w in VECTORS)
    decoder = VisionSeedDecoder()
    got = [p for i in range(len(stream)) for p in decoder.feed(stream[i : i + 1])]
    assert got == [bytes.fromhex(p) for p, _ in VECTORS]


def test_damage_costs_only_the_frame_it_hits() -> None:
    frames = [bytes.fromhex(w) for _, w in VECTORS]
    rng = random.Random(7)
    for index in range(1, len(frames[0])):  # every byte after SOF of the first frame
        for bit in range(8):
            damaged = bytearray(frames[0])
            damaged[index] ^= 1 << bit
            decoder = VisionSeedDecoder()
            out = decoder.feed(bytes(damaged) + frames[1])
            assert out == [bytes.fromhex(VECTORS[1][0])], (index, bit)  # dropped, and the next frame survives
            assert decoder.counters.corrupted >= 1, (index, bit)  # a flip into 0x10 also starts a phantom frame
    garbage = bytes(rng.randrange(256) for _ in range(200)).replace(b"\x10", b"")
    decoder = VisionSeedDecoder()
    assert decoder.feed(garbage + frames[2]) == [bytes.fromhex(VECTORS[2][0])]
    assert decoder.counters.bytes_dropped >= len(garbage)


def test_truncated_frame_is_counted_and_oversize_refused() -> None:
    frames = [bytes.fromhex(w) for _, w in VECTORS]
    decoder = VisionSeedDecoder()
    assert decoder.feed(frames[0][:9] + frames[1]) == [bytes.fromhex(VECTORS[1][0])]
    assert decoder.counters.decode_errors == 1
    small = VisionSeedDecoder(max_payload=4)
    assert small.feed(frames[0]) == [] and small.counters.oversize == 1


@settings(max_examples=80, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=6), st.integers(1, 17))
def test_round_trip_in_any_chunking(payloads: list[bytes], chunk: int) -> None:
    stream = b"".join(encode_visionseed(p) for p in payloads)
    decoder = VisionSeedDecoder()
    got = [p for i in range(0, len(stream), chunk) for p in decoder.feed(stream[i : i + chunk])]
    assert got == payloads
    assert decoder.counters.corrupted == 0


def test_the_schema_copy_produces_the_published_payloads() -> None:
    messages = [
        vs.YtMsg(rpc=vs.YtRpc(func=vs.YtRpc.getDeviceInfo, sequenceId=1)),
        vs.YtMsg(rpc=vs.YtRpc(func=vs.YtRpc.setDebugDrawing, sequenceId=16, intParams=17)),
        vs.YtMsg(response=vs.YtRpcResponse(sequenceId=1, code=vs.YtRpcResponse.SUCC, intData=5)),
        vs.YtMsg(result=vs.YtResult(frameId=7, systemStatusResult=vs.SystemStatusResult(heartBeatId=0, freeHeap=1024))),
    ]
    for message, (_, wire) in zip(messages, VECTORS, strict=True):
        assert encode_visionseed(message.SerializeToString()) == bytes.fromhex(wire)

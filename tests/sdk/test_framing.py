"""Tests of the sans-IO link framing (seedcam.protocol.framing).

The golden vectors below are derived by hand from the wire format documented in
framing.py (``COBS(header || payload || crc32-LE) || 0x00``, header ``<BBBH``),
not produced by the code under test. CRC-32 values are the IEEE/zlib CRC,
cross-checked in the test with :func:`binascii.crc32` (whose documented check
value, crc32(b"123456789") == 0xCBF43926, is asserted first).
"""

from __future__ import annotations

import binascii
import dataclasses
import random
import struct

import pytest
from cobs import cobs
from framing_helpers import assert_accounting, feed_all, ref_frame

from seedcam.protocol.framing import (
    PROTOCOL_VERSION,
    Channel,
    Decoder,
    Encoder,
    Flag,
    Frame,
    encode_frame,
)


def test_binascii_crc32_matches_documented_check_value():
    # The standard CRC-32 (IEEE 802.3) check value of "123456789".
    assert binascii.crc32(b"123456789") == 0xCBF43926


# ------------------------------------------------------------- golden vectors

# 1. Empty payload, RESULT, flags 0, seq 0.
#    header = 02 01 00 0000            (version 2, channel 1, flags 0, seq 0 LE)
#    crc32(02 01 00 00 00) = 0x045EC318 -> LE 18 c3 5e 04
#    raw   = 02 01 | 00 | 00 | 00 | 18 c3 5e 04
#    COBS groups split at each 0x00: [02 01] [] [] [18 c3 5e 04]
#          -> 03 02 01 | 01 | 01 | 05 18 c3 5e 04, then delimiter 00
GOLDEN_EMPTY = (
    Frame(Channel.RESULT, 0, b""),
    bytes([0x02, 0x01, 0x00, 0x00, 0x00]),
    0x045EC318,
    bytes.fromhex("03 0201 01 01 05 18c35e04 00"),
)

# 2. Payload with zeros: RESULT, seq 0, payload 00 11 00 00 22 4f.
#    body  = 02 01 00 00 00 | 00 11 00 00 22 4f
#    crc32(body) = 0xC078C700 -> LE 00 c7 78 c0 (the CRC itself contains a zero)
#    raw   = 02 01 00 00 00 00 11 00 00 22 4f 00 c7 78 c0
#    groups: [02 01] [] [] [] [11] [] [22 4f] [c7 78 c0]
#          -> 03 02 01 | 01 | 01 | 01 | 02 11 | 01 | 03 22 4f | 04 c7 78 c0, 00
GOLDEN_ZEROS = (
    Frame(Channel.RESULT, 0, bytes.fromhex("00110000224f")),
    bytes.fromhex("0201000000 00110000224f"),
    0xC078C700,
    bytes.fromhex("03 0201 01 01 01 02 11 01 03 224f 04 c778c0 00"),
)

# 3. RESPONSE-flagged CONTROL frame, seq 0xABCD, payload 08 01
#    (a Response with status = 1, i.e. field 1 varint 1).
#    header = 02 00 01 cd ab           (version 2, channel 0, flags 0x01, seq LE)
#    crc32(02 00 01 cd ab 08 01) = 0xD947D923 -> LE 23 d9 47 d9
#    raw   = 02 | 00 | 01 cd ab 08 01 23 d9 47 d9
#    groups: [02] [01 cd ab 08 01 23 d9 47 d9]
#          -> 02 02 | 0a 01 cd ab 08 01 23 d9 47 d9, 00
GOLDEN_RESPONSE = (
    Frame(Channel.CONTROL, 0xABCD, b"\x08\x01", Flag.RESPONSE),
    bytes.fromhex("020001cdab 0801"),
    0xD947D923,
    bytes.fromhex("02 02 0a 01cdab0801 23d947d9 00"),
)

# 4. 300-byte payload without zeros (crosses the 254-byte COBS block limit):
#    RESULT, seq 42, payload[i] = i % 255 + 1 (01..ff, 01..2d).
#    header = 02 01 00 2a 00
#    crc32(header + payload) = 0x252FB622 -> LE 22 b6 2f 25
#    raw   = 02 01 | 00 | 2a | 00 | payload(300) 22 b6 2f 25
#    groups: [02 01] [2a] [304 non-zero bytes]; a group holds at most 254 bytes
#    (code ff, no implied zero), so the last one splits into 254 + 50:
#          -> 03 02 01 | 02 2a | ff payload[0:254] | 33 payload[254:300] 22 b6 2f 25, 00
_P300 = bytes(i % 255 + 1 for i in range(300))
GOLDEN_300 = (
    Frame(Channel.RESULT, 42, _P300),
    bytes.fromhex("0201002a00") + _P300,
    0x252FB622,
    bytes.fromhex("030201 022a ff") + _P300[:254] + b"\x33" + _P300[254:] + bytes.fromhex("22b62f25 00"),
)

GOLDEN = pytest.mark.parametrize(
    "frame, body, crc, wire",
    [GOLDEN_EMPTY, GOLDEN_ZEROS, GOLDEN_RESPONSE, GOLDEN_300],
    ids=["empty", "zeros", "response", "300-bytes"],
)


@GOLDEN
def test_golden_vector_derivation_is_consistent(frame, body, crc, wire):
    # The hand-derived CRC matches binascii, and the hand-derived COBS bytes
    # decode (by the cobs package) to body + CRC-LE.
    assert binascii.crc32(body) == crc
    assert wire.count(0) == 1 and wire.endswith(b"\x00")
    assert cobs.decode(wire[:-1]) == body + struct.pack("<I", crc)


@GOLDEN
def test_golden_encode(frame, body, crc, wire):
    assert encode_frame(frame) == wire


@GOLDEN
def test_golden_decode(frame, body, crc, wire):
    decoder = Decoder()
    assert decoder.feed(wire) == [frame]
    assert decoder.counters.frames_rx == 1
    assert decoder.counters.corrupted == 0
    assert decoder.counters.bytes_rx == len(wire)


def test_a_decoded_frame_carries_every_field_and_stays_frozen():
    (frame,) = Decoder().feed(GOLDEN_RESPONSE[3])  # built without Frame.__init__: see seedcam.protocol._frozen
    assert vars(frame).keys() == {f.name for f in dataclasses.fields(Frame)}
    assert frame == dataclasses.replace(frame) and hash(frame) == hash(dataclasses.replace(frame))
    with pytest.raises(dataclasses.FrozenInstanceError):
        frame.seq = 1


def test_golden_300_block_boundary_structure():
    wire = GOLDEN_300[3]
    assert len(wire) == 3 + 2 + 1 + 254 + 1 + 46 + 4 + 1
    assert wire[5] == 0xFF and wire[5 + 255] == 0x33


def test_golden_response_decodes_with_flag_and_seq():
    (frame,) = Decoder().feed(GOLDEN_RESPONSE[3])
    assert frame.flags & Flag.RESPONSE
    assert frame.seq == 0xABCD
    assert frame.channel is Channel.CONTROL
    assert frame.version == PROTOCOL_VERSION


def test_encoder_explicit_seq_and_flags_for_responses():
    enc = Encoder()
    wire = enc.encode(Channel.CONTROL, b"\x08\x01", flags=Flag.RESPONSE, seq=0xABCD)
    assert wire == GOLDEN_RESPONSE[3]
    # an explicit sequence number does not consume the channel's counter
    assert enc.next_seq(Channel.CONTROL) == 0


# ------------------------------------------------------------------ chunking


def _mixed_stream() -> tuple[bytes, list[Frame]]:
    frames = [
        Frame(Channel.RESULT, 0, b""),
        Frame(Channel.STATUS, 7, b"\x00" * 20),
        Frame(Channel.CONTROL, 0xABCD, b"\x08\x01", Flag.RESPONSE),
        Frame(Channel.RESULT, 1, _P300),
        Frame(Channel.LOG, 65535, b"hello\x00world"),
    ]
    garbage = [b"\x13\x37", b"\x00\x00", b"\xff" * 10 + b"\x00", b"\x05\x00", b""]
    stream = b"".join(g + encode_frame(f) for g, f in zip(garbage, frames, strict=True)) + b"junk\x00"
    return stream, frames


def test_byte_at_a_time_equals_one_feed():
    stream, frames = _mixed_stream()
    whole = Decoder()
    got_whole = whole.feed(stream)
    single = Decoder()
    got_single = feed_all(single, stream, [1])
    assert got_whole == got_single
    assert vars(whole.counters) == vars(single.counters)
    # "\x13\x37" merges with the first frame; the rest is preceded by a delimiter.
    assert got_whole == frames[1:]


def test_byte_at_a_time_with_oversize_equals_one_feed():
    decoder_args = {"max_frame_size": 32}
    big = ref_frame(Channel.RESULT, 0, b"\x01" * 200)
    ok = encode_frame(Frame(Channel.RESULT, 1, b"ok"))
    ok2 = encode_frame(Frame(Channel.RESULT, 2, b"ok"))  # a new number: the same one again would be a duplicate
    stream = big + ok + b"\x01" * 500 + b"\x00" + ok2
    whole = Decoder(**decoder_args)
    single = Decoder(**decoder_args)
    got_whole = whole.feed(stream)
    expected = [Frame(Channel.RESULT, 1, b"ok"), Frame(Channel.RESULT, 2, b"ok")]
    assert feed_all(single, stream, [1]) == got_whole == expected
    assert vars(whole.counters) == vars(single.counters)
    assert whole.counters.oversize == 2


def test_frame_split_across_feeds_is_held_until_delimiter():
    wire = encode_frame(Frame(Channel.RESULT, 3, b"abc"))
    decoder = Decoder()
    assert decoder.feed(wire[:-1]) == []
    assert decoder.counters.frames_rx == 0
    assert decoder.feed(b"\x00") == [Frame(Channel.RESULT, 3, b"abc")]


# ------------------------------------------------------------------- garbage


@pytest.mark.parametrize("seed", range(5))
def test_garbage_interleaved_with_frames(seed):
    rng = random.Random(seed)
    frames = [
        Frame(
            Channel(rng.randrange(5)),
            i,
            bytes(rng.randrange(256) for _ in range(rng.randrange(0, 80))),
        )
        for i in range(40)
    ]
    stream = b""
    untouched = []
    for frame in frames:
        kind = rng.choice(["none", "zeros", "no-zeros", "ends-zero"])
        if kind == "none":
            garbage = b""
        elif kind == "no-zeros":
            garbage = bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 30)))
        else:
            garbage = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 30)))
            if kind == "ends-zero":
                garbage += b"\x00"
        stream += garbage + encode_frame(frame)
        # A frame is untouched unless garbage without a trailing delimiter precedes it.
        if garbage == b"" or garbage.endswith(b"\x00"):
            untouched.append(frame)
    stream += bytes(rng.randrange(1, 256) for _ in range(10)) + b"\x00"  # trailing garbage

    decoder = Decoder()
    got = feed_all(decoder, stream, [rng.randrange(1, 64) for _ in range(16)])
    # Untouched frames are all recovered, in order; nothing else is delivered.
    assert [f for f in got if f in untouched] == untouched
    assert all(f in frames for f in got)
    assert len(untouched) < len(frames)  # the seed really did corrupt something
    assert decoder.counters.resyncs >= 1
    assert_accounting(decoder, got, stream)


def test_garbage_only_is_counted_not_raised():
    decoder = Decoder()
    stream = b"\x01\x02\x03\x00" + b"\xff\x00" + b"\x02\x00"
    assert decoder.feed(stream) == []
    c = decoder.counters
    assert c.resyncs == 3
    assert c.bytes_dropped == len(stream)
    assert c.frames_rx == 0


# -------------------------------------------------------------- flipped bits

_VICTIM = Frame(Channel.RESULT, 5, bytes(range(40)) + b"\x00\x00\x07")
_NEXT = Frame(Channel.RESULT, 6, b"next frame")


@pytest.mark.parametrize(
    "victim",
    [_VICTIM, GOLDEN_300[0], GOLDEN_RESPONSE[0]],
    ids=["small", "300", "response"],
)
def test_every_single_bit_flip_is_dropped_and_next_frame_recovered(victim):
    wire = encode_frame(victim)
    after = encode_frame(_NEXT)
    for pos in range(len(wire) - 1):  # every byte but the delimiter
        for bit in range(8):
            damaged = bytearray(wire)
            damaged[pos] ^= 1 << bit
            decoder = Decoder()
            got = decoder.feed(bytes(damaged) + after)
            assert got == [_NEXT], (pos, bit)
            assert decoder.counters.resyncs >= 1
            assert decoder.counters.corrupted == decoder.counters.resyncs


@pytest.mark.parametrize("victim", [_VICTIM, GOLDEN_300[0]], ids=["small", "300"])
def test_every_dropped_byte_is_dropped_and_next_frame_recovered(victim):
    wire = encode_frame(victim)
    after = encode_frame(_NEXT)
    for pos in range(len(wire) - 1):
        damaged = wire[:pos] + wire[pos + 1 :]
        decoder = Decoder()
        assert decoder.feed(damaged + after) == [_NEXT], pos
        assert decoder.counters.resyncs == 1


def test_truncated_frame_then_delimiter():
    wire = encode_frame(_VICTIM)
    after = encode_frame(_NEXT)
    for cut in range(1, len(wire) - 1):
        decoder = Decoder()
        assert decoder.feed(wire[:cut] + b"\x00" + after) == [_NEXT], cut
        assert decoder.counters.resyncs == 1


def test_truncated_frame_without_delimiter_costs_the_next_frame_only():
    wire = encode_frame(_VICTIM)
    second = encode_frame(Frame(Channel.RESULT, 6, b"merged"))
    third = encode_frame(Frame(Channel.RESULT, 7, b"recovered"))
    decoder = Decoder()
    assert decoder.feed(wire[:10] + second + third) == [Frame(Channel.RESULT, 7, b"recovered")]
    assert decoder.counters.resyncs == 1


@pytest.mark.parametrize("length", [1, 4, 8])
def test_short_frame_is_a_decode_error(length):
    # Fewer raw bytes than header + CRC (9): COBS-valid but too short.
    segment = cobs.encode(b"\x01" * length)
    decoder = Decoder()
    assert decoder.feed(segment + b"\x00") == []
    assert decoder.counters.decode_errors == 1
    assert decoder.counters.resyncs == 1


def test_invalid_cobs_is_a_decode_error():
    # Code byte 0x10 promises 15 more bytes; only 2 follow.
    decoder = Decoder()
    assert decoder.feed(b"\x10\x01\x02\x00" + encode_frame(_NEXT)) == [_NEXT]
    assert decoder.counters.decode_errors == 1
    assert decoder.counters.crc_errors == 0


def test_crc_error_is_counted_as_crc_error():
    body = struct.pack("<BBBH", 1, 1, 0, 0) + b"payload"
    bad = cobs.encode(body + struct.pack("<I", binascii.crc32(body) ^ 1)) + b"\x00"
    decoder = Decoder()
    assert decoder.feed(bad) == []
    assert decoder.counters.crc_errors == 1
    assert decoder.counters.decode_errors == 0


# -------------------------------------------------------------------- oversize


def test_no_delimiter_for_a_long_time_is_dropped_without_buffering():
    decoder = Decoder(max_frame_size=64)
    total = 0
    for _ in range(100):
        chunk = b"\x01" * 50
        assert decoder.feed(chunk) == []
        total += len(chunk)
    c = decoder.counters
    assert c.oversize == 1  # one oversize frame, however long it goes on
    assert c.resyncs == 1
    # Everything received so far is already dropped, i.e. not held in memory.
    assert c.bytes_dropped == total
    ok = encode_frame(Frame(Channel.STATUS, 0, b"after"))
    assert decoder.feed(b"\x00" + ok) == [Frame(Channel.STATUS, 0, b"after")]
    assert c.bytes_dropped == total + 1
    assert c.oversize == 1


def test_complete_oversize_frame_too_long_to_buffer():
    decoder = Decoder(max_frame_size=16)
    big = ref_frame(Channel.RESULT, 0, b"\x01" * 17)
    ok = encode_frame(Frame(Channel.RESULT, 1, b"ok"))
    assert decoder.feed(big + ok) == [Frame(Channel.RESULT, 1, b"ok")]
    assert decoder.counters.oversize == 1
    assert decoder.counters.resyncs == 1
    assert decoder.counters.bytes_dropped == len(big)


def test_complete_oversize_frame_within_encoded_bound():
    # max 300 payload bytes: the encoded bound (311) leaves slack for COBS
    # overhead, so a 301-byte payload full of zeros encodes to 311 bytes and
    # reaches the parser, which must still reject it for its payload size.
    decoder = Decoder(max_frame_size=300)
    big = ref_frame(Channel.RESULT, 0, bytes(301))
    assert len(big) - 1 == 311
    ok = encode_frame(Frame(Channel.RESULT, 1, b"ok"))
    assert decoder.feed(big + ok) == [Frame(Channel.RESULT, 1, b"ok")]
    assert decoder.counters.oversize == 1
    assert decoder.counters.resyncs == 1
    assert decoder.counters.frames_rx == 1


@pytest.mark.parametrize("limit", [1, 16, 245, 246, 253, 254, 300, 508, 1000])
def test_largest_allowed_frame_worst_case_cobs_is_accepted(limit):
    # No zero anywhere in header or payload: the worst COBS overhead.
    frame = Frame(Channel.RESULT, 0x0101, b"\x01" * limit, Flag.RESPONSE)
    wire = encode_frame(frame)
    decoder = Decoder(max_frame_size=limit)
    assert decoder.feed(wire) == [frame]
    assert decoder.counters.oversize == 0
    # one more byte is too big
    decoder = Decoder(max_frame_size=limit)
    assert decoder.feed(encode_frame(Frame(Channel.RESULT, 0x0101, b"\x01" * (limit + 1), Flag.RESPONSE))) == []
    assert decoder.counters.oversize == 1


# ------------------------------------------------ bad version, channel, idle


@pytest.mark.parametrize("version", [0, 1, 3, 255])
def test_bad_version_is_dropped_and_counted(version):
    decoder = Decoder()
    got = decoder.feed(ref_frame(Channel.RESULT, 0, b"x", version=version) + encode_frame(_NEXT))
    assert got == [_NEXT]
    assert decoder.counters.bad_version == 1
    assert decoder.counters.resyncs == 1


@pytest.mark.parametrize("channel", [5, 7, 0x80, 255])
def test_unknown_channel_is_dropped_and_counted(channel):
    decoder = Decoder()
    got = decoder.feed(ref_frame(channel, 0, b"x") + encode_frame(_NEXT))
    assert got == [_NEXT]
    assert decoder.counters.decode_errors == 1
    assert decoder.counters.resyncs == 1


def test_back_to_back_delimiters_are_idle_fill_not_errors():
    a = Frame(Channel.RESULT, 0, b"a")
    b = Frame(Channel.RESULT, 1, b"b")
    stream = b"\x00\x00\x00" + encode_frame(a) + b"\x00\x00" + encode_frame(b) + b"\x00"
    decoder = Decoder()
    assert decoder.feed(stream) == [a, b]
    c = decoder.counters
    assert c.resyncs == 0
    assert c.corrupted == 0
    assert c.bytes_dropped == 0
    assert feed_all(Decoder(), stream, [1]) == [a, b]

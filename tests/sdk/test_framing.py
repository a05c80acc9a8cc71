"""Tests of the sans-IO link framing (seedcam.protocol.framing).

The golden vectors below are derived by hand from the wire format documented in
framing.py (``COBS(header || payload || crc32-LE) || 0x00``, header ``<BBBH``),
not produced by the code under test. CRC-32 values are the IEEE/zlib CRC,
cross-checked in the test with :func:`binascii.crc32` (whose documented check
value, crc32(b"123456789") == 0xCBF43926, is asserted first).
"""

from __future__ import annotations

import binascii
import random
import struct

import pytest
from cobs import cobs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seedcam.protocol.framing import (
    DEFAULT_MAX_FRAME_SIZE,
    PROTOCOL_VERSION,
    Channel,
    Decoder,
    Encoder,
    Flag,
    Frame,
    LinkCounters,
    encode_frame,
)

# --------------------------------------------------------------------- helpers


def ref_frame(
    channel: int,
    seq: int,
    payload: bytes,
    flags: int = 0,
    version: int = PROTOCOL_VERSION,
) -> bytes:
    """Reference encoder, independent of framing.py: any header values, delimiter included."""
    body = struct.pack("<BBBH", version, channel, flags, seq) + payload
    return cobs.encode(body + struct.pack("<I", binascii.crc32(body))) + b"\x00"


def feed_all(
    decoder: Decoder, data: bytes, chunk_sizes: list[int] | None = None
) -> list[Frame]:
    """Feed ``data`` in pieces of ``chunk_sizes`` (cycled), or in one piece."""
    if not chunk_sizes:
        return decoder.feed(data)
    out: list[Frame] = []
    pos, i = 0, 0
    while pos < len(data):
        size = chunk_sizes[i % len(chunk_sizes)]
        out += decoder.feed(data[pos : pos + size])
        pos += size
        i += 1
    return out


def complete_segments(stream: bytes) -> list[bytes]:
    """The 0x00-terminated pieces of a stream (the unterminated tail excluded)."""
    return stream.split(b"\x00")[:-1]


def assert_accounting(decoder: Decoder, delivered: list[Frame], stream: bytes) -> None:
    """Invariants of the counters after a stream that ends with a delimiter.

    Every bad frame is counted once as a resync and once under its reason, and
    every byte received is either part of a delivered frame, dropped, or idle
    fill (a delimiter ending an empty segment).
    """
    c = decoder.counters
    assert stream.endswith(b"\x00")
    segments = complete_segments(stream)
    non_empty = [s for s in segments if s]
    assert c.frames_rx == len(delivered)
    assert c.frames_rx + c.resyncs == len(non_empty)
    assert c.corrupted == c.resyncs
    assert c.bytes_rx == len(stream)
    delivered_bytes = sum(len(encode_frame(f)) for f in delivered)
    idle = len(segments) - len(non_empty)
    assert c.bytes_rx == delivered_bytes + c.bytes_dropped + idle


def test_binascii_crc32_matches_documented_check_value():
    # The standard CRC-32 (IEEE 802.3) check value of "123456789".
    assert binascii.crc32(b"123456789") == 0xCBF43926


# ------------------------------------------------------------- golden vectors

# 1. Empty payload, RESULT, flags 0, seq 0.
#    header = 01 01 00 0000            (version 1, channel 1, flags 0, seq 0 LE)
#    crc32(01 01 00 00 00) = 0x43FEB9C8 -> LE c8 b9 fe 43
#    raw   = 01 01 | 00 | 00 | 00 | c8 b9 fe 43
#    COBS groups split at each 0x00: [01 01] [] [] [c8 b9 fe 43]
#          -> 03 01 01 | 01 | 01 | 05 c8 b9 fe 43, then delimiter 00
GOLDEN_EMPTY = (
    Frame(Channel.RESULT, 0, b""),
    bytes([0x01, 0x01, 0x00, 0x00, 0x00]),
    0x43FEB9C8,
    bytes.fromhex("03 0101 01 01 05 c8b9fe43 00"),
)

# 2. Payload with zeros: RESULT, seq 0, payload 00 11 00 00 22 00.
#    body  = 01 01 00 00 00 | 00 11 00 00 22 00
#    crc32(body) = 0xBFF9FD00 -> LE 00 fd f9 bf (the CRC itself contains a zero)
#    raw   = 01 01 00 00 00 00 11 00 00 22 00 00 fd f9 bf
#    groups: [01 01] [] [] [] [11] [] [22] [] [fd f9 bf]
#          -> 03 01 01 | 01 | 01 | 01 | 02 11 | 01 | 02 22 | 01 | 04 fd f9 bf, 00
GOLDEN_ZEROS = (
    Frame(Channel.RESULT, 0, bytes.fromhex("001100002200")),
    bytes.fromhex("0101000000 001100002200"),
    0xBFF9FD00,
    bytes.fromhex("03 0101 01 01 01 02 11 01 02 22 01 04 fdf9bf 00"),
)

# 3. RESPONSE-flagged CONTROL frame, seq 0xABCD, payload 08 01
#    (a Response with status = 1, i.e. field 1 varint 1).
#    header = 01 00 01 cd ab           (version 1, channel 0, flags 0x01, seq LE)
#    crc32(01 00 01 cd ab 08 01) = 0xE8AFC3BE -> LE be c3 af e8
#    raw   = 01 | 00 | 01 cd ab 08 01 be c3 af e8
#    groups: [01] [01 cd ab 08 01 be c3 af e8]
#          -> 02 01 | 0a 01 cd ab 08 01 be c3 af e8, 00
GOLDEN_RESPONSE = (
    Frame(Channel.CONTROL, 0xABCD, b"\x08\x01", Flag.RESPONSE),
    bytes.fromhex("010001cdab 0801"),
    0xE8AFC3BE,
    bytes.fromhex("02 01 0a 01cdab0801bec3afe8 00"),
)

# 4. 300-byte payload without zeros (crosses the 254-byte COBS block limit):
#    RESULT, seq 42, payload[i] = i % 255 + 1 (01..ff, 01..2d).
#    header = 01 01 00 2a 00
#    crc32(header + payload) = 0x54C9E33E -> LE 3e e3 c9 54
#    raw   = 01 01 | 00 | 2a | 00 | payload(300) 3e e3 c9 54
#    groups: [01 01] [2a] [304 non-zero bytes]; a group holds at most 254 bytes
#    (code ff, no implied zero), so the last one splits into 254 + 50:
#          -> 03 01 01 | 02 2a | ff payload[0:254] | 33 payload[254:300] 3e e3 c9 54, 00
_P300 = bytes(i % 255 + 1 for i in range(300))
GOLDEN_300 = (
    Frame(Channel.RESULT, 42, _P300),
    bytes.fromhex("0101002a00") + _P300,
    0x54C9E33E,
    bytes.fromhex("030101 022a ff")
    + _P300[:254]
    + b"\x33"
    + _P300[254:]
    + bytes.fromhex("3ee3c954 00"),
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
    stream = (
        b"".join(g + encode_frame(f) for g, f in zip(garbage, frames, strict=True)) + b"junk\x00"
    )
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
    stream = big + ok + b"\x01" * 500 + b"\x00" + ok
    whole = Decoder(**decoder_args)
    single = Decoder(**decoder_args)
    got_whole = whole.feed(stream)
    assert (
        feed_all(single, stream, [1])
        == got_whole
        == [Frame(Channel.RESULT, 1, b"ok")] * 2
    )
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
    stream += (
        bytes(rng.randrange(1, 256) for _ in range(10)) + b"\x00"
    )  # trailing garbage

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
    assert decoder.feed(wire[:10] + second + third) == [
        Frame(Channel.RESULT, 7, b"recovered")
    ]
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
    assert (
        decoder.feed(
            encode_frame(
                Frame(Channel.RESULT, 0x0101, b"\x01" * (limit + 1), Flag.RESPONSE)
            )
        )
        == []
    )
    assert decoder.counters.oversize == 1


# ------------------------------------------------ bad version, channel, idle


@pytest.mark.parametrize("version", [0, 2, 255])
def test_bad_version_is_dropped_and_counted(version):
    decoder = Decoder()
    got = decoder.feed(
        ref_frame(Channel.RESULT, 0, b"x", version=version) + encode_frame(_NEXT)
    )
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


# ------------------------------------------------------------------ sequences


def _seq_lost(events, decoder: Decoder | None = None) -> int:
    decoder = decoder or Decoder()
    for channel, seq, flags in events:
        (frame,) = decoder.feed(encode_frame(Frame(channel, seq, b"", flags)))
        assert frame.seq == seq
    return decoder.counters.seq_lost


R, S, C, L = Channel.RESULT, Channel.STATUS, Channel.CONTROL, Channel.LOG
N, RESP = Flag.NONE, Flag.RESPONSE


def test_seq_gaps_are_counted_exactly():
    assert _seq_lost([(R, 0, N), (R, 1, N), (R, 2, N)]) == 0
    assert _seq_lost([(R, 0, N), (R, 1, N), (R, 2, N), (R, 5, N)]) == 2
    assert _seq_lost([(R, 10, N), (R, 20, N)]) == 9
    assert _seq_lost([(R, 100, N)]) == 0  # the first frame sets the baseline


def test_seq_is_tracked_per_channel():
    events = [
        (R, 0, N),
        (S, 0, N),
        (R, 1, N),
        (L, 40, N),
        (S, 1, N),
        (R, 2, N),
        (L, 41, N),
    ]
    assert _seq_lost(events) == 0
    assert _seq_lost(events + [(S, 4, N)]) == 2
    assert _seq_lost(events + [(S, 4, N), (R, 4, N)]) == 3


def test_responses_are_excluded_from_seq_tracking():
    # A response echoes the request's number: neither counted nor a baseline.
    events = [(C, 0, N), (C, 500, RESP), (C, 1, N), (C, 9, RESP), (C, 2, N)]
    assert _seq_lost(events) == 0
    assert _seq_lost([(C, 0xABCD, RESP), (C, 0, RESP), (C, 7, RESP)]) == 0
    assert _seq_lost([(R, 0, N), (R, 77, RESP), (R, 1, N)]) == 0


def test_seq_wrap_around_is_not_a_loss():
    assert _seq_lost([(R, 65534, N), (R, 65535, N), (R, 0, N), (R, 1, N)]) == 0
    assert _seq_lost([(R, 65535, N), (R, 2, N)]) == 2
    assert _seq_lost([(R, 65530, N), (R, 1, N)]) == 6


def test_counter_restart_is_not_counted_as_loss():
    # A backwards jump (the peer restarted its counters) or a duplicate is not loss.
    assert _seq_lost([(R, 1000, N), (R, 0, N), (R, 1, N)]) == 0
    assert _seq_lost([(R, 5, N), (R, 5, N)]) == 0


def test_reset_sequence_forgets_expected_numbers():
    decoder = Decoder()
    assert _seq_lost([(R, 10, N), (S, 3, N)], decoder) == 0
    decoder.reset_sequence()
    assert _seq_lost([(R, 500, N), (S, 300, N)], decoder) == 0
    # and tracking resumes from the new baseline
    assert _seq_lost([(R, 502, N)], decoder) == 1
    # without a reset, the same jump is a loss
    assert _seq_lost([(R, 10, N), (R, 500, N)]) == 489


def test_lost_frame_on_the_wire_shows_in_seq_lost():
    enc = Encoder()
    wires = [enc.encode(Channel.RESULT, b"r%d" % i) for i in range(10)]
    decoder = Decoder()
    got = feed_all(
        decoder, b"".join(w for i, w in enumerate(wires) if i not in (3, 4, 8)), [7]
    )
    assert [f.seq for f in got] == [0, 1, 2, 5, 6, 7, 9]
    assert decoder.counters.seq_lost == 3


# -------------------------------------------------------------------- encoder


def test_encoder_numbers_each_channel_separately():
    enc = Encoder()
    decoder = Decoder()
    wires = [
        enc.encode(Channel.RESULT, b"a"),
        enc.encode(Channel.RESULT, b"b"),
        enc.encode(Channel.STATUS, b"c"),
        enc.encode(Channel.RESULT, b"d"),
        enc.encode(Channel.LOG, b"e"),
        enc.encode(Channel.STATUS, b"f"),
    ]
    got = decoder.feed(b"".join(wires))
    assert [(f.channel, f.seq, f.payload) for f in got] == [
        (Channel.RESULT, 0, b"a"),
        (Channel.RESULT, 1, b"b"),
        (Channel.STATUS, 0, b"c"),
        (Channel.RESULT, 2, b"d"),
        (Channel.LOG, 0, b"e"),
        (Channel.STATUS, 1, b"f"),
    ]
    assert enc.counters.frames_tx == 6
    assert enc.counters.bytes_tx == sum(map(len, wires))
    assert decoder.counters.seq_lost == 0


def test_encoder_explicit_seq_and_flags_for_responses():
    enc = Encoder()
    wire = enc.encode(Channel.CONTROL, b"\x08\x01", flags=Flag.RESPONSE, seq=0xABCD)
    assert wire == GOLDEN_RESPONSE[3]
    # an explicit sequence number does not consume the channel's counter
    assert enc.next_seq(Channel.CONTROL) == 0


def test_encoder_seq_wraps_at_65536():
    enc = Encoder()
    for expected in range(65536):
        assert enc.next_seq(Channel.RESULT) == expected
    (frame,) = Decoder().feed(enc.encode(Channel.RESULT, b""))
    assert frame.seq == 0
    assert enc.next_seq(Channel.RESULT) == 1
    assert enc.next_seq(Channel.STATUS) == 0


def test_encoder_payload_limit():
    enc = Encoder(max_frame_size=10)
    assert (
        Decoder(max_frame_size=10)
        .feed(enc.encode(Channel.RESULT, b"x" * 10))[0]
        .payload
        == b"x" * 10
    )
    before = enc.counters.snapshot()
    with pytest.raises(ValueError):
        enc.encode(Channel.RESULT, b"x" * 11)
    # a refused payload sends nothing and burns no sequence number
    assert vars(enc.counters) == vars(before)
    assert enc.next_seq(Channel.RESULT) == 1


def test_encoder_default_limit_is_the_default_max_frame_size():
    enc = Encoder()
    enc.encode(Channel.TRANSFER, bytes(DEFAULT_MAX_FRAME_SIZE))
    with pytest.raises(ValueError):
        enc.encode(Channel.TRANSFER, bytes(DEFAULT_MAX_FRAME_SIZE + 1))


@pytest.mark.parametrize("seq", [-1, 65536, 1 << 20])
def test_seq_out_of_range_is_value_error(seq):
    with pytest.raises(ValueError):
        encode_frame(Frame(Channel.RESULT, seq, b""))
    enc = Encoder()
    with pytest.raises(ValueError):
        enc.encode(Channel.CONTROL, b"", flags=Flag.RESPONSE, seq=seq)
    assert enc.counters.frames_tx == 0


@pytest.mark.parametrize(
    "fields",
    [{"channel": 256}, {"channel": -1}, {"flags": 256}, {"version": 256}],
    ids=["channel-256", "channel-neg", "flags-256", "version-256"],
)
def test_header_field_out_of_range_is_value_error(fields):
    # encode_frame documents "ValueError: sequence number or channel out of
    # range", and ARCHITECTURE.md says bad arguments raise ValueError; a header
    # byte outside 0..255 must not leak struct.error.
    args = {"channel": Channel.RESULT, "seq": 0, "payload": b""} | fields
    with pytest.raises(ValueError):
        encode_frame(Frame(**args))


def test_link_counters_snapshot_is_independent():
    counters = LinkCounters(crc_errors=1, decode_errors=2, oversize=3, bad_version=4)
    snap = counters.snapshot()
    counters.crc_errors += 10
    assert snap.crc_errors == 1
    assert snap.corrupted == 10
    assert counters.corrupted == 20


# ----------------------------------------------------------------- hypothesis

frames_st = st.builds(
    Frame,
    channel=st.sampled_from(list(Channel)),
    seq=st.integers(0, 65535),
    payload=st.binary(max_size=600),
    flags=st.sampled_from([Flag.NONE, Flag.RESPONSE]),
)
chunks_st = st.lists(st.integers(1, 700), min_size=1, max_size=20)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames=st.lists(frames_st, max_size=12), chunks=chunks_st, idle=st.booleans())
def test_roundtrip_any_frames_any_chunking(frames, chunks, idle):
    sep = b"\x00" if idle else b""
    stream = b"".join(sep + encode_frame(f) for f in frames)
    decoder = Decoder()
    got = feed_all(decoder, stream, chunks)
    assert got == frames
    c = decoder.counters
    assert c.frames_rx == len(frames)
    assert c.resyncs == 0 and c.corrupted == 0 and c.bytes_dropped == 0
    assert c.bytes_rx == len(stream)
    whole = Decoder()
    assert whole.feed(stream) == frames
    assert vars(whole.counters) == vars(c)


@settings(max_examples=100, deadline=None)
@given(frames=st.lists(frames_st, max_size=12))
def test_encoder_matches_reference_encoder(frames):
    for f in frames:
        assert encode_frame(f) == ref_frame(
            int(f.channel), f.seq, f.payload, int(f.flags)
        )


@settings(max_examples=120, deadline=None)
@given(
    parts=st.lists(st.one_of(st.binary(max_size=80), frames_st), max_size=15),
    chunks=chunks_st,
)
def test_byte_soup_never_raises_and_only_yields_valid_frames(parts, chunks):
    stream = (
        b"".join(p if isinstance(p, bytes) else encode_frame(p) for p in parts)
        + b"\x00"
    )
    decoder = Decoder()
    got = feed_all(decoder, stream, chunks)
    segments = complete_segments(stream)
    for frame in got:
        inner = encode_frame(frame)[:-1]
        # the re-encoded frame is exactly one of the segments on the wire ...
        assert inner in segments
        # ... and its CRC checks out independently of the decoder
        raw = cobs.decode(inner)
        assert struct.unpack("<I", raw[-4:])[0] == binascii.crc32(raw[:-4])
    # every embedded frame that still forms a whole segment is delivered, in order
    embedded = {encode_frame(p)[:-1] for p in parts if isinstance(p, Frame)}
    expected = [s for s in segments if s in embedded]
    assert [encode_frame(f)[:-1] for f in got] == expected
    assert_accounting(decoder, got, stream)


@settings(max_examples=100, deadline=None)
@given(
    soup=st.binary(max_size=2000),
    chunks=chunks_st,
    max_frame_size=st.sampled_from([0, 1, 16, 300, DEFAULT_MAX_FRAME_SIZE]),
)
def test_random_bytes_with_small_limits_never_raise(soup, chunks, max_frame_size):
    stream = soup + b"\x00"
    decoder = Decoder(max_frame_size=max_frame_size)
    got = feed_all(decoder, stream, chunks)
    for frame in got:
        assert len(frame.payload) <= max_frame_size
        assert encode_frame(frame)[:-1] in complete_segments(stream)
    assert_accounting(decoder, got, stream)
    whole = Decoder(max_frame_size=max_frame_size)
    assert whole.feed(stream) == got
    assert vars(whole.counters) == vars(decoder.counters)

"""Tests of the sans-IO link framing (seedcam.protocol.framing): sequence tracking, the encoder, property-based checks.

Golden vectors and the damage tests: test_framing.py.
"""

from __future__ import annotations

import binascii
import struct

import pytest
from cobs import cobs
from framing_helpers import assert_accounting, complete_segments, feed_all, ref_frame
from framing_oracle import SequenceModel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seedcam.protocol.framing import (
    DEFAULT_MAX_FRAME_SIZE,
    Channel,
    Decoder,
    Encoder,
    Flag,
    Frame,
    LinkCounters,
    encode_frame,
)

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
    # A backwards jump (the peer restarted its counters) is not loss. (A duplicate is not loss
    # either; it is dropped and counted apart: test_framing_replay.py.)
    assert _seq_lost([(R, 1000, N), (R, 0, N), (R, 1, N)]) == 0
    assert _seq_lost([(R, 1000, N), (R, 500, N), (R, 501, N)]) == 0


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
    got = feed_all(decoder, b"".join(w for i, w in enumerate(wires) if i not in (3, 4, 8)), [7])
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
    assert Decoder(max_frame_size=10).feed(enc.encode(Channel.RESULT, b"x" * 10))[0].payload == b"x" * 10
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


def _not_seen_before(frames: list[Frame]) -> list[Frame]:
    """The frames a decoder delivers: those whose sequence number it has not seen (framing_oracle's model)."""
    model = SequenceModel()
    return [f for f in frames if model.accept(int(f.channel), int(f.flags), f.seq)]


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
    expected = _not_seen_before(frames)  # a number seen already is a duplicate: dropped
    assert got == expected
    c = decoder.counters
    assert c.frames_rx == len(expected) and c.duplicates == len(frames) - len(expected)
    assert c.resyncs == 0 and c.corrupted == 0
    assert c.bytes_dropped == sum(len(encode_frame(f)) for f in frames) - sum(len(encode_frame(f)) for f in expected)
    assert c.bytes_rx == len(stream)
    whole = Decoder()
    assert whole.feed(stream) == expected
    assert vars(whole.counters) == vars(c)


@settings(max_examples=100, deadline=None)
@given(frames=st.lists(frames_st, max_size=12))
def test_encoder_matches_reference_encoder(frames):
    for f in frames:
        assert encode_frame(f) == ref_frame(int(f.channel), f.seq, f.payload, int(f.flags))


@settings(max_examples=120, deadline=None)
@given(
    parts=st.lists(st.one_of(st.binary(max_size=80), frames_st), max_size=15),
    chunks=chunks_st,
)
def test_byte_soup_never_raises_and_only_yields_valid_frames(parts, chunks):
    stream = b"".join(p if isinstance(p, bytes) else encode_frame(p) for p in parts) + b"\x00"
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
    # every embedded frame that still forms a whole segment is delivered, in order, unless its number was seen
    embedded = {encode_frame(p)[:-1]: p for p in parts if isinstance(p, Frame)}
    expected = _not_seen_before([embedded[s] for s in segments if s in embedded])
    assert got == expected
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

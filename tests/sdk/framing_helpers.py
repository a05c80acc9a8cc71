"""Helpers of the framing tests: a reference encoder independent of framing.py, chunked feeding, accounting checks."""

from __future__ import annotations

import binascii
import struct

from cobs import cobs

from seedcam.protocol.framing import PROTOCOL_VERSION, Decoder, Frame, encode_frame

__all__ = ["assert_accounting", "complete_segments", "feed_all", "ref_frame"]


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


def feed_all(decoder: Decoder, data: bytes, chunk_sizes: list[int] | None = None) -> list[Frame]:
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

    Every bad frame is counted once as a resync and once under its reason, every
    well-formed frame is delivered or counted as a duplicate, and every byte
    received is either part of a delivered frame, dropped, or idle fill (a
    delimiter ending an empty segment).
    """
    c = decoder.counters
    assert stream.endswith(b"\x00")
    segments = complete_segments(stream)
    non_empty = [s for s in segments if s]
    assert c.frames_rx == len(delivered)
    assert c.frames_rx + c.resyncs + c.duplicates == len(non_empty)
    assert c.corrupted == c.resyncs
    assert c.bytes_rx == len(stream)
    delivered_bytes = sum(len(encode_frame(f)) for f in delivered)
    idle = len(segments) - len(non_empty)
    assert c.bytes_rx == delivered_bytes + c.bytes_dropped + idle

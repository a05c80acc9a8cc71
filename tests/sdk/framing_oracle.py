"""A reference model of the native link decoder, written apart from framing.py, and the check the fuzzers run.

:func:`check_stream` feeds a byte stream to the real :class:`~seedcam.protocol.framing.Decoder`
in the given pieces and compares what it delivers, frame by frame, with what this model
says it must deliver; it also checks the counters' accounting. It raises ``AssertionError``
on any difference, so a fuzzer that calls it finds both crashes (any other exception
escaping the decoder) and false accepts (a frame delivered that the model refuses: a bad
CRC, version, channel or flag bit, an oversize payload, a duplicate or a replay).

The model follows the wire format and the sequence rules documented in framing.py,
but not its code: segments are split with ``bytes.split``, the header is unpacked by
hand, and the sequence window is a set of absolute numbers instead of a bitmap.
"""

from __future__ import annotations

import binascii
from dataclasses import dataclass, field

from cobs import cobs
from framing_helpers import complete_segments, feed_all

from seedcam.protocol.framing import Decoder, Frame, encode_frame

__all__ = ["CheckReport", "SequenceModel", "check_stream", "reference_frame"]

_VERSION = 2
_CHANNELS = range(5)
_RESPONSE = 0x01
_DEFINED_FLAGS = _RESPONSE
_MODULO = 65536
_HALF = _MODULO // 2


def reference_frame(segment: bytes, max_frame_size: int) -> tuple[int, int, int, bytes] | None:
    """``(channel, flags, seq, payload)`` of a well-formed frame (delimiter removed), else None."""
    try:
        raw = cobs.decode(segment)
    except cobs.DecodeError:
        return None
    if len(raw) < 9:
        return None
    body, crc = raw[:-4], int.from_bytes(raw[-4:], "little")
    if binascii.crc32(body) != crc:
        return None
    version, channel, flags = body[0], body[1], body[2]
    seq = body[3] | body[4] << 8
    payload = body[5:]
    if version != _VERSION or channel not in _CHANNELS or flags & ~_DEFINED_FLAGS:
        return None
    if len(payload) > max_frame_size:
        return None
    return channel, flags, seq, payload


@dataclass
class SequenceModel:
    """Which well-formed frames a decoder delivers: the sequence rules of framing.py, kept as sets."""

    window: int = 64
    lost: int = 0
    duplicates: int = 0
    _high: dict[int, int] = field(default_factory=dict)
    _seen: dict[int, set[int]] = field(default_factory=dict)  # absolute numbers within the window
    _responses: dict[int, list[int]] = field(default_factory=dict)  # the last ``window`` response numbers

    def accept(self, channel: int, flags: int, seq: int) -> bool:
        assert self.window > 0, "the model knows the rules with a window only"
        if flags & _RESPONSE:
            recent = self._responses.setdefault(channel, [])
            if seq in recent:
                self.duplicates += 1
                return False
            recent.append(seq)
            del recent[: -self.window]
            return True
        if channel not in self._high or (seq == 0 and self._high[channel] != _MODULO - 1):
            self._restart(channel, seq)  # the first frame, or a sender that started again
            return True
        high, seen = self._high[channel], self._seen[channel]
        ahead = (seq - high) % _MODULO
        back = (high - seq) % _MODULO
        if ahead == 0 or (back < self.window and seq in seen):
            self.duplicates += 1
            return False
        if 0 < ahead <= _HALF:
            self.lost += ahead - 1
            self._high[channel] = seq
            self._seen[channel] = {s for s in seen | {seq} if (seq - s) % _MODULO < self.window}
            return True
        if back < self.window:  # behind, never seen: a late frame
            seen.add(seq)
            return True
        self._restart(channel, seq)  # far behind (or far ahead): the sender's counter restarted
        return True

    def _restart(self, channel: int, seq: int) -> None:
        self._high[channel] = seq
        self._seen[channel] = {seq}


@dataclass(frozen=True)
class CheckReport:
    """What one checked stream held."""

    segments: int  #: non-empty complete segments
    well_formed: int  #: segments the reference parser accepts
    delivered: int  #: frames the decoder delivered (= the model's)
    duplicates: int


def check_stream(
    stream: bytes, chunks: list[int] | None = None, *, max_frame_size: int = 65536, window: int = 64
) -> CheckReport:
    """Decode ``stream`` (a final delimiter is added) and compare with the model; see the module docstring.

    Raises:
        AssertionError: the decoder delivered other frames than the model, or its counters disagree.
    """
    stream = stream + b"\x00"
    decoder = Decoder(max_frame_size=max_frame_size, replay_window=window)
    got = feed_all(decoder, stream, chunks)
    model = SequenceModel(window)
    expected: list[tuple[int, int, int, bytes]] = []
    well_formed = 0
    segments = complete_segments(stream)
    for segment in segments:
        parsed = reference_frame(segment, max_frame_size) if segment else None
        if parsed is None:
            continue
        well_formed += 1
        channel, flags, seq, _ = parsed
        if model.accept(channel, flags, seq):
            expected.append(parsed)
    delivered = [(int(f.channel), int(f.flags), f.seq, f.payload) for f in got]
    assert delivered == expected, f"decoder delivered {delivered!r}, the model {expected!r}"
    for frame in got:
        assert isinstance(frame, Frame) and encode_frame(frame)[:-1] in segments
    c = decoder.counters
    non_empty = sum(1 for s in segments if s)
    assert c.frames_rx == len(got)
    assert c.duplicates == model.duplicates and c.seq_lost == model.lost
    assert c.frames_rx + c.resyncs + c.duplicates == non_empty
    assert c.corrupted == c.resyncs == non_empty - well_formed
    assert c.bytes_rx == len(stream)
    idle = len(segments) - non_empty
    assert c.bytes_rx == sum(len(encode_frame(f)) for f in got) + c.bytes_dropped + idle
    return CheckReport(non_empty, well_formed, len(got), c.duplicates)

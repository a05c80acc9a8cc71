"""Link framing: sans-IO encoder and decoder shared by the firmware and the SDK.

A frame on the wire is ``COBS(header || payload || crc32) || 0x00``:

======  =====  ==============================================================
offset  size   field
======  =====  ==============================================================
0       1      protocol version (:data:`PROTOCOL_VERSION`)
1       1      channel (:class:`Channel`)
2       1      flags (:class:`Flag`)
3       2      sequence number, little-endian; one counter per channel and
               sender. A response echoes the sequence number of its request.
5       n      payload (one protobuf message; which one is fixed by channel)
5+n     4      CRC-32 (IEEE, zlib's) of bytes 0..5+n, little-endian
======  =====  ==============================================================

The version byte is the protocol's (:data:`PROTOCOL_VERSION`): version 2 sends
results in the compact layout of :mod:`seedcam.protocol.compact`. A frame of
another version is refused and counted in ``bad_version``; the decoder keeps the
version it saw (:attr:`Decoder.peer_version`), so a side can name both versions
in its error, and frames of the versions given as ``answer_versions`` are handed
over anyway, for the side that answers an older peer with a refusal it can read.

COBS removes every 0x00 from the frame, so 0x00 only ever marks a frame's end:
garbage, a dropped or a flipped byte costs at most the frame it hits, and the
decoder resynchronises at the next delimiter. Nothing here touches I/O; the
decoder never raises on bad input, it counts it in :class:`LinkCounters`.
COBS comes from the ``cobs`` package (a C extension), CRC-32 from ``zlib``.

What the decoder refuses, each counted under its reason and as a resync: a bad
COBS code or a short frame, a CRC error, another protocol version, an unknown
channel, a flag bit :class:`Flag` does not define (``bad_flags``: a newer peer's
feature this side does not know must not be silently ignored), an oversize
payload. A well-formed frame whose sequence number was seen already (a duplicate
or a replay) is dropped too and counted in ``duplicates``; the rules are in
:mod:`seedcam.protocol.sequence`.
"""

from __future__ import annotations

import enum
import functools
import operator
import struct
import zlib
from dataclasses import dataclass, field

from cobs import cobs

from seedcam.protocol._frozen import built
from seedcam.protocol.sequence import SEQ_MODULO, SEQ_WINDOW, SequenceTracker

__all__ = [
    "PROTOCOL_VERSION",
    "DEFAULT_MAX_FRAME_SIZE",
    "DELIMITER",
    "SEQ_WINDOW",
    "Channel",
    "Flag",
    "Frame",
    "LinkCounters",
    "link_counters",
    "encode_frame",
    "Encoder",
    "Decoder",
]

PROTOCOL_VERSION = 2
DEFAULT_MAX_FRAME_SIZE = 65536  # payload bytes
DELIMITER = b"\x00"

_HEADER = struct.Struct("<BBBH")
_CRC = struct.Struct("<I")
_OVERHEAD = _HEADER.size + _CRC.size
_SEQ_MODULO = SEQ_MODULO


class Channel(enum.IntEnum):
    """What a frame carries; fixes the protobuf message type of its payload."""

    CONTROL = 0  #: host → device Request; device → host Response
    RESULT = 1  #: device → host Result
    STATUS = 2  #: device → host StatusEvent (Hello, Health)
    TRANSFER = 3  #: model and firmware transfers
    LOG = 4  #: device → host LogRecord


class Flag(enum.IntFlag):
    """Frame flags. A bit not defined here is refused by the decoder and the encoder."""

    NONE = 0
    RESPONSE = 0x01  #: answers the request with the same sequence number


_DEFINED_FLAGS = functools.reduce(operator.or_, (int(flag) for flag in Flag), 0)
#: header byte -> member, looked up per frame (an enum call costs more than the rest of the header)
_CHANNELS = {int(channel): channel for channel in Channel}
_RESPONSE_BIT = int(Flag.RESPONSE)
_FLAGS = {value: Flag(value) for value in range(_DEFINED_FLAGS + 1) if not value & ~_DEFINED_FLAGS}


@dataclass(frozen=True)
class Frame:
    """One decoded (or to-be-encoded) link frame."""

    channel: Channel
    seq: int
    payload: bytes
    flags: Flag = Flag.NONE
    version: int = PROTOCOL_VERSION


@dataclass
class LinkCounters:
    """What one side of the link has seen. Counters only grow."""

    frames_rx: int = 0
    frames_tx: int = 0
    bytes_rx: int = 0
    bytes_tx: int = 0
    crc_errors: int = 0
    decode_errors: int = 0  #: COBS errors, short frames, unknown channels
    resyncs: int = 0  #: frames dropped to resynchronise (every bad frame)
    seq_lost: int = 0  #: frames missing by sequence number
    oversize: int = 0
    bad_version: int = 0
    bytes_dropped: int = 0
    duplicates: int = 0  #: well-formed frames dropped because their number was seen already (duplicates, replays)
    bad_flags: int = 0  #: frames refused for a flag bit :class:`Flag` does not define

    def snapshot(self) -> LinkCounters:
        """Return an independent copy."""
        return LinkCounters(**vars(self))

    @property
    def corrupted(self) -> int:
        """Frames that arrived damaged or malformed (all reasons; duplicates are not among them)."""
        return self.crc_errors + self.decode_errors + self.oversize + self.bad_version + self.bad_flags


def max_encoded_size(max_payload: int) -> int:
    """Largest COBS-encoded frame (without delimiter) for a payload limit."""
    raw = max_payload + _OVERHEAD
    return raw + raw // 254 + 1


def encode_frame(frame: Frame) -> bytes:
    """Encode one frame, delimiter included.

    Raises:
        ValueError: sequence number, channel, flags or version out of range, or a flag bit
            :class:`Flag` does not define.
    """
    if not 0 <= frame.seq < _SEQ_MODULO:
        raise ValueError(f"sequence number {frame.seq} out of range 0..65535")
    if frame.channel not in Channel.__members__.values():
        raise ValueError(f"unknown channel {frame.channel!r}")
    if not 0 <= int(frame.flags) <= 0xFF or not 0 <= frame.version <= 0xFF:
        raise ValueError(f"flags {int(frame.flags)} or version {frame.version} out of range 0..255")
    if int(frame.flags) & ~_DEFINED_FLAGS:
        raise ValueError(f"flags 0x{int(frame.flags):02x} set bits that are undefined")
    body = _HEADER.pack(frame.version, int(frame.channel), int(frame.flags), frame.seq) + frame.payload
    return cobs.encode(body + _CRC.pack(zlib.crc32(body))) + DELIMITER


@dataclass
class Encoder:
    """Numbers and encodes outgoing frames; one sequence counter per channel.

    Thread-safety is the caller's: the session serialises writes anyway.
    """

    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    counters: LinkCounters = field(default_factory=LinkCounters)
    _next_seq: dict[Channel, int] = field(default_factory=dict)

    def encode(
        self,
        channel: Channel,
        payload: bytes,
        *,
        flags: Flag = Flag.NONE,
        seq: int | None = None,
        version: int = PROTOCOL_VERSION,
    ) -> bytes:
        """Encode a payload for ``channel``; ``seq`` is assigned unless given (responses).

        ``version`` other than :data:`PROTOCOL_VERSION` only answers an older peer's request
        with a refusal it can read.

        Raises:
            ValueError: the payload is larger than ``max_frame_size``.
        """
        if len(payload) > self.max_frame_size:
            raise ValueError(f"payload of {len(payload)} bytes exceeds the {self.max_frame_size}-byte frame limit")
        if seq is None:
            seq = self.next_seq(channel)
        data = encode_frame(Frame(channel, seq, payload, flags, version))
        self.counters.frames_tx += 1
        self.counters.bytes_tx += len(data)
        return data

    def next_seq(self, channel: Channel) -> int:
        """Reserve and return the next sequence number of ``channel``."""
        seq = self._next_seq.get(channel, 0)
        self._next_seq[channel] = (seq + 1) % _SEQ_MODULO
        return seq


class Decoder:
    """Turns a byte stream into frames; counts, and never raises on, bad input.

    Feed it whatever the transport returned, in pieces of any size::

        for frame in decoder.feed(chunk):
            ...

    Args:
        max_frame_size: the largest payload accepted, bytes.
        replay_window: sequence numbers remembered behind the highest one per channel, to
            drop duplicates and replays (:mod:`seedcam.protocol.sequence`); 0 turns that off.
        answer_versions: other protocol versions whose intact frames are handed over (with
            their :attr:`Frame.version`) though counted in ``bad_version``, to be refused in
            a form that peer reads.

    Raises:
        ValueError: ``replay_window`` is negative.
    """

    def __init__(
        self,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        *,
        replay_window: int = SEQ_WINDOW,
        answer_versions: frozenset[int] = frozenset(),
    ) -> None:
        self.max_frame_size = max_frame_size
        #: the version of the latest intact frame refused for its version (None: none seen)
        self.peer_version: int | None = None
        self._answer_versions = answer_versions
        self.counters = LinkCounters()
        self._buffer = bytearray()
        self._discarding = False  # inside an oversize frame: drop until the next delimiter
        self._max_encoded = max_encoded_size(max_frame_size)
        self._sequence = SequenceTracker(replay_window)

    @property
    def replay_window(self) -> int:
        """Sequence numbers remembered behind the highest one, per channel."""
        return self._sequence.window

    def feed(self, data: bytes) -> list[Frame]:
        """Consume bytes and return the complete, valid frames they finish."""
        self.counters.bytes_rx += len(data)
        frames: list[Frame] = []
        start = 0
        while True:
            end = data.find(0, start)
            if end < 0:
                self._accumulate(data[start:])
                return frames
            self._accumulate(data[start:end])
            frame = self._finish_frame()
            if frame is not None:
                frames.append(frame)
            start = end + 1

    def reset_sequence(self) -> None:
        """Forget the sequence numbers seen (the peer restarted)."""
        self._sequence.reset()

    def _accumulate(self, chunk: bytes) -> None:
        if self._discarding:
            self.counters.bytes_dropped += len(chunk)
            return
        self._buffer += chunk
        if len(self._buffer) > self._max_encoded:
            self.counters.oversize += 1
            self.counters.resyncs += 1
            self.counters.bytes_dropped += len(self._buffer)
            self._buffer.clear()
            self._discarding = True

    def _finish_frame(self) -> Frame | None:
        if self._discarding:
            self._discarding = False
            self.counters.bytes_dropped += 1
            return None
        encoded = bytes(self._buffer)
        self._buffer.clear()
        if not encoded:
            return None  # back-to-back delimiters: idle fill, not an error
        frame = self._parse(encoded)
        if frame is None:
            self.counters.resyncs += 1
            self.counters.bytes_dropped += len(encoded) + 1
            return None
        deliver, lost = self._sequence.accept(frame.channel, frame.seq, bool(int(frame.flags) & _RESPONSE_BIT))
        if not deliver:
            self.counters.duplicates += 1
            self.counters.bytes_dropped += len(encoded) + 1
            return None
        self.counters.seq_lost += lost
        self.counters.frames_rx += 1
        return frame

    def _parse(self, encoded: bytes) -> Frame | None:
        try:
            raw = cobs.decode(encoded)
        except cobs.DecodeError:
            self.counters.decode_errors += 1
            return None
        if len(raw) < _OVERHEAD:
            self.counters.decode_errors += 1
            return None
        body, (crc,) = raw[: -_CRC.size], _CRC.unpack(raw[-_CRC.size :])
        if zlib.crc32(body) != crc:
            self.counters.crc_errors += 1
            return None
        version, channel, flags, seq = _HEADER.unpack_from(body)
        if version != PROTOCOL_VERSION:
            self.counters.bad_version += 1
            self.peer_version = version
            if version not in self._answer_versions:
                return None
        if flags & ~_DEFINED_FLAGS:
            self.counters.bad_flags += 1
            return None
        known = _CHANNELS.get(channel)
        if known is None:
            self.counters.decode_errors += 1
            return None
        flag = _FLAGS.get(flags)
        frame = built(
            Frame,
            channel=known,
            seq=seq,
            payload=body[_HEADER.size :],
            flags=Flag(flags) if flag is None else flag,
            version=version,
        )
        if len(frame.payload) > self.max_frame_size:
            self.counters.oversize += 1
            return None
        return frame


def link_counters(decoder: Decoder, encoder: Encoder) -> LinkCounters:
    """One side's whole view of the link: what its decoder received plus what its encoder sent."""
    counters = decoder.counters.snapshot()
    counters.frames_tx = encoder.counters.frames_tx
    counters.bytes_tx = encoder.counters.bytes_tx
    return counters

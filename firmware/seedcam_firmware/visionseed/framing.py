"""VisionSeed's link framing, sans-IO, for the compatibility personality.

A frame on the wire is ``0x10 | esc(LEN[3] BE | HCRC[2] BE | PAYLOAD | PCRC[2] BE)``
where ``esc`` sends 0x10 and 0x11 as ``0x11, byte ^ 0x11``, LEN is the payload
length, and both CRCs are CRC-16/CCITT-FALSE (``binascii.crc_hqx`` with init
0xFFFF) over the unescaped length bytes and payload. A raw 0x10 always starts a
new frame. Like :mod:`seedcam.protocol.framing`, the decoder never raises on bad
input; it counts it in the same :class:`~seedcam.protocol.framing.LinkCounters`.
"""

from __future__ import annotations

import binascii
import enum

from seedcam.protocol.framing import LinkCounters

__all__ = ["SOF", "ESCAPE", "DEFAULT_MAX_PAYLOAD", "encode_visionseed", "VisionSeedDecoder"]

SOF = 0x10
ESCAPE = 0x11
DEFAULT_MAX_PAYLOAD = 2 * 1024 * 1024  # what the Python and JS clients accept
_CRC_INIT = 0xFFFF
_SOF_BYTE = bytes((SOF,))
_ESCAPE_BYTE = bytes((ESCAPE,))


def _crc16(data: bytes) -> int:
    return binascii.crc_hqx(data, _CRC_INIT)


def _escape(data: bytes) -> bytes:
    if SOF not in data and ESCAPE not in data:
        return data
    out = bytearray()
    for byte in data:
        if byte in (SOF, ESCAPE):
            out += bytes((ESCAPE, byte ^ ESCAPE))
        else:
            out.append(byte)
    return bytes(out)


def encode_visionseed(payload: bytes) -> bytes:
    """Frame one payload (a serialized ``YtMsg``).

    Raises:
        ValueError: the payload does not fit the 3-byte length.
    """
    if len(payload) >= 1 << 24:
        raise ValueError(f"payload of {len(payload)} bytes does not fit a VisionSeed frame")
    length = len(payload).to_bytes(3, "big")
    body = length + _crc16(length).to_bytes(2, "big") + payload + _crc16(payload).to_bytes(2, "big")
    return bytes((SOF,)) + _escape(body)


class _State(enum.Enum):
    IDLE = 0
    HEADER = 1
    PAYLOAD = 2


class VisionSeedDecoder:
    """Turns a byte stream into VisionSeed payloads; counts bad input, never raises.

    It scans with ``bytes.find`` for SOF and escape bytes and copies the runs between them
    as slices, so its cost per byte is C code, not a Python loop; what it accepts, refuses
    and counts is byte for byte what the byte-at-a-time decoder it replaced did (kept in
    :mod:`seedcam_tools.bench_visionseed` as the benchmark's baseline and the tests' oracle).
    """

    def __init__(self, max_payload: int = DEFAULT_MAX_PAYLOAD) -> None:
        self.max_payload = max_payload
        self.counters = LinkCounters()
        self._state = _State.IDLE
        self._escaped = False
        self._buffer = bytearray()
        self._length = 0

    def feed(self, data: bytes) -> list[bytes]:
        """Consume bytes; return the payloads of the frames they complete."""
        data = bytes(data)
        end = len(data)
        self.counters.bytes_rx += end
        payloads: list[bytes] = []
        pos = 0
        while pos < end:
            sof = data.find(_SOF_BYTE, pos)
            stop = end if sof < 0 else sof  # the frame in progress owns the bytes up to the next SOF
            if self._state is not _State.IDLE:
                pos = self._consume(data, pos, stop, payloads)
            if pos < stop:  # idle (the frame ended or was refused): up to the next SOF is garbage
                self.counters.bytes_dropped += stop - pos
            if sof < 0:
                break
            if self._state is not _State.IDLE:  # a new frame cut the current one short
                self.counters.decode_errors += 1
                self._drop()
            self._state, self._escaped = _State.HEADER, False
            self._buffer.clear()
            pos = sof + 1
        return payloads

    def _consume(self, data: bytes, pos: int, stop: int, payloads: list[bytes]) -> int:
        """Unescape ``data[pos:stop]`` (no SOF in it) into the frame until it ends; return where it stopped."""
        buffer = self._buffer
        while pos < stop and self._state is not _State.IDLE:
            target = 5 if self._state is _State.HEADER else self._length + 2
            while len(buffer) < target and pos < stop:
                if self._escaped:
                    buffer.append(data[pos] ^ ESCAPE)
                    self._escaped = False
                    pos += 1
                    continue
                run_end = min(stop, pos + target - len(buffer))
                escape = data.find(_ESCAPE_BYTE, pos, run_end)
                if escape < 0:
                    buffer += data[pos:run_end]
                    pos = run_end
                else:
                    buffer += data[pos:escape]
                    self._escaped = True
                    pos = escape + 1
            if len(buffer) < target:
                break
            if self._state is _State.HEADER:
                self._check_header()
            else:
                payload = self._check_payload()
                if payload is not None:
                    payloads.append(payload)
        return pos

    def _check_header(self) -> None:
        length_bytes, crc = bytes(self._buffer[:3]), int.from_bytes(self._buffer[3:5], "big")
        if _crc16(length_bytes) != crc:
            self.counters.crc_errors += 1
            self._drop()
            return
        self._length = int.from_bytes(length_bytes, "big")
        if self._length > self.max_payload:
            self.counters.oversize += 1
            self._drop()
            return
        self._buffer.clear()
        self._state = _State.PAYLOAD

    def _check_payload(self) -> bytes | None:
        payload, crc = bytes(self._buffer[:-2]), int.from_bytes(self._buffer[-2:], "big")
        self._state = _State.IDLE
        self._buffer.clear()
        if _crc16(payload) != crc:
            self.counters.crc_errors += 1
            self.counters.resyncs += 1
            self.counters.bytes_dropped += len(payload) + 8
            return None
        self.counters.frames_rx += 1
        return payload

    def _drop(self) -> None:
        self.counters.resyncs += 1
        self.counters.bytes_dropped += len(self._buffer) + 1
        self._buffer.clear()
        self._state = _State.IDLE
        self._escaped = False

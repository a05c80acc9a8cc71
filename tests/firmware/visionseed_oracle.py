"""Reference models of the VisionSeed framing decoder and ``dataV2`` parser, written apart from them,
and the checks the fuzzers run (tests/firmware/test_visionseed_fuzz.py).

:func:`check_frames` feeds a stream to :class:`~seedcam_firmware.visionseed.framing.VisionSeedDecoder`
in the given pieces and compares the payloads it delivers *and every counter* with what the
model derives from the wire format (docs in framing.py and the VisionSeed wire description):
the stream is split on raw SOF bytes with ``bytes.split`` (a raw 0x10 always starts a frame),
each piece is unescaped with a regular expression, and the frame's end in the piece is found by
counting escape pairs. :func:`check_datav2` compares
:func:`~seedcam_firmware.visionseed.datav2.decode_datav2` with a reader over ``io.BytesIO``.
Both raise ``AssertionError`` on any difference, so a fuzzer that calls them finds crashes
(any other exception) and false accepts (a payload or tree the model refuses) alike.
"""

from __future__ import annotations

import binascii
import io
import re
from dataclasses import dataclass

from seedcam.errors import ProtocolError
from seedcam_firmware.visionseed.datav2 import decode_datav2
from seedcam_firmware.visionseed.framing import VisionSeedDecoder

__all__ = [
    "FrameReport",
    "check_datav2",
    "check_frames",
    "feed_all",
    "model_frames",
    "reference_datav2",
    "reference_frame",
]

_SOF = b"\x10"
_PAIR = re.compile(rb"\x11(.)", re.DOTALL)
_COUNTERS = ("frames_rx", "crc_errors", "decode_errors", "resyncs", "oversize", "bytes_rx", "bytes_dropped")


def _crc(data: bytes) -> int:
    return binascii.crc_hqx(data, 0xFFFF)


def reference_frame(
    payload: bytes, *, length: int | None = None, hcrc: int | None = None, pcrc: int | None = None
) -> bytes:
    """A frame on the wire, optionally with a wrong LEN or CRC (escaping by ``bytes.replace``)."""
    head = (len(payload) if length is None else length).to_bytes(3, "big")
    body = head + (_crc(head) if hcrc is None else hcrc).to_bytes(2, "big")
    body += payload + (_crc(payload) if pcrc is None else pcrc).to_bytes(2, "big")
    return _SOF + body.replace(b"\x11", b"\x11\x00").replace(b"\x10", b"\x11\x01")


def _unescape(piece: bytes) -> tuple[bytes, list[int]]:
    """A piece without SOF unescaped (a lone 0x11 at its end left out), and the unescaped index of each pair."""
    pairs = list(_PAIR.finditer(piece))
    out = _PAIR.sub(lambda m: bytes((m.group(1)[0] ^ 0x11,)), piece)
    if piece.endswith(b"\x11") and not (pairs and pairs[-1].end() == len(piece)):
        out = out[:-1]  # an escape still waiting for its byte
    return out, [m.start() - j for j, m in enumerate(pairs)]


def _raw_end(k: int, pair_indices: list[int]) -> int:
    """Raw bytes of a piece that hold its first ``k`` unescaped bytes."""
    return k + sum(1 for index in pair_indices if index < k)


def model_frames(stream: bytes, max_payload: int) -> tuple[list[bytes], dict[str, int]]:
    """The payloads and counters a decoder must produce for ``stream`` (which ends with an SOF)."""
    assert stream.endswith(_SOF)
    pieces = stream.split(_SOF)
    counts = dict.fromkeys(_COUNTERS, 0)
    counts["bytes_rx"] = len(stream)
    counts["bytes_dropped"] = len(pieces[0])
    payloads: list[bytes] = []
    for piece in pieces[1:-1]:  # each one a frame started by a SOF and ended by the next
        plain, pairs = _unescape(piece)
        if len(plain) < 5:
            counts["decode_errors"] += 1
            counts["resyncs"] += 1
            counts["bytes_dropped"] += len(plain) + 1
            continue
        length = int.from_bytes(plain[:3], "big")
        header_ok = _crc(plain[:3]) == int.from_bytes(plain[3:5], "big")
        if not header_ok or length > max_payload:  # refused at the header: the rest of the piece is garbage
            counts["oversize" if header_ok else "crc_errors"] += 1
            counts["resyncs"] += 1
            counts["bytes_dropped"] += 6 + len(piece) - _raw_end(5, pairs)
            continue
        if len(plain) < 5 + length + 2:
            counts["decode_errors"] += 1
            counts["resyncs"] += 1
            counts["bytes_dropped"] += len(plain) - 5 + 1
            continue
        payload, crc = plain[5 : 5 + length], int.from_bytes(plain[5 + length : 7 + length], "big")
        if _crc(payload) == crc:
            counts["frames_rx"] += 1
            payloads.append(payload)
        else:
            counts["crc_errors"] += 1
            counts["resyncs"] += 1
            counts["bytes_dropped"] += length + 8
        counts["bytes_dropped"] += len(piece) - _raw_end(7 + length, pairs)
    return payloads, counts


def feed_all(decoder: VisionSeedDecoder, stream: bytes, chunks: list[int] | None) -> list[bytes]:
    """Feed ``stream`` in pieces of the sizes in ``chunks`` (cycled), or whole."""
    if not chunks:
        return decoder.feed(stream)
    got: list[bytes] = []
    pos, index = 0, 0
    while pos < len(stream):
        size = chunks[index % len(chunks)]
        got += decoder.feed(stream[pos : pos + size])
        pos, index = pos + size, index + 1
    return got


@dataclass(frozen=True)
class FrameReport:
    """What one checked stream held."""

    frames: int  #: pieces started by a SOF
    delivered: int
    refused: int  #: frames counted as damaged (CRC, oversize, cut short)


def check_frames(stream: bytes, chunks: list[int] | None = None, *, max_payload: int = 1 << 21) -> FrameReport:
    """Decode ``stream`` (an SOF is added to end the last frame) and compare with the model.

    Raises:
        AssertionError: other payloads delivered, or a counter that differs from the model's.
    """
    stream += _SOF
    decoder = VisionSeedDecoder(max_payload=max_payload)
    got = feed_all(decoder, stream, chunks)
    expected, counts = model_frames(stream, max_payload)
    assert got == expected, f"decoder delivered {got!r}, the model {expected!r}"
    actual = {name: getattr(decoder.counters, name) for name in _COUNTERS}
    assert actual == counts, f"counters {actual}, the model's {counts}"
    return FrameReport(stream.count(_SOF) - 1, len(got), counts["resyncs"])


class _Refused(Exception):
    pass


def reference_datav2(data: bytes) -> list[tuple[tuple[int, ...], int, bytes]] | None:
    """``(path, type, data)`` of each record of a well-formed tree, else None."""
    reader = io.BytesIO(data)

    def take(n: int) -> bytes:
        chunk = reader.read(n)
        if len(chunk) != n:
            raise _Refused
        return chunk

    records = []
    try:
        for _ in range(take(1)[0]):
            path = tuple(take(take(1)[0]))
            kind = take(1)[0]
            if kind > 5:
                raise _Refused
            value, digits = 0, 0
            while True:
                if digits == 5:
                    raise _Refused
                byte = take(1)[0]
                value += (byte % 128) * 128**digits
                digits += 1
                if byte < 128:
                    break
            if value >= 2**32:
                raise _Refused
            records.append((path, kind, take(value)))
    except _Refused:
        return None
    return None if reader.read(1) else records


def check_datav2(data: bytes) -> bool:
    """Parse ``data`` and compare with the reference; True when it was accepted.

    Raises:
        AssertionError: a tree accepted that the reference refuses, refused that it accepts, or parsed otherwise.
    """
    expected = reference_datav2(data)
    try:
        nodes = decode_datav2(data)
    except ProtocolError as exc:
        assert expected is None, f"refused ({exc}) a tree the reference accepts: {expected!r}"
        return False
    assert expected is not None, f"accepted a tree the reference refuses: {nodes!r}"
    assert [(n.path, int(n.type), n.data) for n in nodes] == expected
    return True

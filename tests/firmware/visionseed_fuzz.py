"""Fuzz inputs for the VisionSeed framing decoder and ``dataV2`` parser, and the seeded fuzzer that runs them.

The same two engines as the native link's (tests/sdk/framing_fuzz.py): an entropy
:class:`Source` (a seeded ``random.Random`` here, atheris's ``FuzzedDataProvider`` in
fuzz_visionseed.py) steers how each input is built, and visionseed_oracle decides whether
the decoder got it right.

* framing: frames built with the oracle's own encoder, some with a wrong LEN, header CRC
  or payload CRC, some at the size limit, escape bytes and raw 0x10 in payloads, whole
  frames repeated, garbage between them, then byte mutations (bit flips, inserted SOF,
  escape and other bytes, deletions, overwrites, a truncation, a copied slice), fed in
  random pieces to a decoder with a random size limit;
* dataV2: trees built by hand with the record count sometimes wrong, record types past
  the last one, length varints padded to 1-7 bytes or up to 2000 bytes long, lengths
  past the end, trailing bytes, then the same byte mutations.
"""

from __future__ import annotations

import builtins
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from visionseed_oracle import check_datav2, check_frames, reference_frame

__all__ = [
    "FuzzTally",
    "RandomSource",
    "Source",
    "datav2_input",
    "framing_input",
    "run_datav2",
    "run_framing",
    "run_seeded",
]

_MAX_PAYLOADS = (0, 1, 16, 300, 1 << 21)


class Source(Protocol):
    """Where a fuzz input's choices come from."""

    def int(self, lo: int, hi: int) -> int:
        """An integer in ``lo..hi`` (both included)."""
        ...

    def bytes(self, n: builtins.int) -> builtins.bytes:
        """Up to ``n`` bytes."""
        ...


class RandomSource:
    """A :class:`Source` over a seeded :class:`random.Random`."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._random = rng.random

    def int(self, lo: int, hi: int) -> int:
        return lo + int(self._random() * (hi - lo + 1))  # randint's result, at a third of its cost

    def bytes(self, n: builtins.int) -> builtins.bytes:
        return self._rng.randbytes(n)


def _payload(src: Source, max_payload: int) -> bytes:
    size = src.int(0, 40) if src.int(0, 7) else src.int(max(0, max_payload - 2), max_payload + 2)
    payload = bytearray(src.bytes(min(size, 400)))
    for _ in range(src.int(0, 3)):  # the bytes that are escaped on the wire
        if payload:
            payload[src.int(0, len(payload) - 1)] = 0x10 + src.int(0, 1)
    return bytes(payload)


def _frame(src: Source, max_payload: int) -> bytes:
    payload = _payload(src, max_payload)
    damage = src.int(0, 15)
    if damage == 0:
        return reference_frame(payload, length=(len(payload) + src.int(-3, 3)) % (1 << 24))
    if damage == 1:
        return reference_frame(payload, hcrc=src.int(0, 0xFFFF))
    if damage == 2:
        return reference_frame(payload, pcrc=src.int(0, 0xFFFF))
    return reference_frame(payload)


def _mutate(src: Source, data: bytearray) -> None:
    kind = src.int(0, 6)
    if not data:
        data += src.bytes(src.int(1, 8))
        return
    pos = src.int(0, len(data) - 1)
    if kind == 0:
        data[pos] ^= 1 << src.int(0, 7)
    elif kind == 1:
        data.insert(pos, (0x10, 0x11, src.int(0, 255))[src.int(0, 2)])
    elif kind == 2:
        del data[pos : pos + src.int(1, 4)]
    elif kind == 3:
        data[pos] = src.int(0, 255)
    elif kind == 4:
        del data[pos:]
    elif kind == 5:
        end = min(len(data), pos + src.int(1, 64))
        data[src.int(0, len(data)) : 0] = data[pos:end]  # a copied slice, maybe a whole frame
    else:
        data[pos:pos] = src.bytes(src.int(1, 16))


def _mutated(src: Source, data: bytearray) -> bytes:
    for _ in range(src.int(0, 3) if src.int(0, 1) else 0):
        _mutate(src, data)
    return bytes(data)


def framing_input(src: Source) -> tuple[bytes, list[int] | None, int]:
    """One framing input: ``(stream, chunk sizes or None, max_payload)``."""
    max_payload = _MAX_PAYLOADS[src.int(0, len(_MAX_PAYLOADS) - 1)]
    parts: list[bytes] = []
    for _ in range(src.int(0, 6)):
        kind = src.int(0, 9)
        if kind == 0:
            parts.append(src.bytes(src.int(0, 40)))  # garbage
        elif kind == 1 and parts:
            parts.append(parts[src.int(0, len(parts) - 1)])  # a whole part again
        else:
            parts.append(_frame(src, max_payload))
    stream = _mutated(src, bytearray(b"".join(parts)))
    chunks = [src.int(1, 64) for _ in range(src.int(1, 4))] if src.int(0, 1) else None
    return stream, chunks, max_payload


def _varint(src: Source, value: int) -> bytes:
    digits = []
    while True:
        digits.append(value & 0x7F)
        value >>= 7
        if not value:
            break
    pad = src.int(0, 2) if src.int(0, 3) else src.int(0, 2000)  # padded: 0x80 ... 0x00
    digits += [0] * pad
    return bytes([d | 0x80 for d in digits[:-1]] + [digits[-1]])


def datav2_input(src: Source) -> bytes:
    """One dataV2 input."""
    records = []
    for _ in range(src.int(0, 6)):
        path = src.bytes(src.int(0, 4))
        kind = src.int(0, 5) if src.int(0, 15) else src.int(6, 255)
        data = src.bytes(src.int(0, 40))
        length = len(data) if src.int(0, 7) else src.int(0, 60) if src.int(0, 1) else src.int(0, 0xFFFF_FFFF + 2)
        records.append(bytes((len(path),)) + path + bytes((kind,)) + _varint(src, length) + data)
    count = len(records) if src.int(0, 7) else src.int(0, 255)
    tail = src.bytes(src.int(1, 8)) if not src.int(0, 7) else b""
    return _mutated(src, bytearray(bytes((count,)) + b"".join(records) + tail))


@dataclass
class FuzzTally:
    """What a fuzz run fed and found."""

    inputs: int = 0
    accepted: int = 0  #: frames delivered, or trees parsed
    refused: int = 0  #: frames refused, or trees refused
    crashes: int = 0  #: an exception other than the model's verdict escaped
    false_accepts: int = 0  #: the decoder disagreed with the model (accepted, refused or counted otherwise)
    first_failure: str = ""


def _framing_case(src: Source) -> tuple[int, int]:
    stream, chunks, max_payload = framing_input(src)
    report = check_frames(stream, chunks, max_payload=max_payload)
    return report.delivered, report.refused


def _datav2_case(src: Source) -> tuple[int, int]:
    accepted = check_datav2(datav2_input(src))
    return int(accepted), int(not accepted)


def run_seeded(case: Callable[[Source], tuple[int, int]], inputs: int, seed: int) -> FuzzTally:
    """Run ``inputs`` seeded inputs through ``case``; failures are tallied, not raised."""
    src = RandomSource(random.Random(seed))
    tally = FuzzTally()
    for index in range(inputs):
        tally.inputs += 1
        try:
            accepted, refused = case(src)
        except AssertionError as exc:
            tally.false_accepts += 1
            tally.first_failure = tally.first_failure or f"input {index} (seed {seed}): {exc}"
            continue
        except Exception as exc:  # noqa: BLE001 - a crash of the decoder is what we count
            tally.crashes += 1
            tally.first_failure = tally.first_failure or f"input {index} (seed {seed}): {exc!r}"
            continue
        tally.accepted += accepted
        tally.refused += refused
    return tally


def run_framing(inputs: int, seed: int) -> FuzzTally:
    """The seeded fuzzer on the framing decoder."""
    return run_seeded(_framing_case, inputs, seed)


def run_datav2(inputs: int, seed: int) -> FuzzTally:
    """The seeded fuzzer on the dataV2 parser."""
    return run_seeded(_datav2_case, inputs, seed)

"""Fuzz inputs for the native link decoder, and the seeded byte-mutation fuzzer that runs them.

One input is a byte stream, the pieces it is fed in and a frame size limit. It is built
from an entropy :class:`Source` (a seeded ``random.Random``, or atheris's
``FuzzedDataProvider`` in fuzz_native_framing.py): frames built with the independent
reference encoder, with header fields that are sometimes wrong (version, channel, an
undefined flag bit), sequence numbers chosen to hit every rule of the sequence window
(the next one, the same again, an older one, 0, a wrap, a far jump), whole frames
repeated, garbage between frames, then byte mutations (bit flips, insertions of 0x00
and other bytes, deletions, overwrites, a truncation, a copied slice).
:func:`framing_oracle.check_stream` decides whether the decoder got it right.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Protocol

from framing_helpers import ref_frame
from framing_oracle import check_stream

__all__ = ["FuzzInput", "FuzzTally", "RandomSource", "Source", "fuzz_input", "run_seeded"]

_MAX_SIZES = (0, 1, 16, 300, 65536)


class Source(Protocol):
    """Where a fuzz input's choices come from."""

    def int(self, lo: int, hi: int) -> int:
        """An integer in ``lo..hi`` (both included)."""
        ...

    def bytes(self, n: int) -> bytes:
        """Up to ``n`` bytes."""
        ...


class RandomSource:
    """A :class:`Source` over a seeded :class:`random.Random`."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def int(self, lo: int, hi: int) -> int:
        return self._rng.randint(lo, hi)

    def bytes(self, n: int) -> bytes:
        return self._rng.randbytes(n)


@dataclass(frozen=True)
class FuzzInput:
    stream: bytes
    chunks: list[int] | None
    max_frame_size: int


def _seq(src: Source, last: dict[tuple[int, int], int], channel: int, flags: int) -> int:
    previous = last.get((channel, flags & 1))
    choice = src.int(0, 9)
    if previous is None or choice == 0:
        seq = src.int(0, 65535)
    elif choice <= 4:
        seq = (previous + 1) % 65536  # the next one
    elif choice == 5:
        seq = previous  # a duplicate
    elif choice == 6:
        seq = (previous - src.int(1, 80)) % 65536  # a replay, inside or just outside the window
    elif choice == 7:
        seq = 0  # a restarted sender
    elif choice == 8:
        seq = (previous + src.int(2, 40000)) % 65536  # a gap, or a jump far enough to be a restart
    else:
        seq = 65535  # the wrap
    last[(channel, flags & 1)] = seq
    return seq


def _frame(src: Source, last: dict[tuple[int, int], int], max_frame_size: int) -> bytes:
    channel = src.int(0, 4) if src.int(0, 15) else src.int(0, 255)
    flags = src.int(0, 1) if src.int(0, 15) else src.int(0, 255)
    version = 2 if src.int(0, 15) else src.int(0, 255)
    size = src.int(0, 40) if src.int(0, 7) else src.int(max(0, max_frame_size - 2), max_frame_size + 2)
    payload = src.bytes(min(size, 400))
    return ref_frame(channel, _seq(src, last, channel, flags), payload, flags, version)


def _mutate(src: Source, data: bytearray) -> None:
    kind = src.int(0, 6)
    if not data:
        data += src.bytes(src.int(1, 8))
        return
    pos = src.int(0, len(data) - 1)
    if kind == 0:
        data[pos] ^= 1 << src.int(0, 7)
    elif kind == 1:
        data.insert(pos, 0 if src.int(0, 1) else src.int(1, 255))
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


def fuzz_input(src: Source) -> FuzzInput:
    """Build one fuzz input from ``src``; see the module docstring."""
    max_frame_size = _MAX_SIZES[src.int(0, len(_MAX_SIZES) - 1)]
    last: dict[tuple[int, int], int] = {}
    parts: list[bytes] = []
    for _ in range(src.int(0, 8)):
        kind = src.int(0, 9)
        if kind == 0:
            parts.append(src.bytes(src.int(0, 40)))  # garbage
        elif kind == 1 and parts:
            parts.append(parts[src.int(0, len(parts) - 1)])  # a whole part again
        else:
            parts.append(_frame(src, last, max_frame_size))
    data = bytearray(b"".join(parts))
    for _ in range(src.int(0, 3) if src.int(0, 1) else 0):
        _mutate(src, data)
    chunks = [src.int(1, 64) for _ in range(src.int(1, 4))] if src.int(0, 1) else None
    return FuzzInput(bytes(data), chunks, max_frame_size)


@dataclass
class FuzzTally:
    """What a fuzz run fed and found."""

    inputs: int = 0
    segments: int = 0
    well_formed: int = 0
    delivered: int = 0
    duplicates: int = 0
    crashes: int = 0  #: an exception other than the model's verdict escaped
    false_accepts: int = 0  #: the decoder disagreed with the model (it delivered what it must not, or lost a frame)
    first_failure: str = ""


def run_seeded(inputs: int, seed: int) -> FuzzTally:
    """Run ``inputs`` seeded inputs through :func:`framing_oracle.check_stream`; failures are tallied, not raised."""
    rng = random.Random(seed)
    src = RandomSource(rng)
    tally = FuzzTally()
    for index in range(inputs):
        case = fuzz_input(src)
        tally.inputs += 1
        try:
            report = check_stream(case.stream, case.chunks, max_frame_size=case.max_frame_size)
        except AssertionError as exc:
            tally.false_accepts += 1
            tally.first_failure = tally.first_failure or f"input {index} (seed {seed}) {case!r}: {exc}"
            continue
        except Exception as exc:  # noqa: BLE001 - a crash of the decoder is what we count
            tally.crashes += 1
            tally.first_failure = tally.first_failure or f"input {index} (seed {seed}) {case!r}: {exc!r}"
            continue
        tally.segments += report.segments
        tally.well_formed += report.well_formed
        tally.delivered += report.delivered
        tally.duplicates += report.duplicates
    return tally

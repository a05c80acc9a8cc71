"""Coverage-guided fuzzing of the native link decoder with atheris (libFuzzer).

Run by test_framing_fuzz.py as a child process (libFuzzer ends the process when it is done)::

    python tests/sdk/fuzz_native_framing.py -runs=100000 -seed=1 -artifact_prefix=/tmp/crash-

Each input goes through framing_fuzz.fuzz_input (the bytes steer the frames, their
header fields and sequence numbers, the mutations and the pieces) and then
framing_oracle.check_stream: an exception of any kind, the model's verdict included,
is a finding; libFuzzer saves the input under ``-artifact_prefix`` and exits non-zero.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["seedcam.protocol"]):
    import seedcam.protocol.framing  # noqa: F401 - instrumented before the oracle imports it
    import seedcam.protocol.sequence  # noqa: F401

from framing_fuzz import fuzz_input  # noqa: E402 - after the instrumented imports
from framing_oracle import check_stream  # noqa: E402


class _DataSource:
    """framing_fuzz's Source over atheris's FuzzedDataProvider."""

    def __init__(self, provider: atheris.FuzzedDataProvider) -> None:
        self._provider = provider

    def int(self, lo: int, hi: int) -> int:
        return self._provider.ConsumeIntInRange(lo, hi)

    def bytes(self, n: int) -> bytes:
        return self._provider.ConsumeBytes(n)


def test_one_input(data: bytes) -> None:
    case = fuzz_input(_DataSource(atheris.FuzzedDataProvider(data)))
    check_stream(case.stream, case.chunks, max_frame_size=case.max_frame_size)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

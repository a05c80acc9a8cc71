"""Coverage-guided fuzzing of the VisionSeed framing decoder or dataV2 parser with atheris (libFuzzer).

Run by test_visionseed_fuzz.py as a child process (libFuzzer ends the process when it is done);
the first argument names the target, the rest go to libFuzzer::

    python tests/firmware/fuzz_visionseed.py framing -runs=100000 -seed=1 -artifact_prefix=/tmp/crash-
    python tests/firmware/fuzz_visionseed.py datav2 -runs=100000 -seed=1

Each input goes through visionseed_fuzz's builder (the bytes steer the frames or records,
their damage, the mutations and the pieces) and then visionseed_oracle's check: an exception
of any kind, the model's verdict included, is a finding; libFuzzer saves the input under
``-artifact_prefix`` and exits non-zero.
"""

from __future__ import annotations

import builtins
import sys

import atheris

with atheris.instrument_imports(include=["seedcam_firmware.visionseed"]):
    import seedcam_firmware.visionseed.datav2  # noqa: F401 - instrumented before the oracle imports them
    import seedcam_firmware.visionseed.framing  # noqa: F401

from visionseed_fuzz import datav2_input, framing_input  # noqa: E402 - after the instrumented imports
from visionseed_oracle import check_datav2, check_frames  # noqa: E402


class _DataSource:
    """visionseed_fuzz's Source over atheris's FuzzedDataProvider."""

    def __init__(self, provider: atheris.FuzzedDataProvider) -> None:
        self._provider = provider

    def int(self, lo: int, hi: int) -> int:
        return self._provider.ConsumeIntInRange(lo, hi)

    def bytes(self, n: builtins.int) -> builtins.bytes:
        return self._provider.ConsumeBytes(n)


def framing_one_input(data: bytes) -> None:
    stream, chunks, max_payload = framing_input(_DataSource(atheris.FuzzedDataProvider(data)))
    check_frames(stream, chunks, max_payload=max_payload)


def datav2_one_input(data: bytes) -> None:
    check_datav2(datav2_input(_DataSource(atheris.FuzzedDataProvider(data))))


def main() -> None:
    target = sys.argv.pop(1)
    atheris.Setup(sys.argv, {"framing": framing_one_input, "datav2": datav2_one_input}[target])
    atheris.Fuzz()


if __name__ == "__main__":
    main()

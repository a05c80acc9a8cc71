"""Fuzzing the VisionSeed framing decoder and dataV2 parser: 0 crashes, 0 false accepts (issue 14).

The same engines as the native link's fuzzing (tests/sdk/test_framing_fuzz.py) feed inputs
built by visionseed_fuzz.py to the checks in visionseed_oracle.py (models written apart
from the code under test):

* a seeded byte-mutation fuzzer, in this process: reproducible, no extra dependency;
* atheris (libFuzzer, coverage-guided), in a child process; skipped where atheris is not installed.

Each runs ``fuzz_inputs`` inputs per decoder: 10^5 (the CI budget), 10^6 with ``--fuzz-long``
(tests/conftest.py); the figures are in docs/reliability.md. The faster framing decoder is
also held to the byte-at-a-time one it replaced (payloads and every counter, any chunking),
and the last tests show the checks have teeth.
"""

from __future__ import annotations

import binascii
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from visionseed_fuzz import RandomSource, framing_input, run_datav2, run_framing
from visionseed_oracle import check_frames, reference_frame

from seedcam_firmware.visionseed import datav2
from seedcam_firmware.visionseed.framing import VisionSeedDecoder

HARNESS = Path(__file__).with_name("fuzz_visionseed.py")
SEED = 14


@pytest.mark.timeout(3600)
def test_seeded_fuzzing_of_the_framing_decoder_finds_no_crash_and_no_false_accept(fuzz_inputs: int) -> None:
    tally = run_framing(fuzz_inputs, SEED)
    assert tally.inputs == fuzz_inputs
    assert (tally.crashes, tally.false_accepts) == (0, 0), tally.first_failure
    assert tally.accepted > fuzz_inputs // 2 and tally.refused > fuzz_inputs // 2  # both outcomes, often


@pytest.mark.timeout(3600)
def test_seeded_fuzzing_of_the_datav2_parser_finds_no_crash_and_no_false_accept(fuzz_inputs: int) -> None:
    tally = run_datav2(fuzz_inputs, SEED)
    assert tally.inputs == fuzz_inputs
    assert (tally.crashes, tally.false_accepts) == (0, 0), tally.first_failure
    assert tally.accepted > fuzz_inputs // 10 and tally.refused > fuzz_inputs // 2


@pytest.mark.timeout(3600)
@pytest.mark.parametrize("target", ["framing", "datav2"])
def test_atheris_finds_no_crash_and_no_false_accept(target: str, fuzz_inputs: int, tmp_path: Path) -> None:
    pytest.importorskip("atheris")
    command = [
        sys.executable,
        str(HARNESS),
        target,
        f"-runs={fuzz_inputs}",
        f"-seed={SEED}",
        f"-artifact_prefix={tmp_path}/",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=3000, cwd=HARNESS.parent)
    assert done.returncode == 0, done.stderr[-4000:]
    assert f"Done {fuzz_inputs} runs" in done.stderr
    assert not list(tmp_path.iterdir()), "libFuzzer saved a failing input"


def test_the_framing_decoder_accepts_refuses_and_counts_as_the_model_says() -> None:
    src = RandomSource(random.Random(SEED))
    for _ in range(3000):
        stream, chunks, max_payload = framing_input(src)
        check_frames(stream, chunks, max_payload=max_payload)


_wire_bytes = st.sampled_from([0x10, 0x11, 0x00, 0x01, 0x55])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=60).map(reference_frame),
            st.lists(st.one_of(_wire_bytes, st.integers(0, 255)), max_size=12).map(bytes),  # escapes, SOFs, garbage
        ),
        max_size=6,
    ),
    st.one_of(st.none(), st.lists(st.integers(1, 9), min_size=1, max_size=3)),
    st.sampled_from([0, 3, 40, 1 << 21]),
)
def test_the_framing_decoder_matches_the_model_on_any_stream(
    parts: list[bytes], chunks: list[int] | None, max_payload: int
) -> None:
    check_frames(b"".join(parts), chunks, max_payload=max_payload)


def test_the_checks_catch_a_decoder_that_skips_the_payload_crc(monkeypatch: pytest.MonkeyPatch) -> None:
    check_payload = VisionSeedDecoder._check_payload

    def deliver_anyway(self: VisionSeedDecoder) -> bytes | None:
        self._buffer[-2:] = binascii.crc_hqx(bytes(self._buffer[:-2]), 0xFFFF).to_bytes(2, "big")
        return check_payload(self)

    monkeypatch.setattr(VisionSeedDecoder, "_check_payload", deliver_anyway)
    assert run_framing(3000, SEED).false_accepts > 0


def test_the_checks_catch_a_parser_that_reads_long_varints(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(datav2, "_MAX_VARINT_BYTES", 10_000)
    assert run_datav2(3000, SEED).false_accepts > 0

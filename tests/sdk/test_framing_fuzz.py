"""Fuzzing the native link decoder: 0 crashes and 0 false accepts (issue 14, the adversarial suite).

Two engines feed the same kind of input (framing_fuzz.py) to the same check
(framing_oracle.check_stream, a model written apart from the decoder):

* a seeded byte-mutation fuzzer, in this process: reproducible, no extra dependency;
* atheris (libFuzzer, coverage-guided), in a child process; skipped where atheris is not installed.

Each runs ``fuzz_inputs`` inputs: 10^5 (the CI budget, seconds), 10^6 with ``--fuzz-long``
(tests/conftest.py). The figures of both budgets are in docs/reliability.md. The last two
tests show the check has teeth: a decoder that accepts undefined flags or delivers
duplicates is caught within a few thousand inputs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from framing_fuzz import run_seeded

from seedcam.protocol import framing
from seedcam.protocol.sequence import SequenceTracker

HARNESS = Path(__file__).with_name("fuzz_native_framing.py")
SEED = 14


@pytest.mark.timeout(3600)
def test_seeded_mutation_fuzzing_finds_no_crash_and_no_false_accept(fuzz_inputs: int) -> None:
    tally = run_seeded(fuzz_inputs, SEED)
    assert tally.inputs == fuzz_inputs
    assert (tally.crashes, tally.false_accepts) == (0, 0), tally.first_failure
    # the inputs reached the decoder's every outcome: damaged frames, delivered ones, duplicates
    assert tally.segments > tally.well_formed > tally.delivered > 0
    assert tally.duplicates > 0


@pytest.mark.timeout(3600)
def test_atheris_finds_no_crash_and_no_false_accept(fuzz_inputs: int, tmp_path: Path) -> None:
    pytest.importorskip("atheris")
    command = [sys.executable, str(HARNESS), f"-runs={fuzz_inputs}", f"-seed={SEED}", f"-artifact_prefix={tmp_path}/"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=3000)
    assert done.returncode == 0, done.stderr[-4000:]
    assert f"Done {fuzz_inputs} runs" in done.stderr
    assert not list(tmp_path.iterdir()), "libFuzzer saved a failing input"


def test_the_fuzzer_catches_a_decoder_that_accepts_undefined_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(framing, "_DEFINED_FLAGS", 0xFF)
    assert run_seeded(3000, SEED).false_accepts > 0


def test_the_fuzzer_catches_a_decoder_that_delivers_duplicates(monkeypatch: pytest.MonkeyPatch) -> None:
    accept = SequenceTracker.accept

    def deliver_everything(self: SequenceTracker, channel: int, seq: int, response: bool) -> tuple[bool, int]:
        return True, accept(self, channel, seq, response)[1]

    monkeypatch.setattr(SequenceTracker, "accept", deliver_everything)
    assert run_seeded(3000, SEED).false_accepts > 0

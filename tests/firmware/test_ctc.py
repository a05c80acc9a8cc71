"""CTC decoding: best path, prefix beam search, regex and lexicon constraints, confidences."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import pytest

from seedcam_firmware.inference.ctc import (
    EXACT_LEXICON_LIMIT,
    TextConstraint,
    TextReading,
    beam_decode,
    greedy_decode,
    sequence_probability,
)

PLATE = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-"
BLANK = len(PLATE)  # our models: the last class


def frames(alphabet: str, spec: Sequence[str | dict[str, float]], blank: int | None = None) -> np.ndarray:
    """``[T, K]`` probabilities: per frame ``{char: p}`` ('' is the blank), a single char (0.9) or '' (blank 0.9).

    What a frame leaves over is spread evenly over the other classes.
    """
    k = len(alphabet) + 1
    blank = k - 1 if blank is None else blank
    classes = list(alphabet[:blank]) + [""] + list(alphabet[blank:])
    out = np.zeros((len(spec), k))
    for t, f in enumerate(spec):
        want = {f: 0.9} if isinstance(f, str) else f
        rest = [i for i, c in enumerate(classes) if c not in want]
        for c, p in want.items():
            out[t, classes.index(c)] = p
        out[t, rest] = (1.0 - sum(want.values())) / len(rest)
    return out


def spelled(text: str) -> list[str | dict[str, float]]:
    """Each character over two frames, a blank between characters."""
    out: list[str | dict[str, float]] = []
    for c in text:
        out += [c, c, ""]
    return out


# --- greedy -------------------------------------------------------------------------------------------------------


def test_greedy_collapses_repeats_and_drops_blanks() -> None:
    probs = frames("ab", [{"a": 0.7}, {"a": 0.9}, "", {"a": 0.6}, {"b": 0.8}, {"b": 0.95}, ""])
    r = greedy_decode(probs, "ab", 2)
    assert r.text == "aab"
    assert r.char_confidences == pytest.approx((0.9, 0.6, 0.95))
    assert r.confidence == pytest.approx(0.9 * 0.6 * 0.95)


def test_greedy_blank_first_and_batch_dimension() -> None:
    probs = frames("ab", ["", "b", "b", "", "a"], blank=0)
    assert probs.shape == (5, 3)
    r = greedy_decode(probs[None], "ab", 0)
    assert r.text == "ba"
    assert greedy_decode(frames("ab", ["a", "b"]), "ab", -1).text == "ab"  # -1: the last class


def test_empty_reading_has_zero_confidence() -> None:
    r = greedy_decode(frames("ab", ["", "", ""]), "ab", 2)
    assert r == TextReading("", 0.0, ())
    assert beam_decode(frames("ab", ["", ""]), "ab", 2).text == ""


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((np.full((3, 4), 0.25), "ab", 2), "classes"),
        ((np.full((3, 3), 1 / 3), "ab", 3), "blank_index"),
        ((np.full((3, 3), 1 / 3), "aa", 2), "repeated"),
        ((np.full((3, 3), 1 / 3), ["ab", "c"], 2), "single characters"),
        ((np.full((2, 3, 3), 1 / 3), "ab", 2), "shape"),
        ((np.full((3, 3), np.nan), "ab", 2), "NaN"),
    ],
)
def test_bad_arguments(args: tuple, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        greedy_decode(*args)


# --- beam search --------------------------------------------------------------------------------------------------


def test_beam_finds_the_best_labelling_when_the_best_path_is_not() -> None:
    # every frame: blank 0.6, 'a' 0.4: the best path is all blanks (P("") = 0.216),
    # but the alignments of "a" add up to 0.688
    probs = np.tile([0.4, 0.0, 0.6], (3, 1))
    greedy = greedy_decode(probs, "ab", 2)
    beam = beam_decode(probs, "ab", 2)
    assert (greedy.text, beam.text) == ("", "a")
    p_greedy = sequence_probability(probs, greedy.text, "ab", 2)
    p_beam = sequence_probability(probs, beam.text, "ab", 2)
    assert p_greedy == pytest.approx(0.216)
    assert p_beam == pytest.approx(0.688)
    assert beam.char_confidences == pytest.approx((0.4,))


def test_repeated_characters_need_a_blank_between_them() -> None:
    assert beam_decode(frames("ab", ["a", "", "a"]), "ab", 2).text == "aa"
    assert beam_decode(frames("ab", ["a", "a", "a"]), "ab", 2).text == "a"
    assert beam_decode(frames("ab", ["a", "a", "", "b", "b", "", "b"]), "ab", 2).text == "abb"


def _labelling_probabilities(probs: np.ndarray, alphabet: str) -> dict[str, float]:
    """Brute force over every path (blank last)."""
    blank = len(alphabet)
    total: dict[str, float] = {}
    for path in itertools.product(range(blank + 1), repeat=len(probs)):
        text, prev = [], -1
        for c in path:
            if c != blank and c != prev:
                text.append(alphabet[c])
            prev = c
        p = float(np.prod([probs[t, c] for t, c in enumerate(path)]))
        total["".join(text)] = total.get("".join(text), 0.0) + p
    return total


def test_forward_probability_and_wide_beam_match_brute_force() -> None:
    rng = np.random.default_rng(7)
    for _ in range(40):
        t = int(rng.integers(1, 6))
        probs = rng.dirichlet(np.full(3, 0.7), size=t)
        truth = _labelling_probabilities(probs, "ab")
        assert sum(truth.values()) == pytest.approx(1.0)
        for text, p in truth.items():
            assert sequence_probability(probs, text, "ab", 2) == pytest.approx(p, abs=1e-12)
        # 64 beams keep every prefix of up to 5 characters over 2 letters: the search is exhaustive
        beam = beam_decode(probs, "ab", 2, beam_width=64, min_char_prob=0.0)
        assert truth[beam.text] == pytest.approx(max(truth.values()), abs=1e-12)
        greedy = greedy_decode(probs, "ab", 2)
        assert truth[beam.text] >= truth[greedy.text] - 1e-12


def test_beam_agrees_with_greedy_on_a_clean_line() -> None:
    probs = frames(PLATE, spelled("XYZ-789"))
    g, b = greedy_decode(probs, PLATE, BLANK), beam_decode(probs, PLATE, BLANK)
    assert g.text == b.text == "XYZ-789"
    assert b.char_confidences == pytest.approx(g.char_confidences)
    assert b.confidence == pytest.approx(0.9**7)


def test_beam_rejects_bad_widths() -> None:
    with pytest.raises(ValueError, match="beam_width"):
        beam_decode(frames("ab", ["a"]), "ab", 2, beam_width=0)


# --- constraints --------------------------------------------------------------------------------------------------


def test_regex_constraint_turns_a_near_miss_into_the_allowed_reading() -> None:
    spec = spelled("AB") + [{"0": 0.55, "C": 0.35}, {"0": 0.55, "C": 0.35}, ""] + spelled("-123")
    probs = frames(PLATE, spec)
    assert greedy_decode(probs, PLATE, BLANK).text == "AB0-123"
    assert beam_decode(probs, PLATE, BLANK).text == "AB0-123"
    plate = TextConstraint.from_pattern(r"[A-Z]{3}-[0-9]{3}")
    r = beam_decode(probs, PLATE, BLANK, constraint=plate)
    assert r.text == "ABC-123"
    assert r.char_confidences == pytest.approx((0.9, 0.9, 0.35, 0.9, 0.9, 0.9, 0.9))
    assert r.confidence == pytest.approx(0.35 * 0.9**6)


def test_regex_constraint_fixes_a_letter_read_as_a_digit() -> None:
    probs = frames(PLATE, spelled("ABC-1") + [{"O": 0.6, "0": 0.3}, ""] + spelled("5"))
    assert greedy_decode(probs, PLATE, BLANK).text == "ABC-1O5"
    assert beam_decode(probs, PLATE, BLANK, constraint=TextConstraint.from_pattern(r"[A-Z]{3}-\d{3}")).text == (
        "ABC-105"
    )


def test_lexicon_constraint_exact_and_by_beam() -> None:
    probs = frames(PLATE, spelled("ST") + [{"Q": 0.5, "O": 0.4}, ""] + spelled("P"))
    assert greedy_decode(probs, PLATE, BLANK).text == "STQP"
    small = TextConstraint.from_lexicon(["STOP", "SHOP", "SLOW", "SPOT", "ST0P!"])  # '!' not in the alphabet
    r = beam_decode(probs, PLATE, BLANK, constraint=small)
    assert r.text == "STOP"
    assert r.char_confidences == pytest.approx((0.9, 0.9, 0.4, 0.9))
    words = ["".join(w) for w in itertools.product("STOPQ", repeat=5)][: EXACT_LEXICON_LIMIT + 200] + ["STOP"]
    big = TextConstraint.from_lexicon(words)
    assert len(big.words or ()) > EXACT_LEXICON_LIMIT
    assert beam_decode(probs, PLATE, BLANK, constraint=big).text == "STOP"


def test_no_allowed_reading_returns_the_best_path_with_zero_confidence() -> None:
    probs = frames(PLATE, spelled("ABC"))
    r = beam_decode(probs, PLATE, BLANK, constraint=TextConstraint.from_pattern(r"[0-9]{3}"))
    assert r.text.isdigit() and 0.0 < r.confidence < 1e-6  # allowed, however unlikely: the confidence says so
    probs[:, [PLATE.index(c) for c in "0123456789XYZ"]] = 0.0  # now nothing allowed is possible
    probs /= probs.sum(axis=1, keepdims=True)
    for constraint in (TextConstraint.from_pattern(r"[0-9]{3}"), TextConstraint.from_lexicon(["XYZ"])):
        r = beam_decode(probs, PLATE, BLANK, constraint=constraint)
        assert (r.text, r.confidence) == ("ABC", 0.0)
        assert r.char_confidences == pytest.approx([probs[:, PLATE.index(c)].max() for c in "ABC"])


def test_text_constraint_accepts_and_may_extend() -> None:
    plate = TextConstraint.from_pattern(r"[A-Z]{3}-[0-9]{3}")
    assert plate.pattern == r"[A-Z]{3}-[0-9]{3}" and plate.words is None
    assert plate.accepts("ABC-123") and not plate.accepts("ABC-12") and not plate.accepts("ABC-1234")
    assert all(plate.may_extend(p) for p in ("", "A", "ABC-", "ABC-123"))
    assert not plate.may_extend("AB1") and not plate.may_extend("ABC-1234")
    lex = TextConstraint.from_lexicon(["GO", "STOP"])
    assert lex.words == frozenset({"GO", "STOP"}) and lex.pattern is None
    assert lex.accepts("GO") and not lex.accepts("G") and not lex.accepts("STOPS")
    assert lex.may_extend("") and lex.may_extend("ST") and lex.may_extend("STOP") and not lex.may_extend("SO")
    with pytest.raises(ValueError, match="pattern"):
        TextConstraint.from_pattern("[A-")
    with pytest.raises(ValueError, match="lexicon"):
        TextConstraint.from_lexicon([])
    with pytest.raises(ValueError, match="exactly one"):
        TextConstraint()


def test_sequence_probability_rejects_unknown_characters() -> None:
    with pytest.raises(ValueError, match="outside the alphabet"):
        sequence_probability(frames("ab", ["a"]), "c", "ab", 2)
    assert sequence_probability(frames("ab", ["a"]), "aa", "ab", 2) == 0.0  # one frame cannot hold "aa"
    assert math.isclose(sequence_probability(frames("ab", ["a"]), "a", "ab", 2), 0.9)

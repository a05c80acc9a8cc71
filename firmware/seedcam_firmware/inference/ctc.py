"""CTC decoding of OCR model outputs: best path, prefix beam search, constrained readings.

An OCR model emits ``probs`` of shape ``[T, K]`` (or ``[1, T, K]``): per time
step, softmax probabilities over the ``K = len(alphabet) + 1`` classes, one of
which (``blank_index``; our models use the last) is the CTC blank. Class ``i``
stands for ``alphabet[i]`` below the blank and ``alphabet[i - 1]`` above it.

Confidences, the same for every decoder here:

* a character's confidence is the highest probability the model gives that
  character over the frames aligned to it (for the best-path text these are
  the frames of its run; otherwise the most likely alignment of the text is
  used);
* a reading's ``confidence`` is the product of its character confidences, and
  0.0 for an empty reading: "no text" carries no confidence;
* a constrained decode that finds no allowed reading returns the unconstrained
  best-path text with ``confidence`` 0.0, so callers that keep readings above a
  threshold drop it, and logs can still show what the model saw.

:func:`sequence_probability` gives the CTC probability of a text (the sum over
all its alignments), the quantity beam search maximises.

Example::

    plate = TextConstraint.from_pattern(r"[A-Z]{3}-[0-9]{3}")
    reading = beam_decode(probs, ALPHABET, blank_index=len(ALPHABET), constraint=plate)
    reading.text, reading.confidence
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import regex

__all__ = [
    "EXACT_LEXICON_LIMIT",
    "ConfidenceCalibration",
    "TextConstraint",
    "TextReading",
    "beam_decode",
    "greedy_decode",
    "sequence_probability",
]

log = logging.getLogger(__name__)

#: lexicons up to this size are decoded exactly (every word scored with the CTC forward algorithm)
EXACT_LEXICON_LIMIT = 1000

_NEG = -math.inf


@dataclass(frozen=True)
class TextReading:
    """One decoded line of text.

    Attributes:
        text: the reading (may be empty).
        confidence: product of ``char_confidences``; 0.0 for an empty reading or
            when a constraint found no allowed reading (see the module docstring).
        char_confidences: one per character of ``text``.
    """

    text: str
    confidence: float
    char_confidences: tuple[float, ...]


@dataclass(frozen=True)
class ConfidenceCalibration:
    """Maps a reading's raw confidence (the product of its character maxima) to the probability
    that the reading is right: ``sigmoid(a * ln(raw) + b)`` (Platt scaling on the log), fitted
    by the tools on held-out crops and stored in the OCR manifest's ``decoder.confidence_calibration``.
    """

    a: float
    b: float

    def __call__(self, raw: float) -> float:
        """The calibrated confidence of a raw one (0 stays 0)."""
        if raw <= 0.0:
            return 0.0
        z = self.a * math.log(raw) + self.b
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


class TextConstraint:
    """The texts a reading may take: a regular expression (full match) or a lexicon.

    Build one with :meth:`from_pattern` or :meth:`from_lexicon`.
    """

    def __init__(self, *, pattern: str | None = None, words: Iterable[str] | None = None) -> None:
        if (pattern is None) == (words is None):
            raise ValueError("give exactly one of pattern and words")
        self._regex: regex.Pattern[str] | None = None
        self._words: frozenset[str] | None = None
        self._prefixes: frozenset[str] = frozenset()
        if pattern is not None:
            try:
                self._regex = regex.compile(pattern)
            except regex.error as exc:
                raise ValueError(f"bad text pattern {pattern!r}: {exc}") from exc
            # bounded: a long-running decoder meets many prefixes
            self._partial = functools.lru_cache(maxsize=8192)(self._partial_match)
        else:
            assert words is not None
            ws = [words] if isinstance(words, str) else list(words)
            if not ws or not all(isinstance(w, str) for w in ws):
                raise ValueError("a lexicon must be a non-empty list of strings")
            self._words = frozenset(ws)
            self._prefixes = frozenset(w[:i] for w in self._words for i in range(len(w) + 1))

    @classmethod
    def from_pattern(cls, pattern: str) -> TextConstraint:
        """Readings must match ``pattern`` in full (``regex`` module syntax).

        Raises:
            ValueError: the pattern does not compile.
        """
        return cls(pattern=pattern)

    @classmethod
    def from_lexicon(cls, words: Iterable[str]) -> TextConstraint:
        """Readings must be one of ``words``.

        Raises:
            ValueError: no words, or not strings.
        """
        return cls(words=words)

    @property
    def pattern(self) -> str | None:
        """The regular expression, or None for a lexicon."""
        return self._regex.pattern if self._regex is not None else None

    @property
    def words(self) -> frozenset[str] | None:
        """The lexicon, or None for a pattern."""
        return self._words

    def _partial_match(self, prefix: str) -> bool:
        assert self._regex is not None
        return self._regex.fullmatch(prefix, partial=True) is not None

    def accepts(self, text: str) -> bool:
        """True when ``text`` is an allowed reading."""
        if self._regex is not None:
            return self._regex.fullmatch(text) is not None
        assert self._words is not None
        return text in self._words

    def may_extend(self, prefix: str) -> bool:
        """True when some allowed reading starts with ``prefix`` (or is ``prefix``)."""
        if self._regex is not None:
            return self._partial(prefix)
        return prefix in self._prefixes

    def __repr__(self) -> str:
        if self._regex is not None:
            return f"TextConstraint.from_pattern({self._regex.pattern!r})"
        return f"TextConstraint.from_lexicon(<{len(self._words or ())} words>)"


# --- input checks and shared pieces -----------------------------------------------------------------------------


def _prepare(probs: np.ndarray, alphabet: Sequence[str], blank_index: int) -> tuple[np.ndarray, list[str], int]:
    """``probs`` as float64 ``[T, K]``, class index -> character ('' for the blank), the blank index."""
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim == 3 and p.shape[0] == 1:
        p = p[0]
    if p.ndim != 2:
        raise ValueError(f"probs must be [T, K] or [1, T, K], got shape {list(np.shape(probs))}")
    chars = list(alphabet)
    if not all(isinstance(c, str) and len(c) == 1 for c in chars):
        raise ValueError("the alphabet must be single characters")
    if len(set(chars)) != len(chars):
        raise ValueError("the alphabet has repeated characters")
    k = p.shape[1]
    if k != len(chars) + 1:
        raise ValueError(f"probs have {k} classes, expected len(alphabet) + 1 = {len(chars) + 1}")
    if not -k <= blank_index < k:
        raise ValueError(f"blank_index {blank_index} out of range for {k} classes")
    blank = blank_index % k
    if not np.isfinite(p).all():
        raise ValueError("probs contain NaN or infinity")
    tokens = chars[:blank] + [""] + chars[blank:]
    return p, tokens, blank


def _log(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(p)


def _to_indices(text: str, tokens: list[str], blank: int) -> list[int] | None:
    """Class indices of ``text``'s characters, or None when one is not in the alphabet."""
    index = {c: i for i, c in enumerate(tokens) if i != blank}
    try:
        return [index[c] for c in text]
    except KeyError:
        return None


def _reading(text: str, confs: Sequence[float]) -> TextReading:
    c = tuple(float(v) for v in confs)
    return TextReading(text, float(np.prod(c)) if text else 0.0, c)


def _log_likelihoods(lp: np.ndarray, seqs: Sequence[Sequence[int]], blank: int) -> np.ndarray:
    """CTC forward algorithm, batched over label sequences: ``log P(seq | x)`` for each."""
    t_len = lp.shape[0]
    lens = np.array([len(s) for s in seqs], dtype=np.intp)
    if t_len == 0:
        return np.where(lens == 0, 0.0, _NEG)
    w, s_len = len(seqs), 2 * int(lens.max(initial=0)) + 1
    ext = np.full((w, s_len), blank, dtype=np.intp)  # blank, l1, blank, l2, ..., blank (padded with blanks)
    for i, seq in enumerate(seqs):
        ext[i, 1 : 2 * len(seq) : 2] = seq
    skip = np.zeros((w, s_len), dtype=bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    alpha = np.full((w, s_len), _NEG)
    alpha[:, 0] = lp[0, blank]
    if s_len > 1:
        alpha[:, 1] = np.where(lens > 0, lp[0, ext[:, 1]], _NEG)
    # states beyond a sequence's end never feed its own states (transitions only go forward), so no masking
    neg1, neg2 = np.full((w, 1), _NEG), np.full((w, 2), _NEG)
    for t in range(1, t_len):
        a1 = np.concatenate([neg1, alpha[:, :-1]], axis=1)
        a2 = np.where(skip, np.concatenate([neg2, alpha[:, :-2]], axis=1)[:, :s_len], _NEG)
        alpha = np.logaddexp(np.logaddexp(alpha, a1), a2) + lp[t][ext]
    rows = np.arange(w)
    end = 2 * lens
    last_char = np.where(lens > 0, alpha[rows, np.maximum(end - 1, 0)], _NEG)
    return np.logaddexp(alpha[rows, end], last_char)


def _char_confidences(p: np.ndarray, lp: np.ndarray, seq: Sequence[int], blank: int) -> list[float] | None:
    """Per character, its highest probability over the frames of the most likely alignment (None: no alignment)."""
    if not seq:
        return []
    t_len = lp.shape[0]
    if t_len == 0:
        return None
    s_len = 2 * len(seq) + 1
    ext = np.full(s_len, blank, dtype=np.intp)
    ext[1::2] = seq
    skip = np.zeros(s_len, dtype=bool)
    skip[2:] = (ext[2:] != blank) & (ext[2:] != ext[:-2])
    delta = np.full(s_len, _NEG)
    delta[0], delta[1] = lp[0, blank], lp[0, ext[1]]
    back = np.zeros((t_len, s_len), dtype=np.int8)  # how far back the best predecessor state is: 0, 1 or 2
    for t in range(1, t_len):
        cand = np.full((3, s_len), _NEG)
        cand[0] = delta
        cand[1, 1:] = delta[:-1]
        cand[2, 2:] = np.where(skip[2:], delta[:-2], _NEG)
        back[t] = np.argmax(cand, axis=0)
        delta = cand[back[t], np.arange(s_len)] + lp[t, ext]
    s = s_len - 1 if delta[s_len - 1] >= delta[s_len - 2] else s_len - 2
    if delta[s] == _NEG:
        return None
    best = [0.0] * len(seq)
    for t in range(t_len - 1, -1, -1):
        if s % 2:
            j = s // 2
            best[j] = max(best[j], float(p[t, seq[j]]))
        s -= int(back[t, s])
    return best


# --- decoders -----------------------------------------------------------------------------------------------------


def greedy_decode(probs: np.ndarray, alphabet: Sequence[str], blank_index: int) -> TextReading:
    """Best-path decoding: the most likely class per frame, repeats collapsed, blanks dropped.

    Args:
        probs: ``[T, K]`` (or ``[1, T, K]``) softmax probabilities.
        alphabet: the ``K - 1`` characters (a string, or a sequence of 1-character strings).
        blank_index: the blank's class index (negative counts from the end).

    Raises:
        ValueError: shapes disagree with the alphabet, bad blank index, non-finite probs.
    """
    p, tokens, blank = _prepare(probs, alphabet, blank_index)
    best = np.argmax(p, axis=1)
    text: list[str] = []
    confs: list[float] = []
    prev = -1
    for t, c in enumerate(best.tolist()):
        if c != blank:
            if c == prev:
                confs[-1] = max(confs[-1], float(p[t, c]))
            else:
                text.append(tokens[c])
                confs.append(float(p[t, c]))
        prev = c
    return _reading("".join(text), confs)


def sequence_probability(probs: np.ndarray, text: str, alphabet: Sequence[str], blank_index: int) -> float:
    """``P(text | probs)`` under CTC: the sum over all alignments (forward algorithm).

    Raises:
        ValueError: as :func:`greedy_decode`; also a character of ``text`` not in the alphabet.
    """
    p, tokens, blank = _prepare(probs, alphabet, blank_index)
    seq = _to_indices(text, tokens, blank)
    if seq is None:
        raise ValueError(f"{text!r} has characters outside the alphabet")
    return float(np.exp(_log_likelihoods(_log(p), [seq], blank)[0]))


def _lexicon_decode(
    p: np.ndarray, lp: np.ndarray, tokens: list[str], blank: int, words: frozenset[str]
) -> tuple[str, list[int]] | None:
    """The lexicon word of highest CTC probability (None: no word is possible)."""
    cands = []
    for word in sorted(words):
        seq = _to_indices(word, tokens, blank)
        if seq is not None:
            cands.append((word, seq))
    if not cands:
        log.debug("no lexicon word is spelt with the model's alphabet")
        return None
    ll = _log_likelihoods(lp, [seq for _, seq in cands], blank)
    i = int(np.argmax(ll))
    return None if ll[i] == _NEG else cands[i]


def _lse(a: float, b: float) -> float:
    if a == _NEG:
        return b
    if b == _NEG:
        return a
    hi, lo = (a, b) if a > b else (b, a)
    return hi + math.log1p(math.exp(lo - hi))


def beam_decode(
    probs: np.ndarray,
    alphabet: Sequence[str],
    blank_index: int,
    beam_width: int = 8,
    constraint: TextConstraint | None = None,
    *,
    min_char_prob: float = 1e-4,
) -> TextReading:
    """CTC prefix beam search (log space), optionally restricted to a :class:`TextConstraint`.

    Each prefix keeps two probabilities, of the alignments ending in a blank and
    ending in its last character, so that a repeated character is only emitted
    across a blank and ``"aa"`` and ``"a"`` are told apart. With a constraint,
    only prefixes it may extend survive, and the best beam it accepts wins. A
    lexicon of at most :data:`EXACT_LEXICON_LIMIT` words is decoded exactly
    instead: every word is scored with the forward algorithm.

    Args:
        probs: ``[T, K]`` (or ``[1, T, K]``) softmax probabilities.
        alphabet: the ``K - 1`` characters.
        blank_index: the blank's class index (negative counts from the end).
        beam_width: prefixes kept per frame.
        constraint: allowed readings, or None.
        min_char_prob: characters below this probability in a frame are not
            tried as extensions there (speed; 0 tries all).

    Returns:
        The reading; see the module docstring for the confidence and for what
        comes back when no reading satisfies the constraint.

    Raises:
        ValueError: as :func:`greedy_decode`; ``beam_width < 1`` or ``min_char_prob`` outside [0, 1].
    """
    if beam_width < 1:
        raise ValueError(f"beam_width must be >= 1, got {beam_width}")
    if not 0.0 <= min_char_prob <= 1.0:
        raise ValueError(f"min_char_prob must be within [0, 1], got {min_char_prob}")
    p, tokens, blank = _prepare(probs, alphabet, blank_index)
    lp = _log(p)
    if p.shape[0] == 0:
        return _reading("", [])
    best: tuple[str, list[int]] | None = None
    words = constraint.words if constraint is not None else None
    if words is not None and len(words) <= EXACT_LEXICON_LIMIT:
        best = _lexicon_decode(p, lp, tokens, blank, words)
    else:
        ranked = _prefix_beams(p, lp, tokens, blank, beam_width, constraint, min_char_prob)
        for prefix in ranked:
            text = "".join(tokens[c] for c in prefix)
            if constraint is None or constraint.accepts(text):
                best = (text, list(prefix))
                break
    if best is None:
        log.debug("no reading satisfies %r; returning the best path with confidence 0", constraint)
        fallback = greedy_decode(p, tokens[:blank] + tokens[blank + 1 :], blank)
        return TextReading(fallback.text, 0.0, fallback.char_confidences)
    text, seq = best
    confs = _char_confidences(p, lp, seq, blank)
    assert confs is not None  # a text with nonzero probability has an alignment
    return _reading(text, confs)


def _prefix_beams(
    p: np.ndarray,
    lp: np.ndarray,
    tokens: list[str],
    blank: int,
    beam_width: int,
    constraint: TextConstraint | None,
    min_char_prob: float,
) -> list[tuple[int, ...]]:
    """The surviving prefixes after the last frame, most probable first."""
    beams: dict[tuple[int, ...], tuple[float, float]] = {(): (0.0, _NEG)}  # prefix -> (log P blank-end, non-blank)
    texts: dict[tuple[int, ...], str] = {(): ""}
    for t in range(p.shape[0]):
        row = lp[t].tolist()
        cands = [c for c in np.flatnonzero(p[t] >= min_char_prob).tolist() if c != blank]
        nxt: dict[tuple[int, ...], list[float]] = {}
        for prefix, (pb, pnb) in beams.items():
            total = _lse(pb, pnb)
            entry = nxt.setdefault(prefix, [_NEG, _NEG])
            entry[0] = _lse(entry[0], total + row[blank])
            last = prefix[-1] if prefix else -1
            if prefix:  # the last character goes on, without a blank in between
                entry[1] = _lse(entry[1], pnb + row[last])
            for c in cands:
                new = prefix + (c,)
                if constraint is not None:
                    text = texts.get(new)
                    if text is None:
                        text = texts[new] = texts[prefix] + tokens[c]
                    if not constraint.may_extend(text):
                        continue
                ext = nxt.setdefault(new, [_NEG, _NEG])
                # a repeat of the last character needs a blank in between: only the blank-ending paths extend
                ext[1] = _lse(ext[1], (pb if c == last else total) + row[c])
        ranked = sorted(nxt.items(), key=lambda kv: _lse(kv[1][0], kv[1][1]), reverse=True)
        beams = {k: (v[0], v[1]) for k, v in ranked[:beam_width] if _lse(v[0], v[1]) > _NEG}
        if constraint is not None:
            texts = {k: texts[k] for k in beams}
        if not beams:
            return []
    return list(beams)

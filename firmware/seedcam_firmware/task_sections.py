"""The config sections of the built-in tasks: ``[detect]``, ``[ocr]``, ``[classify]``.

Each is named by its task's line in :mod:`seedcam_firmware.task_catalog`, which
makes it a section of :class:`~seedcam_firmware.config.FirmwareConfig`. They live
apart from the task modules because the configuration is built from them when
it is imported, before any model code is (this module imports only the key rules).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

import regex

from seedcam_firmware.config_schema import Section, setting

__all__ = ["MAX_PATTERN_CHARS", "ClassifyConfig", "DetectConfig", "OcrConfig", "check_pattern"]

#: The longest ``ocr.pattern``: a plate's format, not a program.
MAX_PATTERN_CHARS = 256
_MAX_PATTERN_DEPTH = 16  # nested groups
_MAX_REPEAT = 64  # the largest {m,n} count (a reading is a few dozen characters)
_REPEAT_RE = re.compile(r"\{\s*(\d*)\s*(?:,\s*(\d*)\s*)?\}")


def check_pattern(pattern: str) -> str | None:
    """Check ``ocr.pattern``: short, shallow, small repeat counts, and it compiles.

    The bounds come before the compiler sees it, so a hostile pattern costs no time or memory
    (deep nesting would exhaust the compiler's recursion, ``a{1000000000}`` its memory).

    Returns:
        None when valid, else an error phrase (short: it does not quote the pattern).
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"must be at most {MAX_PATTERN_CHARS} characters (got {len(pattern)})"
    depth = deepest = 0
    escaped = False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth -= 1
    if deepest > _MAX_PATTERN_DEPTH:
        return f"must not nest groups more than {_MAX_PATTERN_DEPTH} deep"
    for match in _REPEAT_RE.finditer(pattern):
        if any(n and int(n) > _MAX_REPEAT for n in match.groups()):
            return f"must not repeat more than {_MAX_REPEAT} times ({match.group(0)})"
    try:
        regex.compile(pattern)
    except (regex.error, RecursionError, OverflowError, MemoryError, ValueError) as exc:
        return f"is not a valid regular expression ({str(exc)[:80]})"
    return None


@dataclass(frozen=True)
class DetectConfig(Section):
    """``[detect]``: the object detector's post-processing, all live (next frame).

    These values are what runs: a bundle's manifest may recommend thresholds of
    its own (logged at load when they differ), but the config decides.
    """

    section_name: ClassVar[str] = "detect"
    score_threshold: float = setting(
        0.5, lo=0.0, hi=1.0, live=True, host="yes", doc="drop detections scoring below this"
    )
    iou_threshold: float = setting(
        0.45, lo=0.0, hi=1.0, live=True, host="yes", doc="non-maximum suppression overlap (IoU) threshold"
    )
    max_detections: int = setting(20, lo=1, hi=100, live=True, host="yes", doc="most detections reported per frame")


@dataclass(frozen=True)
class OcrConfig(Section):
    """``[ocr]``: reading the text of detected plates, all live (next frame).

    ``pattern`` (a regular expression over the model's alphabet) or ``lexicon``
    (the only words allowed) constrain the reading; they are checked against the
    OCR model's alphabet when set, so an invalid one is refused then.
    """

    section_name: ClassVar[str] = "ocr"
    plate_labels: tuple[str, ...] = setting(
        ("plate",), live=True, host="yes", doc="detection labels whose box is cropped and read"
    )
    max_plates: int = setting(
        4, lo=1, hi=16, live=True, host="yes", doc="most plates read per frame (highest scores first)"
    )
    min_confidence: float = setting(
        0.5, lo=0.0, hi=1.0, live=True, host="yes", doc="drop readings less confident than this"
    )
    plate_min_score: float = setting(
        0.3,
        lo=0.0,
        hi=1.0,
        live=True,
        host="yes",
        doc="read plates the detector scores at least this, also under detect.score_threshold (min_confidence then "
        "decides; such plates are not reported as detections)",
    )
    beam_width: int = setting(
        1, lo=1, hi=64, live=True, host="yes", doc="1 = greedy CTC decoding; more = beam search of that width"
    )
    views: int = setting(
        1,
        lo=1,
        hi=2,
        live=True,
        host="yes",
        doc="crops read per plate: 1 = the plate found in its box and rectified; 2 = also the box as it is, "
        "the more confident reading kept (on our randomized world 3 points more plates read, but it read the "
        "demo's AGV-830 as AGV-B30 at 98 %)",
    )
    pattern: str = setting(
        "",
        live=True,
        host="yes",
        check=check_pattern,
        doc=f"regular expression a reading must match (at most {MAX_PATTERN_CHARS} characters); empty = any",
    )
    lexicon: tuple[str, ...] = setting((), live=True, host="yes", doc="the only readings allowed; empty = any")


@dataclass(frozen=True)
class ClassifyConfig(Section):
    """``[classify]``: the scene classifier's output, live (next frame)."""

    section_name: ClassVar[str] = "classify"
    top_k: int = setting(3, lo=1, hi=20, live=True, host="yes", doc="classes reported per frame, best first")

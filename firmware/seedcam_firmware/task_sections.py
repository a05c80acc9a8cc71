"""The config sections of the built-in tasks: ``[detect]``, ``[ocr]``, ``[classify]``.

Each is named by its task's line in :mod:`seedcam_firmware.task_catalog`, which
makes it a section of :class:`~seedcam_firmware.config.FirmwareConfig`. They live
apart from the task modules because the configuration is built from them when
it is imported, before any model code is (this module imports only the key rules).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from seedcam_firmware.config_schema import Section, setting

__all__ = ["ClassifyConfig", "DetectConfig", "OcrConfig"]


@dataclass(frozen=True)
class DetectConfig(Section):
    """``[detect]``: the object detector's post-processing, all live (next frame).

    These values are what runs: a bundle's manifest may recommend thresholds of
    its own (logged at load when they differ), but the config decides.
    """

    section_name: ClassVar[str] = "detect"
    score_threshold: float = setting(0.5, lo=0.0, hi=1.0, live=True, doc="drop detections scoring below this")
    iou_threshold: float = setting(
        0.45, lo=0.0, hi=1.0, live=True, doc="non-maximum suppression overlap (IoU) threshold"
    )
    max_detections: int = setting(20, lo=1, hi=100, live=True, doc="most detections reported per frame")


@dataclass(frozen=True)
class OcrConfig(Section):
    """``[ocr]``: reading the text of detected plates, all live (next frame).

    ``pattern`` (a regular expression over the model's alphabet) or ``lexicon``
    (the only words allowed) constrain the reading; they are checked against the
    OCR model's alphabet when set, so an invalid one is refused then.
    """

    section_name: ClassVar[str] = "ocr"
    plate_labels: tuple[str, ...] = setting(("plate",), live=True, doc="detection labels whose box is cropped and read")
    max_plates: int = setting(4, lo=1, hi=16, live=True, doc="most plates read per frame (highest scores first)")
    min_confidence: float = setting(0.5, lo=0.0, hi=1.0, live=True, doc="drop readings less confident than this")
    beam_width: int = setting(
        1, lo=1, hi=64, live=True, doc="1 = greedy CTC decoding; more = beam search of that width"
    )
    pattern: str = setting("", live=True, doc="regular expression a reading must match; empty = any")
    lexicon: tuple[str, ...] = setting((), live=True, doc="the only readings allowed; empty = any")


@dataclass(frozen=True)
class ClassifyConfig(Section):
    """``[classify]``: the scene classifier's output, live (next frame)."""

    section_name: ClassVar[str] = "classify"
    top_k: int = setting(3, lo=1, hi=20, live=True, doc="classes reported per frame, best first")

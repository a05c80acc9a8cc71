"""Checks of a bundle's decoder section against its outputs, for the OCR and classifier tasks.

The runtime (:class:`~.runtime.Model`) checks the ``.tflite`` file against the
manifest (TFLite identifier, input shape, output names and shapes); the
detection decoders check their own layouts
(:func:`~.detection.make_detection_decoder`). What is left is here: does the
manifest's ``decoder`` section describe outputs the model has? Each check
raises :class:`BundleError` naming the problem, so a bad bundle is refused at
load with a message a user can act on, instead of failing on every frame.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import BundleError
from .classify import ACTIVATIONS
from .ctc import ConfidenceCalibration
from .manifest import ModelManifest

__all__ = ["ClassifierLayout", "CtcLayout", "classifier_layout", "ctc_layout", "expand_alphabet"]

_CTC_KEYS = frozenset(
    {"type", "alphabet", "blank_index", "time_steps", "output_name", "confidence_calibration", "min_plate_width_px"}
)
_CLASSIFIER_TYPES = ("softmax", "sigmoid")
_CLASSIFIER_KEYS = frozenset({"type", "labels", "top_k", "activation", "output_name"})


@dataclass(frozen=True)
class CtcLayout:
    """A checked CTC text-recognition head.

    Attributes:
        output: the output tensor holding ``[1, T, K]`` per-step probabilities.
        steps: ``T``, the time steps.
        alphabet: the ``K - 1`` characters, in class order without the blank.
        blank_index: the blank's class index (0..K-1).
        calibration: maps raw reading confidences to calibrated ones (None: raw confidences).
        min_plate_width_px: plates narrower than this (frame pixels) are too small for the model
            to read and are not read at all (0: no limit).
    """

    output: str
    steps: int
    alphabet: str
    blank_index: int
    calibration: ConfidenceCalibration | None = None
    min_plate_width_px: float = 0.0


@dataclass(frozen=True)
class ClassifierLayout:
    """A checked classifier head.

    Attributes:
        output: the output tensor holding ``[1, C]`` scores.
        labels: the ``C`` class names.
        activation: applied to the raw output before ranking (see :data:`~.classify.ACTIVATIONS`).
        top_k: how many classes the bundle suggests reporting.
    """

    output: str
    labels: tuple[str, ...]
    activation: str
    top_k: int


def expand_alphabet(spec: str | Sequence[str], classes: int) -> str:
    """The characters of a manifest ``alphabet`` with ``classes - 1`` entries.

    ``spec`` is taken literally when it has ``classes - 1`` characters (or is a
    list of that many single characters). Otherwise ranges such as ``0-9`` and
    ``A-Z`` are expanded (a ``-`` that does not sit between two characters in
    ascending order stands for itself), so ``"0-9A-Z-"`` is the 37 characters
    ``0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-``.

    Raises:
        BundleError: neither reading gives ``classes - 1`` distinct single characters.
    """
    if isinstance(spec, str):
        literal = spec
    elif all(isinstance(c, str) and len(c) == 1 for c in spec):
        literal = "".join(spec)
    else:
        raise BundleError("decoder 'alphabet' must be a string or a list of single characters")
    want = classes - 1
    candidates = [literal]
    if isinstance(spec, str):
        candidates.append(_expand_ranges(spec))
    for chars in candidates:
        if len(chars) == want and len(set(chars)) == len(chars):
            return chars
    shown = f"{literal!r}" + (f" (ranges expanded: {len(candidates[-1])} characters)" if len(candidates) > 1 else "")
    raise BundleError(
        f"decoder 'alphabet' {shown} has {len(literal)} characters, but the output's {classes} classes "
        f"need {want} distinct characters plus the blank"
    )


def _expand_ranges(spec: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-" and spec[i] < spec[i + 2]:
            out.extend(chr(c) for c in range(ord(spec[i]), ord(spec[i + 2]) + 1))
            i += 3
        else:
            out.append(spec[i])
            i += 1
    return "".join(out)


def _pick_output(manifest: ModelManifest, decoder: Mapping[str, Any], what: str) -> str:
    """The output the head reads: ``decoder.output_name``, the only output, or ``probs``."""
    outputs = manifest.outputs
    name = decoder.get("output_name")
    if name is not None:
        if name not in outputs:
            raise BundleError(f"{what}: decoder output_name {name!r} is not among the outputs {sorted(outputs)}")
        return str(name)
    if len(outputs) == 1:
        return next(iter(outputs))
    if "probs" in outputs:
        return "probs"
    raise BundleError(f"{what}: the model has outputs {sorted(outputs)}; name the one to read in decoder output_name")


def _unknown_keys(decoder: Mapping[str, Any], allowed: frozenset[str], what: str) -> None:
    unknown = sorted(set(decoder) - allowed)
    if unknown:
        raise BundleError(f"{what}: unknown decoder keys {unknown}; allowed: {sorted(allowed)}")


def ctc_layout(manifest: ModelManifest) -> CtcLayout:
    """Check an OCR bundle: ``decoder`` ``{"type": "ctc", "alphabet", "blank_index"}`` vs its output.

    Optional keys: ``time_steps`` (checked against ``T``), ``output_name``,
    ``confidence_calibration`` (``{"method": "platt_log", "a", "b"}``, see
    :class:`~seedcam_firmware.inference.ctc.ConfidenceCalibration`), ``min_plate_width_px``.

    Raises:
        BundleError: another decoder type, an unknown key, an output that is not
            ``[1, T, K]`` (or whose ``T`` is not ``time_steps``), an alphabet that does
            not give ``K - 1`` characters, or a blank index outside the ``K`` classes.
    """
    what = f"OCR bundle {manifest.id}"
    decoder = manifest.decoder
    if decoder.get("type") != "ctc":
        raise BundleError(f"{what}: decoder type must be 'ctc', got {decoder.get('type')!r}")
    _unknown_keys(decoder, _CTC_KEYS, what)
    output = _pick_output(manifest, decoder, what)
    shape = manifest.outputs[output]
    if len(shape) != 3 or shape[0] != 1 or shape[1] < 1 or shape[2] < 2:
        raise BundleError(
            f"{what}: output {output!r} must be [1, T, K] per-step class probabilities, got {list(shape)}"
        )
    classes = shape[2]
    if "time_steps" in decoder and decoder["time_steps"] != shape[1]:
        raise BundleError(
            f"{what}: decoder time_steps {decoder['time_steps']!r} but output {output!r} has {shape[1]} steps"
        )
    if "alphabet" not in decoder:
        raise BundleError(f"{what}: decoder lacks 'alphabet'")
    alphabet = expand_alphabet(decoder["alphabet"], classes)
    blank = decoder.get("blank_index", classes - 1)
    if isinstance(blank, bool) or not isinstance(blank, int) or not -classes <= blank < classes:
        raise BundleError(f"{what}: decoder blank_index {blank!r} is not a class index of the {classes} classes")
    return CtcLayout(
        output=output,
        steps=shape[1],
        alphabet=alphabet,
        blank_index=blank % classes,
        calibration=_calibration(decoder.get("confidence_calibration"), what),
        min_plate_width_px=_non_negative(decoder.get("min_plate_width_px", 0.0), "min_plate_width_px", what),
    )


def _non_negative(value: Any, key: str, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1e6:
        raise BundleError(f"{what}: decoder {key} must be a number >= 0, got {value!r}")
    return float(value)


def _calibration(raw: Any, what: str) -> ConfidenceCalibration | None:
    """``{"method": "platt_log", "a": > 0, "b": finite}`` or absent."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or raw.get("method") != "platt_log" or set(raw) - {"method", "a", "b", "fitted_on"}:
        raise BundleError(
            f"{what}: decoder confidence_calibration must be {{'method': 'platt_log', 'a', 'b'}}, got {raw!r}"
        )
    a, b = (_calibration_number(raw.get(key), key, what) for key in ("a", "b"))
    if a <= 0:
        raise BundleError(
            f"{what}: decoder confidence_calibration.a must be > 0 (confidence must rise with raw), got {a}"
        )
    return ConfidenceCalibration(a, b)


def _calibration_number(v: Any, key: str, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not -1e3 < v < 1e3:
        raise BundleError(f"{what}: decoder confidence_calibration.{key} must be a finite number, got {v!r}")
    return float(v)


def classifier_layout(manifest: ModelManifest) -> ClassifierLayout:
    """Check a classifier bundle: ``decoder`` ``{"type": "softmax", "labels", "top_k"}`` vs its output.

    ``type`` is ``"softmax"`` (one class per image) or ``"sigmoid"`` (independent
    scores); ``activation`` (default ``"none"``: the output already holds scores)
    turns a model's raw logits into scores.

    Raises:
        BundleError: an unknown type, key or activation, labels that are not a
            non-empty list of strings, an output that is not ``[1, C]`` with
            ``C == len(labels)``, or a ``top_k`` that is not a positive integer.
    """
    what = f"classifier bundle {manifest.id}"
    decoder = manifest.decoder
    if decoder.get("type") not in _CLASSIFIER_TYPES:
        raise BundleError(f"{what}: decoder type must be one of {_CLASSIFIER_TYPES}, got {decoder.get('type')!r}")
    _unknown_keys(decoder, _CLASSIFIER_KEYS, what)
    labels = decoder.get("labels")
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) for x in labels):
        raise BundleError(f"{what}: decoder 'labels' must be a non-empty list of strings")
    output = _pick_output(manifest, decoder, what)
    shape = manifest.outputs[output]
    if len(shape) != 2 or shape[0] != 1:
        raise BundleError(f"{what}: output {output!r} must be [1, C] class scores, got {list(shape)}")
    if shape[1] != len(labels):
        raise BundleError(
            f"{what}: output {output!r} has {shape[1]} classes but the decoder lists {len(labels)} labels"
        )
    activation = decoder.get("activation", "none")
    if activation not in ACTIVATIONS:
        raise BundleError(f"{what}: decoder activation {activation!r} is not one of {ACTIVATIONS}")
    top_k = decoder.get("top_k", 1)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise BundleError(f"{what}: decoder top_k must be a positive integer, got {top_k!r}")
    return ClassifierLayout(output=output, labels=tuple(labels), activation=str(activation), top_k=top_k)

"""Lane adapter: a pure function from the lane model's outputs to a :class:`LaneEstimate`.

Conventions (REP-103): offset > 0 means the car is LEFT of the lane centre,
heading > 0 means the car is yawed LEFT of the lane tangent, curvature > 0 means
the lane bends LEFT. All are measured at the floor point directly below the
camera (``REFERENCE``).

Status and confidence rule, from the presence probabilities ``pl``, ``pr``
(sigmoid of the presence logits) and the manifest's ``presence_threshold`` t:

* status: ``"ok"`` if both ``pl, pr >= t``; ``"one_line"`` if exactly one is;
  ``"lost"`` otherwise.
* ``p_any = 1 - (1 - pl)(1 - pr)`` (at least one line seen), ``p_both = pl * pr``.
* heading confidence = ``p_any`` (one line fixes the heading);
* offset confidence = ``(p_any + p_both) / 2`` (one line alone gives the offset only
  through the assumed lane width, so it tops out near 0.5);
* curvature confidence = ``0.8 * p_both`` (curvature is the least certain output
  and needs both lines; it falls fastest as presence drops).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["REFERENCE", "LaneEstimate", "decode_lane"]

REFERENCE = "floor point directly below the camera; REP-103 (+y left)"
_DEFAULT_CENTRE = (0.0, 0.0, 0.0, 0.45)
_DEFAULT_SCALE = (0.15, 0.30, 1.0, 0.05)


@dataclass(frozen=True)
class LaneEstimate:
    """The decoded lane state of one frame."""

    status: str  # "ok" | "one_line" | "lost"
    offset_m: float
    heading_rad: float
    curvature_per_m: float
    lane_width_m: float
    offset_confidence: float
    heading_confidence: float
    curvature_confidence: float
    left_presence: float
    right_presence: float
    reference: str = REFERENCE


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-min(max(float(x), -60.0), 60.0)))


def _decoder_params(manifest: Any) -> Mapping[str, Any]:
    if isinstance(manifest, Mapping):
        return manifest
    return getattr(manifest, "decoder", {}) or {}


def decode_lane(outputs: Mapping[str, np.ndarray], manifest: Any) -> LaneEstimate:
    """Decode float model outputs.

    Args:
        outputs: ``"lane_state"`` (1 x 4 normalised [offset, heading, curvature,
            width]) and ``"presence"`` (1 x 2 logits [left, right]); other keys
            (the mask) are ignored.
        manifest: a :class:`~seedcam_firmware.inference.manifest.ModelManifest`
            or its decoder dict, giving ``state_centre``, ``state_scale`` and
            ``presence_threshold``.

    Raises:
        ValueError: an output is missing or has the wrong size.
    """
    dec = _decoder_params(manifest)
    try:
        state = np.asarray(outputs["lane_state"], dtype=np.float64).reshape(-1)
        pres = np.asarray(outputs["presence"], dtype=np.float64).reshape(-1)
    except KeyError as exc:
        raise ValueError(f"lane outputs lack {exc.args[0]!r}") from exc
    if state.size != 4 or pres.size != 2:
        raise ValueError(f"lane_state must have 4 values and presence 2, got {state.size} and {pres.size}")
    centre = np.asarray(dec.get("state_centre", _DEFAULT_CENTRE), dtype=np.float64)
    scale = np.asarray(dec.get("state_scale", _DEFAULT_SCALE), dtype=np.float64)
    thr = float(dec.get("presence_threshold", 0.5))
    offset, heading, curvature, width = (state * scale + centre).tolist()
    pl, pr = _sigmoid(pres[0]), _sigmoid(pres[1])
    n = int(pl >= thr) + int(pr >= thr)
    status = ("lost", "one_line", "ok")[n]
    p_any = 1.0 - (1.0 - pl) * (1.0 - pr)
    p_both = pl * pr
    return LaneEstimate(
        status=status,
        offset_m=float(offset),
        heading_rad=float(heading),
        curvature_per_m=float(curvature),
        lane_width_m=float(width),
        offset_confidence=float(0.5 * (p_any + p_both)),
        heading_confidence=float(p_any),
        curvature_confidence=float(0.8 * p_both),
        left_presence=pl,
        right_presence=pr,
    )

"""Every shipped bundle scored on our randomized world and on the independent world, into its metrics.json.

``seedcam-tools eval-worlds --models models`` runs the detector, OCR and lane bundles on
held-out frames of seed block 0 of :func:`~seedcam_tools.frames.heldout_frames` for the
``random`` (ours, widened) and ``other`` (independent, never trained on) worlds, both
precisions, and writes a ``worlds`` section into each bundle's ``metrics.json``, the
randomized world's with the assets it drew with (``assets``,
:func:`~seedcam_tools.world.world_assets_id`: the same seeds draw other scenes when the font
pool changes); ``models/REPORT.md`` shows it beside the classic held-out figure. Tests check the bars on
block 1, which no metrics file uses.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

from .frame_eval import detector_on_frames, lane_on_frames, ocr_on_frames
from .frames import heldout_frames
from .world import world_assets_id

__all__ = ["METRICS_BLOCK", "WORLD_NOTES", "evaluate_worlds", "world_text"]

log = logging.getLogger(__name__)

#: the seed block whose figures go into metrics.json (tests use other blocks)
METRICS_BLOCK = 0
WORLD_NOTES = {
    "random": "our randomized training world, held-out seeds",
    "other": "the independent evaluation world (its own renderer and assets; never trained on)",
}


def _detect(models: Path, world: str, samples: int, block: int) -> dict[str, Any]:
    out = {}
    for precision in ("float32", "int8"):
        r = detector_on_frames(models / "detect", heldout_frames(world, block, samples), precision=precision)
        out[precision] = {
            "map50": r["map50"],
            "recall": r["at_threshold"]["recall"],
            "false_positives_per_frame": r["at_threshold"]["false_positives_per_frame"],
            "objects": r["objects"],
            "difficult_objects": r["difficult_objects"],
            "ap50_per_class": r["ap50_per_class"],
        }
    return out


def _ocr(models: Path, world: str, samples: int, block: int) -> dict[str, Any]:
    out = {}
    for precision in ("float32", "int8"):
        frames = heldout_frames(world, block, samples, plate_focus=world == "random")
        r = ocr_on_frames(models / "ocr", frames, precision=precision, detect_bundle=models / "detect")
        out[precision] = {
            "given_box_line_accuracy": r["given_box"].get("line_accuracy", 0.0),
            "given_box_plates": r["given_box"]["plates"],
            "two_stage_line_accuracy": r["two_stage"]["line_accuracy"],
            "two_stage_plates": r["two_stage"]["plates"],
            "errors": r["given_box"]["errors"],
        }
    return out


def _lane(models: Path, world: str, samples: int, block: int) -> dict[str, Any]:
    out = {}
    for precision in ("float32", "int8"):
        r = lane_on_frames(models / "lane", heldout_frames(world, block, samples), precision=precision)
        out[precision] = {k: r[k] for k in ("offset_mae_m", "heading_mae_deg", "status_accuracy", "ok_samples")}
        out[precision]["status_confusion"] = r["status_confusion"]
    return out


_TASKS = {"detect": _detect, "ocr": _ocr, "lane": _lane}


def evaluate_worlds(
    models_dir: str | Path, *, samples: int = 1000, block: int = METRICS_BLOCK, tasks: tuple[str, ...] = tuple(_TASKS)
) -> dict[str, Any]:
    """Score the ``tasks`` bundles (detect, ocr, lane) of ``models_dir`` on both worlds, into their metrics.json.

    Returns ``{folder: {world: {precision: figures}}}``.

    Raises:
        ValueError: a task that is not one of detect, ocr, lane.
    """
    unknown = sorted(set(tasks) - set(_TASKS))
    if unknown:
        raise ValueError(f"eval-worlds knows the tasks {sorted(_TASKS)}, not {unknown}")
    models = Path(models_dir)
    results: dict[str, Any] = {}
    for folder, run in _TASKS.items():
        if folder not in tasks or not (models / folder / "manifest.json").is_file():
            continue
        section: dict[str, Any] = {}
        for world, note in WORLD_NOTES.items():
            log.info("%s on the %s world", folder, world)
            section[world] = {
                "note": note,
                "seed_block": block,
                "frames": samples,
                **({"assets": world_assets_id()} if world == "random" else {}),
                **run(models, world, samples, block),
            }
        path = models / folder / "metrics.json"
        metrics = json.loads(path.read_text()) if path.is_file() else {}
        metrics["worlds"] = section
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(metrics, indent=2, default=float) + "\n")
        tmp.replace(path)
        results[folder] = section
    return results


def world_text(metrics: dict[str, Any] | None, world: str, precision: str) -> str:
    """A bundle's figure on ``world`` as short text for the report, or ``"—"``."""
    entry = ((metrics or {}).get("worlds") or {}).get(world, {}).get(precision)
    if not isinstance(entry, dict):
        return "—"
    if "map50" in entry:
        return (
            f"mAP {entry['map50']:.3f}, recall {100 * entry['recall']:.0f} %, "
            f"{entry['false_positives_per_frame']:.2f} FP/frame"
        )
    if "given_box_line_accuracy" in entry:
        return (
            f"{100 * entry['given_box_line_accuracy']:.1f} % given the box, "
            f"{100 * entry['two_stage_line_accuracy']:.1f} % two-stage"
        )
    if "offset_mae_m" in entry and not math.isnan(entry["offset_mae_m"]):
        return (
            f"offset {1000 * entry['offset_mae_m']:.1f} mm, heading {entry['heading_mae_deg']:.2f}°, "
            f"status {100 * entry['status_accuracy']:.0f} %"
        )
    return "—"

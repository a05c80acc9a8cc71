"""What each factor of the randomized world costs a model: the same held-out scenes scored with and without it.

``seedcam-tools ablate-world --task lane --models models`` scores a bundle on held-out frames
of our randomized training world (:func:`~seedcam_tools.frames.heldout_frames`, ``random``)
once with every factor and once without each factor of
:data:`~seedcam_tools.world.WORLD_FACTORS` in turn. A scene without a factor is the same
scene in everything else (the world still makes every random draw), so each difference is
a paired comparison on the same seeds: a factor whose removal improves the figures much is
one the model has not learned to see through; one whose removal changes nothing is learned,
or absent from too few of the frames to count. With ``--add-one`` it also draws the world
without any of the factors (its plain part) and with each one alone added back: what a
factor costs on its own, where leaving it out shows what it costs among the others (costs
that compound are larger left out than added alone).

Only our world is ablated. The independent evaluation world is for judging models, never
for deciding what to train on; diagnosing it factor by factor would be the same as tuning to it.

Figures are those of :mod:`seedcam_tools.frame_eval`: lane offset / heading MAE on ``ok``
frames and status accuracy; detector mAP@0.5, and recall and false positives per frame at
the bundle's threshold; OCR exact text read from the true box (plates at least 44 px wide,
the OCR world's frames: one legible plate each).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seedcam_firmware.inference.manifest import load_manifest

from .frame_eval import detector_on_frames, lane_on_frames, ocr_on_frames
from .frames import heldout_frames
from .world import WORLD_FACTORS

__all__ = ["ABLATION_BLOCK", "ABLATION_TASKS", "Figure", "ablate_world", "format_ablation", "task_factors"]

#: the held-out seed block ablations use by default (0 is the metrics files', 1 the tests')
ABLATION_BLOCK = 4
ABLATION_TASKS = ("lane", "detect", "ocr")


@dataclass(frozen=True)
class Figure:
    """One figure of a task: its name in the report, its column heading, whether higher is better, how to print it."""

    name: str
    heading: str
    higher_is_better: bool
    unit: str
    scale: float = 1.0


_FIGURES: dict[str, tuple[Figure, ...]] = {
    "lane": (
        Figure("offset_mae_m", "offset MAE", False, "mm", 1000.0),
        Figure("heading_mae_deg", "heading MAE", False, "°"),
        Figure("status_accuracy", "status right", True, "%", 100.0),
    ),
    "detect": (
        Figure("map50", "mAP@0.5", True, ""),
        Figure("recall", "recall", True, "%", 100.0),
        Figure("false_positives_per_frame", "false positives", False, "/frame"),
    ),
    "ocr": (Figure("given_box_line_accuracy", "plates read (true box)", True, "%", 100.0),),
}


def task_factors(task: str) -> tuple[str, ...]:
    """The world factors that can be left out of ``task``'s frames (a detector or OCR world needs its objects).

    Raises:
        ValueError: ``task`` is not one of :data:`ABLATION_TASKS`.
    """
    if task not in ABLATION_TASKS:
        raise ValueError(f"ablate-world knows the tasks {', '.join(ABLATION_TASKS)}, not {task!r}")
    return tuple(f for f in WORLD_FACTORS if task == "lane" or f != "objects")


def _score(
    task: str, bundle: Path, block: int, frames: int, precision: str, without: tuple[str, ...]
) -> dict[str, float]:
    plate_focus = task == "ocr"
    scenes = heldout_frames("random", block, frames, plate_focus=plate_focus, without=without)
    if task == "lane":
        lane = lane_on_frames(bundle, scenes, precision=precision)
        return {f.name: float(lane[f.name]) for f in _FIGURES["lane"]}
    if task == "detect":
        det = detector_on_frames(bundle, scenes, precision=precision)
        return {
            "map50": float(det["map50"]),
            "recall": float(det["at_threshold"]["recall"]),
            "false_positives_per_frame": float(det["at_threshold"]["false_positives_per_frame"]),
        }
    ocr = ocr_on_frames(bundle, scenes, precision=precision)["given_box"]
    return {"given_box_line_accuracy": float(ocr.get("line_accuracy", 0.0))}


def _entry(figures: dict[str, float], baseline: dict[str, float]) -> dict[str, Any]:
    return {"figures": figures, "change": {k: figures[k] - baseline[k] for k in figures}}


def ablate_world(
    models_dir: str | Path,
    task: str,
    *,
    frames: int = 300,
    block: int = ABLATION_BLOCK,
    factors: Sequence[str] | None = None,
    precision: str = "int8",
    add_one: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Score ``task``'s bundle of ``models_dir`` with every world factor, then without each of ``factors``.

    Args:
        models_dir: folder of bundle folders (``<models_dir>/<task>``).
        task: ``lane``, ``detect`` or ``ocr``.
        frames: held-out frames per run (the same seeds in every run).
        block: the held-out seed block.
        factors: which factors to leave out, one at a time (default: all of :func:`task_factors`).
        precision: ``int8`` or ``float32``.
        add_one: also score the frames without all of ``factors`` but one, for each of them: what
            each factor costs on its own, where leaving one out shows what it costs among the others.
        progress: told the name of each run before it starts.

    Returns:
        ``{"task", "model", "precision", "world", "seed_block", "frames", "all": figures,
        "without": {factor: {"figures": figures, "change": figure without - figure with}},
        "without_all": the same for the frames without every chosen factor at once (two or more),
        "only": {factor: figures and change against "without_all"} (``add_one``)}``;
        figures are the raw ones of :mod:`seedcam_tools.frame_eval` (metres, fractions).

    Raises:
        ValueError: an unknown task or factor, or a factor the task's frames cannot do without.
        BundleError: the task's bundle is missing or does not verify.
    """
    allowed = task_factors(task)
    chosen = tuple(allowed if factors is None else dict.fromkeys(factors))
    refused = [f for f in chosen if f not in allowed]
    if refused:
        raise ValueError(f"the {task} frames cannot leave out {', '.join(refused)}; choose from {', '.join(allowed)}")
    bundle = Path(models_dir) / task
    manifest = load_manifest(bundle, precision=precision)
    tell = progress or (lambda _name: None)
    tell("all factors")
    baseline = _score(task, bundle, block, frames, precision, ())
    without: dict[str, Any] = {}
    for factor in chosen:
        tell(f"without {factor}")
        figures = _score(task, bundle, block, frames, precision, (factor,))
        without[factor] = _entry(figures, baseline)
    report: dict[str, Any] = {
        "task": task,
        "model": f"{manifest.id} {manifest.version}",
        "precision": precision,
        "world": "random",
        "seed_block": block,
        "frames": frames,
        "all": baseline,
        "without": without,
    }
    if len(chosen) > 1:
        tell(f"without all {len(chosen)} of them")
        figures = _score(task, bundle, block, frames, precision, chosen)
        report["without_all"] = {"factors": list(chosen), **_entry(figures, baseline)}
        if add_one:
            only: dict[str, Any] = {}
            for factor in chosen:
                tell(f"none but {factor}")
                rest = tuple(f for f in chosen if f != factor)
                only[factor] = _entry(_score(task, bundle, block, frames, precision, rest), figures)
            report["only"] = only
    return report


def _cost(report: dict[str, Any], section: str, factor: str) -> float:
    """How much ``factor`` costs the first figure in ``section`` (``without``: leaving it out
    improves it by this much; ``only``: adding it alone to the plain world worsens it by this much)."""
    first = _FIGURES[report["task"]][0]
    change = float(report[section][factor]["change"][first.name])
    cost = change if first.higher_is_better else -change
    return cost if section == "without" else -cost


def format_ablation(report: dict[str, Any]) -> str:
    """The report as a text table, the factors that cost the model most first."""
    figures = _FIGURES[report["task"]]

    def cell(figure: Figure, value: float, *, signed: bool = False) -> str:
        text = f"{value * figure.scale:+.2f}" if signed else f"{value * figure.scale:.2f}"
        return f"{text} {figure.unit}".rstrip()

    def row(name: str, entry: dict[str, Any]) -> list[str]:
        return [
            name,
            *(
                f"{cell(f, entry['figures'][f.name])} ({cell(f, entry['change'][f.name], signed=True)})"
                for f in figures
            ),
        ]

    header = ["frames", *(f.heading for f in figures)]
    rows = [["all factors", *(cell(f, report["all"][f.name]) for f in figures)]]
    rows += [
        row(f"without {name}", report["without"][name])
        for name in sorted(report["without"], key=lambda n: -_cost(report, "without", n))
    ]
    if "without_all" in report:
        rows.append(row("without all of them", report["without_all"]))
    rows += [
        row(f"none but {name}", report["only"][name])
        for name in sorted(report.get("only", {}), key=lambda n: -_cost(report, "only", n))
    ]
    widths = [max(len(cells[i]) for cells in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(text.ljust(width) for text, width in zip(cells, widths, strict=True)).rstrip()
        for cells in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    lines.append(
        f"({report['model']}, {report['precision']}, {report['frames']} held-out frames of our randomized world, "
        f"seed block {report['seed_block']}; in brackets: the change from all factors when one is left out, "
        "from none of them when only one is drawn, in the figure's unit, % as points)"
    )
    return "\n".join(lines)

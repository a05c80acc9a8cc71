"""``models/REPORT.md``: accuracy, size and latency of every model bundle, measured here and now.

Every folder under the models folder holding a ``manifest.json`` is a bundle;
nothing here knows which models exist. Per bundle and precision the report
shows the task, the held-out accuracy recorded in the bundle's
``metrics.json``, the file size, the median latency at each thread count and
the INT8 speed-up (float32 median / INT8 median at the same thread count).

Accuracy comes from ``metrics.json``: its ``summary``
(``{"metric": name, "float32": value, "int8": value}``) when present,
otherwise lane metrics (``heldout.<precision>.offset_mae_m`` and
``heading_mae_deg``). A bundle that fails to load is listed under the table
with the reason, never silently dropped.

Latency measured on other machines (a CPU with int8 dot-product instructions,
say) comes in as reference files, see :mod:`seedcam_tools.latency_reference`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import importlib.metadata
import json
import logging
import os
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from seedcam.errors import SensorError
from seedcam_firmware.inference.manifest import ModelManifest, load_manifest
from seedcam_firmware.inference.runtime import Model
from seedcam_firmware.storage.atomic import write_atomically

from .cpu import cpu_flags
from .cross_world import WORLD_NOTES, world_text
from .latency_reference import Reference, find_references, load_reference, reference_dict, render_reference
from .report_model import MachineInfo, ModelReport, PrecisionRow, Report

__all__ = [
    "MachineInfo",
    "ModelReport",
    "PrecisionRow",
    "accuracy_text",
    "build_report",
    "find_bundles",
    "machine_info",
    "median_latency_ms",
    "render_markdown",
    "write_report",
]

log = logging.getLogger(__name__)

WARMUP_INVOKES = 5
THREADS = (1, 2)
#: CPU flags (from /proc/cpuinfo) that decide how fast int8 kernels can be
INT8_CPU_FEATURES = ("avx2", "avx512_vnni", "avx_vnni", "amx_int8", "asimddp", "i8mm")
#: precisions in table order: the float32 reference row before the int8 row that shows the speed-up
ROW_ORDER = ("float32", "int8")


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    for key in ("model name", "Hardware", "Model", "cpu model"):
        for line in text.splitlines():
            name, sep, value = line.partition(":")
            if sep and name.strip() == key and value.strip():
                return value.strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def _int8_cpu_features() -> tuple[str, ...]:
    flags = cpu_flags()
    return tuple(f for f in INT8_CPU_FEATURES if f in flags)


def _runtime_version() -> str:
    for dist in ("ai-edge-litert", "tflite-runtime", "tensorflow"):
        try:
            return f"{dist} {importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return "unknown TFLite runtime"


def machine_info() -> MachineInfo:
    """Facts about this machine and the moment of measuring."""
    cores = os.cpu_count() or 1
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = cores
    try:
        load: float | None = os.getloadavg()[0]
    except OSError:  # pragma: no cover - not available
        load = None
    return MachineInfo(
        cpu=_cpu_model(),
        cores=cores,
        usable_cores=usable,
        load_average=load,
        date=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        runtime=_runtime_version(),
        python=platform.python_version(),
        cpu_features=_int8_cpu_features(),
    )


def find_bundles(models_dir: str | Path) -> list[Path]:
    """The folders directly under ``models_dir`` that hold a ``manifest.json``, sorted by name."""
    root = Path(models_dir)
    if not root.is_dir():
        raise ValueError(f"{root} is not a folder")
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / "manifest.json").is_file())


def accuracy_text(metrics: dict[str, Any] | None, precision: str) -> str:
    """The held-out accuracy of ``precision`` from a bundle's ``metrics.json`` as short text.

    ``summary`` wins (accuracy-like metrics in per cent, others as numbers); else
    lane errors from ``heldout.<precision>``; else ``"—"``.
    """
    if not metrics:
        return "—"
    summary = metrics.get("summary")
    if isinstance(summary, dict) and isinstance(summary.get(precision), int | float):
        name = str(summary.get("metric", "score"))
        value = float(summary[precision])
        if "accuracy" in name.lower() and 0.0 <= value <= 1.0:
            return f"{name} {100.0 * value:.1f} %"
        return f"{name} {value:.4g}"
    lane = metrics.get("heldout", {}).get(precision) if isinstance(metrics.get("heldout"), dict) else None
    if isinstance(lane, dict) and "offset_mae_m" in lane and "heading_mae_deg" in lane:
        offset_mm, heading_deg = 1000.0 * float(lane["offset_mae_m"]), float(lane["heading_mae_deg"])
        return f"offset MAE {offset_mm:.1f} mm, heading MAE {heading_deg:.2f}°"
    return "—"


def _golden_input(manifest: ModelManifest) -> np.ndarray:
    """The bundle's golden input, or a mid-grey frame when it has none."""
    if manifest.golden_input is not None and manifest.golden_input.is_file():
        x = np.load(manifest.golden_input).astype(np.float32)
        if tuple(x.shape) == tuple(manifest.input_shape):
            return x
        log.warning("%s: golden input has shape %s; using mid-grey", manifest.id, x.shape)
    spec = manifest.input
    return np.full(manifest.input_shape, (128.0 - spec.mean) / spec.std, np.float32)


def median_latency_ms(
    manifest: ModelManifest, *, num_threads: int, invokes: int, warmup: int = WARMUP_INVOKES
) -> float:
    """Median time of ``invokes`` :meth:`Model.invoke` calls on the golden input, after ``warmup`` calls.

    The input is quantized once beforehand, so INT8 timings hold the interpreter
    and the output dequantization, not the input conversion.

    Raises:
        ModelError: the runtime rejects the model.
        ValueError: ``invokes`` < 1.
    """
    if invokes < 1:
        raise ValueError("invokes must be >= 1")
    model = Model(manifest.file, input_shape=manifest.input_shape, outputs=manifest.outputs, num_threads=num_threads)
    x = model.quantize_input(_golden_input(manifest))
    for _ in range(warmup):
        model.invoke(x)
    times = np.empty(invokes)
    for i in range(invokes):
        t0 = time.perf_counter()
        model.invoke(x)
        times[i] = time.perf_counter() - t0
    return 1000.0 * float(np.median(times))


def _read_metrics(folder: Path) -> dict[str, Any] | None:
    path = folder / "metrics.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError) as exc:
        log.warning("%s: unreadable (%s); accuracy left out", path, exc)
        return None
    return data if isinstance(data, dict) else None


def _measure_bundle(folder: Path, invokes: int, threads: Sequence[int], progress: Any) -> ModelReport:
    raw = json.loads((folder / "manifest.json").read_text())
    files = raw.get("files") if isinstance(raw, dict) else None
    precisions = [p for p in ROW_ORDER if isinstance(files, dict) and p in files]
    if not precisions:
        raise SensorError("manifest lists no int8 or float32 file")
    metrics = _read_metrics(folder)
    rows: dict[str, PrecisionRow] = {}
    manifest = None
    for prec in precisions:
        manifest = load_manifest(folder, precision=prec)  # checks the sha256
        latency = {}
        for n in threads:
            latency[n] = median_latency_ms(manifest, num_threads=n, invokes=invokes)
            if progress is not None:
                progress.update(1)
        rows[prec] = PrecisionRow(
            precision=prec,
            file=manifest.file.name,
            size_bytes=manifest.file.stat().st_size,
            accuracy=accuracy_text(metrics, prec),
            latency_ms=latency,
            sha256=manifest.sha256,
            worlds={w: world_text(metrics, w, prec) for w in WORLD_NOTES if (metrics or {}).get("worlds")},
        )
    if "float32" in rows and "int8" in rows:
        f32, i8 = rows["float32"], rows["int8"]
        speed = {n: f32.latency_ms[n] / i8.latency_ms[n] for n in threads}
        rows["int8"] = dataclasses.replace(i8, speedup=speed)
    assert manifest is not None
    assets = ((metrics or {}).get("worlds") or {}).get("random", {}).get("assets", "")
    return ModelReport(
        folder=folder.name,
        id=manifest.id,
        task=manifest.task,
        rows=tuple(rows.values()),
        random_world_assets=assets if isinstance(assets, str) else "",
    )


def _random_world_assets_text(models: list[ModelReport]) -> str:
    """Which draw of our randomized world the bundles were scored on: one line when they agree, else each."""
    assets = {model.random_world_assets for model in models}
    if len(assets) == 1 and "" not in assets:
        return f"Our randomized world drew with {assets.pop()} for every bundle."
    each = "; ".join(
        f"`{model.id}`: {model.random_world_assets or 'not recorded (scored before the assets were)'}"
        for model in models
    )
    return (
        "Figures of our randomized world compare only between bundles scored on the same draw of it "
        f"(its fonts and images, `world_assets_id`), and these differ: {each}."
    )


def build_report(
    models_dir: str | Path,
    *,
    invokes: int = 200,
    threads: Sequence[int] = THREADS,
    command: str = "",
    progress: bool = False,
) -> Report:
    """Measure every bundle under ``models_dir``.

    Args:
        models_dir: the folder holding bundle folders.
        invokes: timed invokes per file and thread count.
        threads: thread counts to time.
        command: the command line to print in the header.
        progress: show a progress bar.

    Raises:
        ValueError: ``models_dir`` is not a folder, or ``invokes`` < 1.
    """
    if invokes < 1:
        raise ValueError("invokes must be >= 1")
    machine = machine_info()
    bundles = find_bundles(models_dir)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(bundles) * len(ROW_ORDER) * len(threads), desc="latency", unit="run")
    models: list[ModelReport] = []
    skipped: list[tuple[str, str]] = []
    try:
        for folder in bundles:
            try:
                models.append(_measure_bundle(folder, invokes, tuple(threads), bar))
            except (SensorError, OSError, ValueError) as exc:
                log.warning("%s: not measured: %s", folder, exc)
                skipped.append((folder.name, str(exc)))
    finally:
        if bar is not None:
            bar.close()
    return Report(machine, invokes, tuple(threads), tuple(models), tuple(skipped), command)


def _size(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"


def render_markdown(report: Report, references: Sequence[Reference] = (), models_dir: str | Path = "models") -> str:
    """The report as a markdown page; ``references`` (measured elsewhere) follow as sections of their own."""
    m = report.machine
    load = f"; 1-minute load average {m.load_average:.2f} when it started" if m.load_average is not None else ""
    features = f"; int8-relevant CPU features: {', '.join(m.cpu_features) or 'none'}"
    threads = report.threads
    lines = [
        "# Model report",
        "",
        "Generated; do not edit by hand. Regenerate with:",
        "",
        "```bash",
        report.command or "seedcam-tools report",
        "```",
        "",
        f"- **Machine**: {m.cpu}, {m.cores} logical cores ({m.usable_cores} usable){load}{features}",
        f"- **Date**: {m.date}",
        f"- **Runtime**: {m.runtime} (CPU kernels, no delegate), Python {m.python}",
        f"- **Latency**: median of {report.invokes} `Model.invoke` calls on the bundle's golden input "
        f"after {WARMUP_INVOKES} warm-up calls, at {' and '.join(str(t) for t in threads)} thread(s); "
        "the input is quantized beforehand. Other load on the machine inflates these numbers.",
        "- **int8 speed-up**: float32 median / int8 median at the same thread count.",
        "- **Accuracy**: on held-out data, as recorded in each bundle's `metrics.json`.",
        "",
        "| model | task | precision | held-out accuracy | size | "
        + " | ".join(f"latency {t} thread{'s' if t > 1 else ''}" for t in threads)
        + " | int8 speed-up ("
        + " / ".join(f"{t}T" for t in threads)
        + ") |",
        "|---|---|---|---|---:|" + "---:|" * len(threads) + "---:|",
    ]
    for model in report.models:
        for row in model.rows:
            lat = " | ".join(f"{row.latency_ms[t]:.3f} ms" for t in threads)
            speed = " / ".join(f"{row.speedup[t]:.2f}×" for t in threads) if row.speedup else "—"
            lines.append(
                f"| `{model.id}` ({model.folder}/) | {model.task} | {row.precision} | {row.accuracy} | "
                f"{_size(row.size_bytes)} | {lat} | {speed} |"
            )
    if not report.models:
        lines.append("| (no bundles found) | | | | | " + "| " * len(threads) + "|")
    with_worlds = [(model, row) for model in report.models for row in model.rows if row.worlds]
    if with_worlds:
        lines += [
            "",
            "## Accuracy by world",
            "",
            "The same bundles on scenes they were not tuned on: held-out frames of "
            + "; ".join(f"**{w}**: {note}" for w, note in WORLD_NOTES.items())
            + ". Recorded in each bundle's `metrics.json` (`worlds`) by "
            "`seedcam-tools eval-worlds --models models --samples 1000`.",
            "",
            "| model | precision | our world (classic held-out) | our randomized world | other world |",
            "|---|---|---|---|---|",
        ]
        for model, row in with_worlds:
            lines.append(
                f"| `{model.id}` | {row.precision} | {row.accuracy} | {row.worlds.get('random', '—')} | "
                f"{row.worlds.get('other', '—')} |"
            )
        scored = list({model.folder: model for model, _ in with_worlds}.values())
        lines += ["", _random_world_assets_text(scored)]
    if report.skipped:
        lines += ["", "Not measured:", ""]
        lines += [f"- `{name}/`: {reason}" for name, reason in report.skipped]
    for ref in references:
        lines += render_reference(ref, Path(models_dir))
    return "\n".join(lines) + "\n"


def write_report(
    models_dir: str | Path,
    out: str | Path,
    *,
    invokes: int = 200,
    threads: Sequence[int] = THREADS,
    progress: bool = False,
    references: Sequence[Path] | None = None,
    json_out: str | Path | None = None,
) -> Report:
    """Measure every bundle under ``models_dir`` and write the markdown page to ``out``.

    ``references``: latency files measured elsewhere to add (default: those in
    ``models_dir/latency/``). ``json_out``: also write this machine's measurements
    as such a file.

    Raises:
        ValueError: see :func:`build_report`.
        OSError: ``out`` cannot be written.
        LatencyReferenceError: a reference file is unreadable or malformed.
    """
    command = f"seedcam-tools report --models {models_dir} --out {out} --invokes {invokes}"
    paths = find_references(Path(models_dir)) if references is None else list(references)
    refs = [load_reference(path) for path in paths]  # before measuring: a bad file fails fast
    report = build_report(models_dir, invokes=invokes, threads=threads, command=command, progress=progress)
    write_atomically(Path(out), render_markdown(report, refs, models_dir).encode(), mode=0o644)
    if json_out is not None:
        data = reference_dict(report)
        write_atomically(Path(json_out), (json.dumps(data, indent=2) + "\n").encode(), mode=0o644)
    return report

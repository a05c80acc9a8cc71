"""Latency measured on another machine, carried into ``models/REPORT.md``.

INT8 pays off on CPUs with int8 dot-product instructions (ARM dotprod, x86
AVX512-VNNI / AVX-VNNI) and on NPUs; the development machine may have none.
``seedcam-tools report --json FILE`` run on such a machine writes its
measurements as a *reference* file; placed in ``models/latency/`` (or named with
``--reference``), the report renders it as a section of its own.

Each row carries the sha256 of the file that was timed. The report compares it
with the bundle's current file and says when they differ (the bundle was rebuilt
since, or the row timed a file of the same graph, e.g. untrained weights, which
its ``note`` must say): latency depends on the graph, not on the weight values,
but only a matching hash proves the graph is the same.

File format (JSON)::

    {"format": "seedcam-latency-reference/1",
     "machine": {"cpu": ..., "cores": ..., "date": ..., "runtime": ..., "python": ...,
                 "cpu_features": [...]},
     "invokes": 200, "threads": [1, 2], "note": "how it was measured",
     "models": [{"folder": "ocr", "id": "ocr-v1", "task": "ocr",
                 "rows": [{"precision": "float32", "file": "ocr_f32.tflite", "sha256": ...,
                           "latency_ms": {"1": 0.87, "2": 0.47}, "note": optional}]}]}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seedcam.errors import SensorError

from .report_model import Report

__all__ = [
    "FORMAT",
    "LatencyReferenceError",
    "Reference",
    "ReferenceMachine",
    "ReferenceModel",
    "ReferenceRow",
    "find_references",
    "load_reference",
    "reference_dict",
    "render_reference",
]

FORMAT = "seedcam-latency-reference/1"
#: where ``seedcam-tools report`` looks for reference files, under the models folder
REFERENCE_DIR = "latency"


class LatencyReferenceError(SensorError):
    """A reference latency file is unreadable or malformed."""


@dataclass(frozen=True)
class ReferenceMachine:
    """The machine a reference was measured on."""

    cpu: str
    cores: int
    date: str
    runtime: str
    python: str
    cpu_features: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReferenceRow:
    """One timed file: median milliseconds per thread count."""

    precision: str
    file: str
    sha256: str
    latency_ms: dict[int, float]
    note: str = ""


@dataclass(frozen=True)
class ReferenceModel:
    """One bundle's rows in a reference."""

    folder: str
    id: str
    task: str
    rows: tuple[ReferenceRow, ...]


@dataclass(frozen=True)
class Reference:
    """A whole reference file."""

    source: str
    machine: ReferenceMachine
    invokes: int
    threads: tuple[int, ...]
    note: str
    models: tuple[ReferenceModel, ...]


def reference_dict(report: Report, *, note: str = "") -> dict[str, Any]:
    """A :class:`~seedcam_tools.report.Report` measured here, as a reference file's JSON object."""
    m = report.machine
    models = [
        {
            "folder": model.folder,
            "id": model.id,
            "task": model.task,
            "rows": [
                {
                    "precision": row.precision,
                    "file": row.file,
                    "sha256": row.sha256,
                    "latency_ms": {str(t): v for t, v in row.latency_ms.items()},
                }
                for row in model.rows
            ],
        }
        for model in report.models
    ]
    return {
        "format": FORMAT,
        "machine": {
            "cpu": m.cpu,
            "cores": m.cores,
            "date": m.date,
            "runtime": m.runtime,
            "python": m.python,
            "cpu_features": list(m.cpu_features),
        },
        "invokes": report.invokes,
        "threads": list(report.threads),
        "note": note,
        "models": models,
    }


def _need(obj: Any, key: str, kind: type, where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj or not isinstance(obj[key], kind):
        raise LatencyReferenceError(f"{where}: missing or wrong type: {key!r} (want {kind.__name__})")
    return obj[key]


def load_reference(path: Path) -> Reference:
    """Read and check a reference file.

    Raises:
        LatencyReferenceError: unreadable, not JSON, another format, or a field missing or of the wrong type.
    """
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LatencyReferenceError(f"{path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise LatencyReferenceError(f"{path}: not a {FORMAT} file")
    where = str(path)
    raw_machine = _need(data, "machine", dict, where)
    machine = ReferenceMachine(
        cpu=_need(raw_machine, "cpu", str, where),
        cores=_need(raw_machine, "cores", int, where),
        date=_need(raw_machine, "date", str, where),
        runtime=_need(raw_machine, "runtime", str, where),
        python=_need(raw_machine, "python", str, where),
        cpu_features=tuple(str(f) for f in raw_machine.get("cpu_features", [])),
    )
    threads = tuple(int(t) for t in _need(data, "threads", list, where))
    models = []
    for raw_model in _need(data, "models", list, where):
        rows = []
        for raw_row in _need(raw_model, "rows", list, where):
            latency = _need(raw_row, "latency_ms", dict, where)
            try:
                latency_ms = {int(t): float(latency[str(t)]) for t in threads}
            except (KeyError, TypeError, ValueError) as exc:
                raise LatencyReferenceError(
                    f"{where}: latency_ms needs a number for each of threads {threads}"
                ) from exc
            rows.append(
                ReferenceRow(
                    precision=_need(raw_row, "precision", str, where),
                    file=_need(raw_row, "file", str, where),
                    sha256=_need(raw_row, "sha256", str, where),
                    latency_ms=latency_ms,
                    note=str(raw_row.get("note", "")),
                )
            )
        models.append(
            ReferenceModel(
                folder=_need(raw_model, "folder", str, where),
                id=_need(raw_model, "id", str, where),
                task=_need(raw_model, "task", str, where),
                rows=tuple(rows),
            )
        )
    return Reference(
        source=Path(path).name,
        machine=machine,
        invokes=_need(data, "invokes", int, where),
        threads=threads,
        note=str(data.get("note", "")),
        models=tuple(models),
    )


def find_references(models_dir: Path) -> list[Path]:
    """The reference files in ``models_dir/latency/``, sorted by name."""
    folder = Path(models_dir) / REFERENCE_DIR
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def _current_sha256(models_dir: Path, folder: str, precision: str) -> str | None:
    try:
        raw = json.loads((Path(models_dir) / folder / "manifest.json").read_text())
        return str(raw["files"][precision]["sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def render_reference(ref: Reference, models_dir: Path) -> list[str]:
    """Markdown lines of one reference: a heading, how it was measured, and its table."""
    m = ref.machine
    features = f" ({', '.join(m.cpu_features)})" if m.cpu_features else ""
    threads = ref.threads
    lines = [
        "",
        f"## Measured on {m.cpu}{features}, {m.cores} logical cores",
        "",
        f"From `{REFERENCE_DIR}/{ref.source}`: {m.date}, {m.runtime}, Python {m.python}; "
        f"median of {ref.invokes} invokes unless a row says otherwise.",
    ]
    if ref.note:
        lines += ["", ref.note]
    lines += [
        "",
        "| model | precision | timed file | "
        + " | ".join(f"latency {t} thread{'s' if t > 1 else ''}" for t in threads)
        + " | int8 speed-up ("
        + " / ".join(f"{t}T" for t in threads)
        + ") |",
        "|---|---|---|" + "---:|" * len(threads) + "---:|",
    ]
    for model in ref.models:
        by_precision = {row.precision: row for row in model.rows}
        for row in model.rows:
            current = _current_sha256(models_dir, model.folder, row.precision)
            if current == row.sha256:
                timed = "the shipped file"
            else:
                timed = "**not the shipped file**" + (f": {row.note}" if row.note else "")
            if row.note and current == row.sha256:
                timed += f" ({row.note})"
            lat = " | ".join(f"{row.latency_ms[t]:.3f} ms" for t in threads)
            f32 = by_precision.get("float32")
            speed = "—"
            if row.precision == "int8" and f32 is not None:
                speed = " / ".join(f"{f32.latency_ms[t] / row.latency_ms[t]:.2f}×" for t in threads)
            lines.append(f"| `{model.id}` ({model.folder}/) | {row.precision} | {timed} | {lat} | {speed} |")
    return lines

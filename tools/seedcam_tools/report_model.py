"""What ``seedcam-tools report`` measured: the machine, and per bundle a row per precision.

Plain data, shared by :mod:`seedcam_tools.report` (which measures and renders it) and
:mod:`seedcam_tools.latency_reference` (which turns it into a reference file).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["MachineInfo", "ModelReport", "PrecisionRow", "Report"]


@dataclass(frozen=True)
class MachineInfo:
    """Where and when the measurements ran.

    Attributes:
        cpu: CPU model name.
        cores: logical CPUs of the machine.
        usable_cores: logical CPUs this process may run on.
        load_average: 1-minute load average when the report started (None where unknown).
        date: UTC timestamp, ISO 8601 to the minute.
        runtime: TFLite runtime distribution and version.
        python: Python version.
        cpu_features: which of :data:`INT8_CPU_FEATURES` the CPU has.
    """

    cpu: str
    cores: int
    usable_cores: int
    load_average: float | None
    date: str
    runtime: str
    python: str
    cpu_features: tuple[str, ...] = ()


@dataclass(frozen=True)
class PrecisionRow:
    """One precision of one bundle.

    Attributes:
        precision: ``"float32"`` or ``"int8"``.
        file: the ``.tflite`` file name.
        size_bytes: its size.
        accuracy: held-out accuracy as text (``"—"`` when the bundle records none).
        latency_ms: thread count -> median invoke time in milliseconds.
        speedup: thread count -> float32 median / this precision's median (INT8 rows
            of bundles with both precisions), else empty.
        sha256: the timed file's hash (from the manifest, checked at load).
        worlds: world -> accuracy text on our randomized and the independent world
            (``metrics.json`` ``worlds``, see :mod:`seedcam_tools.cross_world`); empty when not measured.
    """

    precision: str
    file: str
    size_bytes: int
    accuracy: str
    latency_ms: dict[int, float]
    speedup: dict[int, float] = field(default_factory=dict)
    sha256: str = ""
    worlds: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelReport:
    """One bundle: its identity and a row per precision.

    ``random_world_assets`` is what our randomized world drew with when the bundle was scored
    on it (``metrics.json`` ``worlds.random.assets``, see
    :func:`seedcam_tools.world.world_assets_id`); empty when not recorded.
    """

    folder: str
    id: str
    task: str
    rows: tuple[PrecisionRow, ...]
    random_world_assets: str = ""


@dataclass(frozen=True)
class Report:
    """The whole report: machine facts, bundles, and bundles that could not be measured."""

    machine: MachineInfo
    invokes: int
    threads: tuple[int, ...]
    models: tuple[ModelReport, ...]
    skipped: tuple[tuple[str, str], ...]
    command: str

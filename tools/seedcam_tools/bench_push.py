"""``seedcam-tools bench push``: how fast a bundle push moves over a 115200-baud UART and over a pty.

Starts the real firmware (emulated board, lane task running, results streaming)
twice: once with its link throttled to a UART's line rate (8N1: 10 bits a byte,
so 115200 baud carry 11520 bytes/s) and once on a plain pty. For each it pushes
model bundles made from ``models/lane`` through the SDK and reports the data
phase's payload rate (first chunk → last acknowledgement, resends included in
the cost) and the whole push (begin → self-test → activation).
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import seedcam
from seedcam import updates
from seedcam.bundle import write_bundle
from seedcam_firmware.launcher import EmulatedBoard, emulated_board
from seedcam_tools.bundles import build_model_bundle

__all__ = ["format_push_table", "run_push_benchmark"]

_START_TIMEOUT_S = 60.0


def _board(workdir: Path, *args: str) -> contextlib.AbstractContextManager[EmulatedBoard]:
    """The firmware on a pty symlink in ``workdir``, streaming results at 30 fps, with updates enabled."""
    workdir.mkdir()
    overrides = {"updates.dir": workdir / "storage"}
    return emulated_board("--fps", "30", *args, workdir=workdir, overrides=overrides, timeout=_START_TIMEOUT_S)


def _push_runs(
    board: EmulatedBoard, bundles: list[Path], max_bytes: int | None, note: Callable[[str], None]
) -> list[Any]:
    runs = []
    with seedcam.open(board.link, timeout=10) as sensor:
        for path in bundles:
            before = sensor.stats.results_received
            result = updates.push_bundle(sensor, path, max_bytes=max_bytes, timeout=5.0)
            streamed = sensor.stats.results_received - before
            moved = result.payload_size - result.resumed_from if result.install.activated else max_bytes or 0
            note(
                f"  {path.name}: {moved} B in {result.data_seconds:.2f} s, "
                f"{moved / result.data_seconds / 1e3:.1f} kB/s, {streamed} results meanwhile"
            )
            runs.append((result, streamed))
    return runs


def run_push_benchmark(
    models_dir: Path,
    *,
    uart_bytes: int = 120_000,
    pty_pushes: int = 3,
    baud: int = 115200,
    out_json: Path | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Measure push throughput; returns the report (also written to ``out_json``).

    Args:
        models_dir: the folder holding ``lane/`` (bundles are made from it).
        uart_bytes: payload bytes to move over the throttled link (the push stops
            there; the line-rate ratio is measured over that many bytes); 0 = the
            whole 375 kB int8 bundle, self-test and activation included (~35 s).
        pty_pushes: full pushes of the float32 lane bundle (about 1.1 MB) on a pty.
        baud: line rate of the throttled run.

    Raises:
        BoardStartError: the firmware did not start.
        SensorError: a push failed.
    """

    def note(text: str) -> None:
        if progress:
            sys.stderr.write(text + "\n")

    report: dict[str, Any] = {"baud": baud, "line_rate_Bps": baud / 10}
    with tempfile.TemporaryDirectory(prefix="seedcam-bench-push-") as tmp:
        work = Path(tmp)
        int8 = write_bundle(build_model_bundle(models_dir / "lane", version="9.0.0"), work / "int8.scb")
        f32 = [
            write_bundle(
                build_model_bundle(models_dir / "lane", precision="float32", version=f"9.1.{i}"), work / f"f32-{i}.scb"
            )
            for i in range(pty_pushes)
        ]
        note(f"{baud} baud (8N1 = {baud // 10} B/s), {uart_bytes} payload bytes:")
        with _board(work / "uart", "--throttle", str(baud)) as board:
            ((uart, streamed),) = _push_runs(board, [int8], uart_bytes or None, note)
        moved = uart.payload_size if uart.install.activated else uart_bytes
        report["uart"] = {
            "payload_bytes": moved,
            "whole_push": uart.install.activated,
            "data_seconds": uart.data_seconds,
            "payload_Bps": moved / uart.data_seconds,
            "line_rate_ratio": moved / uart.data_seconds / (baud / 10),
            "bytes_sent": uart.bytes_sent,
            "results_during_push": streamed,
        }
        note(f"pty, {pty_pushes} pushes of {f32[0].stat().st_size} bytes:")
        with _board(work / "pty") as board:
            runs = _push_runs(board, f32, None, note)
        rates = [r.data_rate_bps for r, _ in runs]
        report["pty"] = {
            "payload_bytes": runs[0][0].payload_size,
            "data_MBps_each": [r / 1e6 for r in rates],
            "data_MBps_median": sorted(rates)[len(rates) // 2] / 1e6,
            "whole_push_seconds_each": [r.seconds for r, _ in runs],
            "final_chunk_size": runs[-1][0].chunk_size,
            "results_during_pushes": sum(s for _, s in runs),
        }
    if out_json is not None:
        out_json.write_text(json.dumps(report, indent=2) + "\n")
    return report


def format_push_table(report: dict[str, Any]) -> str:
    """The report as a small text table."""
    uart, pty = report["uart"], report["pty"]
    lines = [
        f"push at {report['baud']} baud: {uart['payload_Bps']:.0f} B/s payload = "
        f"{uart['line_rate_ratio'] * 100:.1f} % of the 8N1 line rate ({report['line_rate_Bps']:.0f} B/s) "
        f"over {uart['payload_bytes']} bytes; {uart['results_during_push']} results streamed meanwhile",
        f"push on a pty: {pty['data_MBps_median']:.2f} MB/s (median of "
        f"{', '.join(f'{v:.2f}' for v in pty['data_MBps_each'])}) for {pty['payload_bytes']} bytes; "
        f"whole push incl. self-test and activation {min(pty['whole_push_seconds_each']):.2f} s; "
        f"chunks grew to {pty['final_chunk_size']} bytes",
    ]
    return "\n".join(lines)

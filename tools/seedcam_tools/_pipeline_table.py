"""The pipeline benchmark's report as a text table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["format_table"]


def format_table(report: Mapping[str, Any]) -> str:
    """The report as an aligned text table (figure, value, unit, note)."""
    lat = report["latency_ms"]
    frames = report["result_frame_bytes"]
    health = report.get("device_health") or {}
    env = report.get("environment", {})
    rows: list[tuple[str, str, str, str]] = [
        (
            "glue overhead",
            f"{report['glue_overhead_ratio']:.2f}",
            "x",
            "per-frame task time / bare invokes of the same models, same run",
        ),
        (
            "bare model invokes",
            f"{report['bare_invoke_ms']:.3f}",
            "ms",
            " + ".join(f"{task} {ms:.3f}" for task, ms in report["bare_invoke_ms_by_model"].items())
            + f" (OCR x {report['plates_read_per_frame']:g} plates x {report['ocr_views']} views);"
            f" {env.get('num_threads', '?')} threads",
        ),
        (
            "glue at the frame rate",
            f"{report['glue_at_frame_rate_ratio']:.2f}",
            "x",
            "per-frame task time / the same bare invokes made once per frame period",
        ),
        (
            "bare invokes, paced",
            f"{report['paced_bare_invoke_ms']:.3f}",
            "ms",
            " + ".join(f"{task} {ms:.3f}" for task, ms in report["paced_bare_invoke_ms_by_model"].items())
            + f"; {report['paced_bare_invoke_samples']} frames at {report['fps_requested']:g} fps",
        ),
        (
            "per-frame time",
            f"{report['per_frame_ms']:.3f}",
            "ms",
            f"median sum of task:* in the firmware (invokes there {report['firmware_invoke_ms']:.3f} ms)",
        ),
        (
            "capture->result",
            f"{report['capture_to_result_ms']:.3f}",
            "ms",
            "median in the firmware: capture stamp to Result built",
        ),
        (
            "result->host",
            f"{report['result_to_host_ms']:.3f}",
            "ms",
            "median: send queue, encode, pty, host decode",
        ),
        (
            "capture->host p50",
            f"{lat['p50']:.2f}",
            "ms",
            f"{report['results']} results over a pty",
        ),
        ("capture->host p95", f"{lat['p95']:.2f}", "ms", f"max {lat['max']:.2f} ms"),
        (
            "achieved fps",
            f"{report['fps_achieved']:.1f}",
            "1/s",
            f"requested {report['fps_requested']:g}",
        ),
        (
            "frames dropped",
            str(health.get("frames_dropped", "n/a")),
            "frames",
            f"device health; {health.get('frames_captured', '?')} captured, "
            f"{report['frames_missing_at_host']} missing at host",
        ),
        (
            "Result frame, lane only",
            str(frames["lane_only"]),
            "bytes",
            "on the wire, framing included",
        ),
        (
            "Result frame, lane+3det+1text",
            str(frames["lane_3det_1text"]),
            "bytes",
            "the scene's median result, framing included",
        ),
        (
            "host decode rate",
            f"{report['host_decode_results_per_s']:,.0f}",
            "results/s",
            "feed + compact decode",
        ),
        (
            "vs 921600-baud line",
            f"{report['line_rate_ratio_921600']:.1f}",
            "x",
            f"host decodes {report['line_rate_ratio_921600']:.0f}x faster than the line delivers "
            f"({report['line_results_per_s_921600']:.0f} results/s)",
        ),
    ]
    headers = ("figure", "value", "unit", "note")
    widths = [max(len(headers[i]), *(len(r[i]) for r in rows)) for i in range(3)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            (
                cells[0].ljust(widths[0]),
                cells[1].rjust(widths[1]),
                cells[2].ljust(widths[2]),
                cells[3],
            )
        ).rstrip()

    out = [line(headers), line(tuple("-" * w for w in widths) + ("-" * 4,))]
    out += [line(r) for r in rows]
    if env:
        out.append(
            f"({env.get('cpu_count')} CPUs, load {', '.join(f'{v:.1f}' for v in env.get('loadavg', []))}, "
            f"Python {env.get('python')}, {env.get('tflite_runtime')}, "
            f"{env.get('time_utc')})"
        )
    return "\n".join(out)

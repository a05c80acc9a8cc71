"""``seedcam record``: a sensor's stream into an MCAP file (``seedcam[record]``; docs/record.md).

``seedcam record -o run.mcap [--duration S] [--preview-fps N]`` records device
info, results, health, log records and (with ``--preview-fps``) preview JPEGs
until ``--duration`` has passed or Ctrl-C; either way the file is finished
properly (a recording cut by a crash is still readable up to its last chunk).
Once a second it shows the time, the results recorded, those dropped and the
file's size on stderr (``-q``: not at all; ``--json``: as one JSON object per
line on stdout), and at the end one summary line. Exit codes as for every
``seedcam`` command; Ctrl-C finishes the file and exits 130.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, TextIO

from seedcam._cli_common import EXIT_INTERRUPTED, EXIT_OK, CliError, byte_size, write_json
from seedcam._cli_port import open_sensor
from seedcam.cli_blackbox import add_blackbox_commands
from seedcam.errors import RecordingError

__all__ = ["add_record_commands", "cmd_record"]

_PROGRESS_S = 1.0


def _line(stats: Any, path: str) -> str:
    rate = stats.bytes_written / stats.seconds if stats.seconds > 0 else 0.0
    previews = f", {stats.previews} previews" if stats.previews else ""
    return (
        f"{path}: {stats.seconds:6.1f} s, {stats.results} results{previews}, {stats.dropped} dropped, "
        f"{byte_size(stats.bytes_written)} ({byte_size(round(rate))}/s)"
    )


def _show(out: TextIO, stats: Any, path: str, *, as_json: bool, quiet: bool, final: bool) -> None:
    if as_json:
        write_json(out, {"event": "done" if final else "progress", "path": path, **vars_of(stats)})
        out.flush()
    elif final:
        if not quiet:
            sys.stderr.write("\n")
        out.write(f"recorded {_line(stats, path)}\n")
    elif not quiet:
        sys.stderr.write("\r" + _line(stats, path))
        sys.stderr.flush()


def vars_of(stats: Any) -> dict[str, Any]:
    """A recorder's statistics as a JSON object's fields."""
    from dataclasses import asdict

    fields = asdict(stats)
    fields["seconds"] = round(fields["seconds"], 3)
    return fields


def cmd_record(args: argparse.Namespace, out: TextIO) -> int:
    """Record until ``--duration`` or Ctrl-C; the file is finished either way."""
    if args.duration is not None and args.duration <= 0:
        raise CliError("--duration must be above 0 seconds")
    if args.preview_fps is not None and not 0 < args.preview_fps <= 60:
        raise CliError("--preview-fps must be in (0, 60]")
    try:
        from seedcam.recording import Recorder
    except ImportError as exc:  # pragma: no cover - the extra's packages are imported lazily inside
        raise CliError("recording needs: pip install 'seedcam[record]'") from exc
    path = str(args.output)
    interrupted = False
    with open_sensor(args) as sensor:
        try:
            recorder = Recorder(sensor, path)
        except RecordingError as exc:
            raise CliError(str(exc)) from exc
        recorder.start()
        try:
            if args.preview_fps is not None:
                settings = sensor.start_preview(args.preview_fps)
                if settings.line_limited and not args.quiet:
                    sys.stderr.write(f"preview: {settings.message}\n")
            deadline = None if args.duration is None else time.monotonic() + args.duration
            while deadline is None or time.monotonic() < deadline:
                wait = _PROGRESS_S if deadline is None else min(_PROGRESS_S, deadline - time.monotonic())
                if sensor.session.wait_closed(max(0.0, wait)):
                    break
                stats = recorder.stats
                if stats.error:
                    break
                _show(out, stats, path, as_json=args.json, quiet=args.quiet, final=False)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            stats = recorder.stop()
    _show(out, stats, path, as_json=args.json, quiet=args.quiet, final=True)
    if stats.error:
        raise RecordingError(f"recording stopped: {stats.error} ({path} is readable up to its last chunk)")
    return EXIT_INTERRUPTED if interrupted else EXIT_OK


def add_record_commands(commands: Any, shared: argparse.ArgumentParser) -> None:
    """Add ``record`` and ``blackbox`` to the ``seedcam`` sub-commands (``shared``: the options every command takes)."""
    text = "record the sensor's stream (results, health, logs, previews) into an MCAP file"
    record = commands.add_parser("record", parents=[shared], help=text, description=f"{text}.")
    record.add_argument("-o", "--output", required=True, help="the .mcap file to write (replaced if it exists)")
    record.add_argument("--duration", type=float, help="stop after this many seconds (default: at Ctrl-C)")
    record.add_argument(
        "--preview-fps", type=float, help="also record preview JPEGs at this rate (the line may allow fewer)"
    )
    record.set_defaults(func=cmd_record)
    add_blackbox_commands(commands, shared)  # blackbox list|pull|trigger

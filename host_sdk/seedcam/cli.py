"""``seedcam``: the command-line tool. Every command is a thin layer over the SDK.

Exit codes: 0 success, 1 user error (bad arguments, unknown key, no sensor
found), 2 device or link error (timeout, link broken, device refused).
The port comes from ``--port``, else ``$SEEDCAM_PORT``, else discovery.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

import seedcam
from seedcam._cli_common import EXIT_DEVICE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USER, to_jsonable
from seedcam.agv.cli import add_agv_commands
from seedcam.cli_updates import add_update_commands
from seedcam.discovery import PORT_ENV
from seedcam.errors import NoSensorFound, RpcError, SensorError
from seedcam.types import Result

__all__ = ["main", "format_result", "to_jsonable"]

_USER_STATUSES = {"INVALID_ARGUMENT", "NOT_FOUND"}


def format_result(result: Result) -> str:
    """One human-readable line for a result."""
    parts = [f"frame {result.frame_id:>6}"]
    lane = result.lane
    if lane is not None:
        parts.append(
            f"lane {lane.status.value:<8} offset {lane.offset_m * 100:+6.1f} cm  "
            f"heading {lane.heading_deg:+6.1f}°  "
            f"curvature {lane.curvature_per_m:+5.2f} /m  width {lane.lane_width_m:.2f} m  "
            f"conf {lane.offset_confidence:.2f}"
        )
    if result.detections:
        parts.append(", ".join(f"{d.label} {d.score:.2f}" for d in result.detections))
    if result.text_lines:
        parts.append(", ".join(f"'{t.text}' {t.confidence:.2f}" for t in result.text_lines))
    if result.classifications:
        parts.append(", ".join(f"{c.label} {c.score:.2f}" for c in result.classifications))
    latency = result.timings_us.get("capture_to_result")
    if latency is not None:
        parts.append(f"{latency / 1000:.1f} ms")
    return "  |  ".join(parts)


def _open(args: argparse.Namespace) -> seedcam.Sensor:
    return seedcam.open(args.port, serial=args.serial, timeout=args.timeout)


def cmd_ports(args: argparse.Namespace, out: TextIO) -> int:
    from seedcam.ports import list_ports, seedcam_ports

    ports = list_ports() if args.all else seedcam_ports()
    if args.json:
        for port in ports:
            out.write(json.dumps(to_jsonable(port)) + "\n")
        return EXIT_OK
    if not ports:
        out.write("no seedcam sensors found (use --all to list every serial port)\n")
        return EXIT_OK
    for port in ports:
        vid = f"{port.vid:04x}" if port.vid is not None else "----"
        pid = f"{port.pid:04x}" if port.pid is not None else "----"
        out.write(f"{port.device:<20} {vid}:{pid}  serial {port.serial_number or '-':<16} {port.description or ''}\n")
    return EXIT_OK


def cmd_info(args: argparse.Namespace, out: TextIO) -> int:
    with _open(args) as sensor:
        info = sensor.info()
    if args.json:
        out.write(json.dumps(to_jsonable(info)) + "\n")
        return EXIT_OK
    out.write(f"serial number     {info.serial_number}\n")
    out.write(f"firmware          {info.firmware_version} (protocol {info.protocol_version}, board {info.board})\n")
    out.write(f"boot id           {info.boot_id}   uptime {info.uptime_s:.1f} s\n")
    out.write(f"camera            {info.camera} {info.frame_width}x{info.frame_height}\n")
    out.write(f"tasks enabled     {', '.join(info.tasks_enabled) or 'none'}\n")
    out.write(f"max frame size    {info.max_frame_size} bytes\n")
    for model in info.models:
        flag = "active" if model.active else "idle"
        out.write(f"model             {model.id:<28} {model.task:<10} {model.precision:<8} {flag}\n")
    return EXIT_OK


def cmd_monitor(args: argparse.Namespace, out: TextIO) -> int:
    deadline = time.monotonic() + args.duration if args.duration is not None else None
    shown = 0
    with _open(args) as sensor:
        while args.count is None or shown < args.count:
            wait = 1.0 if deadline is None else deadline - time.monotonic()
            if wait <= 0:
                break
            result = sensor.recv(timeout=min(wait, 1.0))
            if result is None:
                continue
            out.write((json.dumps(to_jsonable(result)) if args.json else format_result(result)) + "\n")
            out.flush()
            shown += 1
    return EXIT_OK


def _parse_value(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def cmd_config(args: argparse.Namespace, out: TextIO) -> int:
    with _open(args) as sensor:
        if args.action == "get":
            value = sensor.config_get(args.key or "")
            out.write((json.dumps(value, indent=2) if isinstance(value, dict) else json.dumps(value)) + "\n")
            return EXIT_OK
        if args.action == "set":
            if args.value is None:
                raise ValueError("config set needs KEY and VALUE")
            stored = sensor.config_set(args.key, _parse_value(args.value))
        else:
            stored = sensor.config_reset(args.key or "")
    note = "  (takes effect after a restart)" if stored.restart_required else ""
    out.write(f"{stored.key or '(all)'} = {json.dumps(stored.value)}{note}\n")
    return EXIT_OK


def cmd_models(args: argparse.Namespace, out: TextIO) -> int:
    with _open(args) as sensor:
        models = sensor.models()
    for model in models:
        if args.json:
            out.write(json.dumps(to_jsonable(model)) + "\n")
        else:
            flag = "active" if model.active else "idle"
            out.write(f"{model.id:<28} {model.task:<10} {model.precision:<8} {flag:<6} {model.sha256[:12]}\n")
    return EXIT_OK


def cmd_snapshot(args: argparse.Namespace, out: TextIO) -> int:
    with _open(args) as sensor:
        snap = sensor.snapshot(args.quality)
    args.output.write_bytes(snap.jpeg)
    out.write(f"wrote {args.output} ({snap.width}x{snap.height}, frame {snap.frame_id}, {len(snap.jpeg)} bytes)\n")
    return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seedcam", description="Talk to a seedcam AI vision sensor.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {seedcam.__version__}")
    parser.add_argument("-p", "--port", help=f"port or URL (default: ${PORT_ENV}, else the only sensor found)")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the device (default 5)")
    parser.add_argument("--serial", help="the sensor with this USB serial number (see 'seedcam ports')")
    commands = parser.add_subparsers(dest="command", required=True)

    ports = commands.add_parser("ports", help="list sensors (serial ports and raw USB, with VID/PID/serial and URL)")
    ports.add_argument("--all", action="store_true", help="list every serial port, not only seedcam sensors")
    ports.add_argument("--json", action="store_true")
    ports.set_defaults(func=cmd_ports)

    info = commands.add_parser("info", help="show device information")
    info.add_argument("--json", action="store_true")
    info.set_defaults(func=cmd_info)

    monitor = commands.add_parser("monitor", help="show live results")
    monitor.add_argument("--json", action="store_true", help="one JSON object per result")
    monitor.add_argument("-n", "--count", type=int, help="stop after this many results")
    monitor.add_argument("--duration", type=float, help="stop after this many seconds")
    monitor.set_defaults(func=cmd_monitor)

    config = commands.add_parser("config", help="read or change the device configuration")
    config.add_argument("action", choices=("get", "set", "reset"))
    config.add_argument("key", nargs="?", default="", help="dotted key, e.g. camera.fps (empty: everything)")
    config.add_argument("value", nargs="?", help="new value (JSON, or a plain string)")
    config.set_defaults(func=cmd_config)

    models = commands.add_parser("models", help="list the models on the device")
    models.add_argument("--json", action="store_true")
    models.set_defaults(func=cmd_models)
    add_update_commands(commands, models, cmd_models)  # models list|push|activate|rollback|delete, flash

    snapshot = commands.add_parser("snapshot", help="save a JPEG of the current camera frame")
    snapshot.add_argument("-o", "--output", type=Path, required=True)
    snapshot.add_argument("-q", "--quality", type=int, default=0, help="JPEG quality 1..100 (default: device's)")
    snapshot.set_defaults(func=cmd_snapshot)
    add_agv_commands(commands)  # agv-sim, agv-bench: the closed-loop simulator
    return parser


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    """Run the CLI; returns the exit code (never raises for device or user errors)."""
    out = out or sys.stdout
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on a usage error; here 2 means a device error
        return EXIT_OK if exc.code in (0, None) else EXIT_USER
    command: Callable[[argparse.Namespace, TextIO], int] = args.func
    try:
        with _sigterm_as_interrupt():
            return command(args, out)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except (ValueError, NoSensorFound, OSError) as exc:
        if isinstance(exc, SensorError) and not isinstance(exc, NoSensorFound):
            return _fail(exc, EXIT_DEVICE)
        return _fail(exc, EXIT_USER)
    except RpcError as exc:
        return _fail(exc, EXIT_USER if exc.status in _USER_STATUSES else EXIT_DEVICE)
    except SensorError as exc:
        return _fail(exc, EXIT_DEVICE)


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """While a command runs, SIGTERM unwinds like Ctrl-C, so children (the simulator's firmware) are stopped."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _fail(exc: BaseException, code: int) -> int:
    sys.stderr.write(f"seedcam: error: {exc}\n")
    return code


if __name__ == "__main__":
    sys.exit(main())

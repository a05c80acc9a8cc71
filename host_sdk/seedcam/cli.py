"""``seedcam``: the command-line tool. Every command is a thin layer over the SDK.

Exit codes: 0 success; 1 usage or user error (bad arguments or option values,
unknown config key, bad bundle file, no sensor found); 2 device or link error
(no answer in time, port busy or missing, link broken, device refused or
failed); 130 interrupted (Ctrl-C or SIGTERM).

The port comes from ``-p/--port``, else ``$SEEDCAM_PORT``, else discovery; a
serial port's baud rate from the URL's ``?baud=``, else ``-b/--baud``, else
``$SEEDCAM_BAUD``, else 921600. The options every command takes (``-p``, ``-b``,
``--serial``, ``--timeout``, ``--json``, ``-q``, ``-v``, ``--trace``) may come
before or after the command's name. ``--json`` prints one JSON object per line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

import seedcam
from seedcam._cli_common import (
    EXIT_DEVICE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USER,
    CliError,
    write_json,
)
from seedcam._cli_port import BAUD_ENV, open_sensor
from seedcam._jsonable import to_jsonable
from seedcam.agv.cli import add_agv_commands
from seedcam.cli_bridge import add_bridge_commands
from seedcam.cli_capture import add_capture_commands
from seedcam.cli_catalog import add_catalog_commands
from seedcam.cli_mcp import add_mcp_commands
from seedcam.cli_record import add_record_commands
from seedcam.cli_updates import add_update_commands
from seedcam.cli_view import add_view_commands
from seedcam.discovery import PORT_ENV
from seedcam.errors import NoSensorFound, RpcError, SensorError
from seedcam.sensor import REBOOT_TIMEOUT_S
from seedcam.transport.serial_port import DEFAULT_BAUDRATE
from seedcam.transport.trace import TRACE_LOGGER
from seedcam.types import Result

__all__ = ["EXIT_DEVICE", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USER", "main", "format_result", "to_jsonable"]

_USER_STATUSES = {"INVALID_ARGUMENT", "NOT_FOUND"}
HIDDEN_PATH = "<local>"  #: what the device shows for a local-only path (seedcam_firmware.host_policy.HIDDEN)


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
    return open_sensor(args)


def cmd_ports(args: argparse.Namespace, out: TextIO) -> int:
    from seedcam.ports import list_ports, seedcam_ports

    ports = list_ports() if args.all else seedcam_ports()
    if args.json:
        for port in ports:
            write_json(out, port)
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
        write_json(out, info)
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
            if args.json:
                write_json(out, result)
            else:
                out.write(format_result(result) + "\n")
            out.flush()
            shown += 1
    return EXIT_OK


def _parse_value(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def change_note(stored: seedcam.ConfigValue) -> str:
    """What a config change means for the user: saved or not, in effect now or after a restart."""
    if stored.persisted:
        return (
            "saved; takes effect after a restart (seedcam reboot)"
            if stored.restart_required
            else ("saved; takes effect now")
        )
    if stored.restart_required:
        return "not saved: takes effect after a restart, which loses it (the firmware persists with --config FILE)"
    return "not saved: lasts until the firmware restarts"


def _write_change(out: TextIO, stored: seedcam.ConfigValue, *, as_json: bool) -> None:
    if as_json:
        write_json(out, {**to_jsonable(stored), "note": change_note(stored)})
    else:
        out.write(f"{stored.key or '(all)'} = {json.dumps(stored.value)}  ({change_note(stored)})\n")


def _flat_config(config: object, where: str) -> dict[str, object]:
    """``{"camera": {"fps": 15}}`` -> ``{"camera.fps": 15}``: the dotted keys of a whole config."""
    if not isinstance(config, dict):
        raise CliError(f"{where}: not a config (a JSON object of sections)")
    if set(config) == {"key", "value"} and config["key"] == "":  # the output of 'config get --json'
        config = config["value"]
        if not isinstance(config, dict):
            raise CliError(f"{where}: not a config (a JSON object of sections)")
    keys: dict[str, object] = {}
    for section, table in config.items():
        if isinstance(table, dict):
            keys.update({f"{section}.{name}": value for name, value in table.items()})
        else:
            keys[str(section)] = table  # not a section: the device names it (NOT_FOUND)
    return keys


def cmd_config_apply(args: argparse.Namespace, out: TextIO) -> int:
    """``config apply FILE``: set every key of a whole-config JSON file whose value differs on the device.

    Key by key, in the file's order; a key the device refuses (a local-only key, a bad value)
    is reported with the device's message and the others still go. Exit code: 0 when every
    change went in, else that of the worst refusal (1 unknown key or bad value, 2 refused).
    """
    where = str(args.key)
    try:
        wanted = _flat_config(json.loads(Path(where).read_text(encoding="utf-8")), where)
    except json.JSONDecodeError as exc:
        raise CliError(f"{where}: not JSON: {exc}") from exc
    code = EXIT_OK
    changed = 0
    with _open(args) as sensor:
        current = _flat_config(sensor.config_get(""), "the device's config")
        for key, value in wanted.items():
            if key in current and (current[key] == value or value == HIDDEN_PATH):
                continue  # the same, or a local path the device does not show
            try:
                stored = sensor.config_set(key, value)
            except RpcError as exc:
                code = max(code, EXIT_USER if exc.status in _USER_STATUSES else EXIT_DEVICE)
                if args.json:
                    write_json(out, {"key": key, "error": exc.status, "message": exc.detail})
                else:
                    out.write(f"{key}: not changed: {exc.detail} ({exc.status})\n")
                continue
            changed += 1
            _write_change(out, stored, as_json=args.json)
    if not args.json and changed == 0 and code == EXIT_OK:
        out.write("nothing to change: the device's config is the file's\n")
    return code


def cmd_config(args: argparse.Namespace, out: TextIO) -> int:
    if args.action == "set" and args.value is None:
        raise CliError("config set needs KEY and VALUE")
    if args.action == "apply":
        if not args.key or args.value is not None:
            raise CliError("config apply needs one FILE (the JSON of 'seedcam config get')")
        return cmd_config_apply(args, out)
    with _open(args) as sensor:
        if args.action == "get":
            value = sensor.config_get(args.key or "")
            if args.json:
                write_json(out, {"key": args.key or "", "value": value})
            else:
                out.write((json.dumps(value, indent=2) if isinstance(value, dict) else json.dumps(value)) + "\n")
            return EXIT_OK
        if args.action == "set":
            stored = sensor.config_set(args.key, _parse_value(args.value))
        else:
            stored = sensor.config_reset(args.key or "")
    _write_change(out, stored, as_json=args.json)
    return EXIT_OK


#: shells ``seedcam completion`` writes a script for (shtab's)
COMPLETION_SHELLS = ("bash", "zsh", "tcsh")


def cmd_completion(args: argparse.Namespace, out: TextIO) -> int:
    """The shell completion script of this CLI, made by shtab from the argument parser itself."""
    try:
        import shtab
    except ImportError as exc:
        raise CliError("shell completion needs shtab: pip install 'seedcam[completion]'", EXIT_USER) from exc
    out.write(shtab.complete(_parser(), shell=args.shell))
    return EXIT_OK


def cmd_reboot(args: argparse.Namespace, out: TextIO) -> int:
    with _open(args) as sensor:
        old = sensor.device_info
        info = sensor.reboot(timeout=args.wait)
    if args.json:
        write_json(out, {"old_boot_id": old.boot_id if old else "", "boot_id": info.boot_id})
    else:
        out.write(f"rebooted: boot {info.boot_id} (was {old.boot_id if old else '?'})\n")
    return EXIT_OK


def cmd_models(args: argparse.Namespace, out: TextIO) -> int:
    with _open(args) as sensor:
        models = sensor.models()
    for model in models:
        if args.json:
            write_json(out, model)
        else:
            flag = "active" if model.active else "idle"
            out.write(f"{model.id:<28} {model.task:<10} {model.precision:<8} {flag:<6} {model.sha256[:12]}\n")
    return EXIT_OK


def cmd_snapshot(args: argparse.Namespace, out: TextIO) -> int:
    with _open(args) as sensor:
        snap = sensor.snapshot(args.quality)
    args.output.write_bytes(snap.jpeg)
    if args.json:
        fields = {"path": str(args.output), "frame_id": snap.frame_id, "width": snap.width, "height": snap.height}
        write_json(out, {**fields, "bytes": len(snap.jpeg)})
        return EXIT_OK
    out.write(f"wrote {args.output} ({snap.width}x{snap.height}, frame {snap.frame_id}, {len(snap.jpeg)} bytes)\n")
    return EXIT_OK


def _shared_options(*, suppress: bool) -> argparse.ArgumentParser:
    """The options every command takes, before or after its name.

    The sub-commands get them with ``default=SUPPRESS``, so that one given before the
    command's name is not overwritten by the sub-command's default.
    """

    def default(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    shared = argparse.ArgumentParser(add_help=False)
    group = shared.add_argument_group("options of every command")
    group.add_argument(
        "-p", "--port", default=default(None), help=f"port or URL (default: ${PORT_ENV}, else the only sensor found)"
    )
    group.add_argument(
        "-b",
        "--baud",
        default=default(None),
        metavar="BAUD",
        help=f"serial port baud rate (default: ${BAUD_ENV}, else {DEFAULT_BAUDRATE}; a URL's ?baud= wins)",
    )
    group.add_argument("--serial", default=default(None), help="the sensor with this USB serial number (see 'ports')")
    group.add_argument("--timeout", type=float, default=default(5.0), help="seconds to wait for the device (default 5)")
    group.add_argument(
        "--json", action="store_true", default=default(False), help="print data as JSON, one object per line"
    )
    group.add_argument(
        "-q", "--quiet", action="store_true", default=default(False), help="no progress bars; log errors only"
    )
    group.add_argument("-v", "--verbose", action="count", default=default(0), help="log more (-v: info, -vv: debug)")
    group.add_argument(
        "--trace",
        action="store_true",
        default=default(False),
        help=f"log every byte sent and received, in hex (logger {TRACE_LOGGER})",
    )
    return shared


def _parser() -> argparse.ArgumentParser:
    shared = _shared_options(suppress=True)
    parser = argparse.ArgumentParser(
        prog="seedcam",
        description="Talk to a seedcam AI vision sensor.",
        parents=[_shared_options(suppress=False)],
        epilog="exit codes: 0 ok, 1 usage or user error, 2 device or link error, 130 interrupted",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {seedcam.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, text: str) -> argparse.ArgumentParser:
        return commands.add_parser(name, parents=[shared], help=text, description=f"{text}.")

    ports = add("ports", "list sensors (serial ports and raw USB, with VID/PID/serial and URL)")
    ports.add_argument("--all", action="store_true", help="list every serial port, not only seedcam sensors")
    ports.set_defaults(func=cmd_ports)

    add("info", "show device information").set_defaults(func=cmd_info)

    monitor = add("monitor", "show live results")
    monitor.add_argument("-n", "--count", type=int, help="stop after this many results")
    monitor.add_argument("--duration", type=float, help="stop after this many seconds")
    monitor.set_defaults(func=cmd_monitor)

    config = add("config", "read or change the device configuration")
    config.add_argument(
        "action",
        choices=("get", "set", "reset", "apply"),
        help="get [KEY], set KEY VALUE, reset [KEY], apply FILE (set what differs from a 'config get' JSON file)",
    )
    config.add_argument(
        "key", nargs="?", default="", help="dotted key, e.g. camera.fps (empty: everything); for apply: the FILE"
    )
    config.add_argument("value", nargs="?", help="new value (JSON, or a plain string)")
    config.set_defaults(func=cmd_config)

    reboot = add("reboot", "restart the firmware and wait until it is back (what was not saved is lost)")
    reboot.add_argument(
        "--wait", type=float, default=REBOOT_TIMEOUT_S, help=f"seconds to wait for it (default {REBOOT_TIMEOUT_S:g})"
    )
    reboot.set_defaults(func=cmd_reboot)

    models = add("models", "the models on the device and their updates ('models' alone: 'models list')")
    models.set_defaults(func=cmd_models)
    model_commands = models.add_subparsers(dest="models_command", metavar="COMMAND")
    listing = "the models on the device: task, precision, active or idle (update slots: 'models slots')"
    model_commands.add_parser("list", parents=[shared], help=listing, description=f"{listing}.").set_defaults(
        func=cmd_models
    )
    add_update_commands(commands, model_commands, shared)  # models slots|push|activate|rollback|delete, flash
    add_catalog_commands(model_commands, shared)  # models available|install: the model catalog

    snapshot = add("snapshot", "save a JPEG of the current camera frame")
    snapshot.add_argument("-o", "--output", type=Path, required=True)
    snapshot.add_argument("--quality", type=int, default=0, help="JPEG quality 1..100 (default: device's)")
    snapshot.set_defaults(func=cmd_snapshot)
    completion = add("completion", 'print a shell completion script: eval "$(seedcam completion bash)"')
    completion.add_argument("shell", choices=COMPLETION_SHELLS)
    completion.set_defaults(func=cmd_completion)
    add_agv_commands(commands)  # agv-sim, agv-bench: the closed-loop simulator
    add_capture_commands(commands, shared)  # capture: frames for training
    add_bridge_commands(commands, shared)  # bridge mqtt: the fleet bridge
    add_mcp_commands(commands, shared)  # mcp: the sensor as tools for an agent
    add_record_commands(commands, shared)  # record, blackbox list|pull: recordings (docs/record.md)
    add_view_commands(commands, shared)  # view: the live view in a browser (docs/view.md)
    return parser


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    """Run the CLI; returns the exit code (never raises for device or user errors, nor for Ctrl-C)."""
    out = out or sys.stdout
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on a usage error; here 2 means a device error
        return EXIT_OK if exc.code in (0, None) else EXIT_USER
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    command: Callable[[argparse.Namespace, TextIO], int] = args.func
    try:
        with _sigterm_as_interrupt(), _logging(args):
            return command(args, out)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except CliError as exc:
        return _fail(exc, exc.code)
    except (ValueError, NoSensorFound, OSError) as exc:
        if isinstance(exc, SensorError) and not isinstance(exc, NoSensorFound):
            return _fail(exc, EXIT_DEVICE)
        return _fail(exc, EXIT_USER)
    except RpcError as exc:
        return _fail(exc, EXIT_USER if exc.status in _USER_STATUSES else EXIT_DEVICE)
    except SensorError as exc:
        return _fail(exc, EXIT_DEVICE)


@contextlib.contextmanager
def _logging(args: argparse.Namespace) -> Iterator[None]:
    """While a command runs, the SDK's log records go to stderr: warnings, or more with -v, or errors with -q.

    The handler sits on the ``seedcam`` logger and is removed afterwards, so that a
    program or test calling :func:`main` keeps its own logging set-up.
    """
    verbose = getattr(args, "verbose", 0) or 0
    trace = getattr(args, "trace", False)
    if getattr(args, "quiet", False) and not verbose:
        level = logging.ERROR
    else:
        level = (logging.WARNING, logging.INFO)[verbose] if verbose < 2 else logging.DEBUG
    detailed = verbose > 0 or trace
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter("%(asctime)s.%(msecs)03d %(levelname)s %(name)s: %(message)s", "%H:%M:%S")
        if detailed
        else logging.Formatter("seedcam: %(levelname)s: %(message)s")
    )
    loggers = {"seedcam": level, TRACE_LOGGER: logging.DEBUG if trace else logging.NOTSET}
    previous = {name: logging.getLogger(name).level for name in loggers}
    for name, value in loggers.items():
        logging.getLogger(name).setLevel(value)
    root = logging.getLogger("seedcam")
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
        for name, value in previous.items():
            logging.getLogger(name).setLevel(value)


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
    message = exc.strerror if isinstance(exc, OSError) and exc.errno is None and exc.strerror else exc
    sys.stderr.write(f"seedcam: error: {message}\n")
    return code


if __name__ == "__main__":
    sys.exit(main())

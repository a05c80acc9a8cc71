"""``seedcam-firmware``: run the sensor daemon.

Exit codes: 0 clean shutdown, 1 configuration / model / camera error, 2 link error.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

from seedcam.errors import LinkBroken, SensorError
from seedcam.transport.url_options import TransportUrl, parse_transport_url
from seedcam_firmware import __version__
from seedcam_firmware.errors import FirmwareError
from seedcam_firmware.launcher import format_ready_line
from seedcam_firmware.usb.cli import add_usb_gadget_command

__all__ = ["main"]

EXIT_OK, EXIT_USER, EXIT_LINK = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seedcam-firmware", description="seedcam sensor firmware daemon")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run the sensor: capture, inference, link")
    run.add_argument("--config", type=Path, help="TOML config file (default: built-in defaults)")
    run.add_argument(
        "--camera", dest="camera.source", help="camera source: synthetic, v4l2, picamera2, video, folder, sim"
    )
    run.add_argument("--camera-device", dest="camera.device", help="V4L2 device path or index")
    run.add_argument("--camera-path", dest="camera.path", help="video file or image folder")
    run.add_argument("--fps", dest="camera.fps", type=float, help="frame rate")
    run.add_argument("--seed", dest="camera.seed", type=int, help="synthetic scene seed")
    run.add_argument(
        "--link",
        dest="link.url",
        help="link: 'pty' (prints the pty path), 'pty:///stable/path', a serial device, tcp-listen://host:port, "
        "ffs:///dev/ffs-seedcam (USB bulk; see usb-gadget)",
    )
    run.add_argument("--pty-link", help="link on a pty, with this stable symlink to it (instead of --link)")
    run.add_argument(
        "--protocol",
        dest="link.protocol",
        choices=("seedcam", "visionseed"),
        help="wire protocol of the link: seedcam (default) or visionseed (VisionSeed host SDKs work unchanged)",
    )
    run.add_argument(
        "--throttle", type=int, metavar="BAUD", help="limit the link to a UART's line rate, e.g. 115200 (8N1)"
    )
    run.add_argument("--tasks", help="comma-separated tasks to enable, e.g. lane")
    run.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override any config key, e.g. --set camera.fps=15 (repeatable)",
    )
    run.add_argument("--lane-precision", dest="models.lane_precision", choices=("int8", "float32"))
    run.add_argument(
        "--persist-config",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="write config changes made by the host back into --config, atomically (rewrites the file; "
        "its comments are not kept), and keep <config>.last-good for safe boot. The default with --config; "
        "--no-persist-config: host changes last until the firmware restarts",
    )
    run.add_argument("--log-level", default="warning", choices=("debug", "info", "warning", "error"))
    supervise = commands.add_parser(
        "supervise",
        help="run the firmware from its A/B slots; a new firmware runs on trial and is reverted "
        "unless it confirms its health (takes the options of run)",
    )
    supervise.add_argument("run_args", nargs=argparse.REMAINDER, help="-- then the options for run")
    check = commands.add_parser("check-config", help="validate a config file and print it resolved")
    check.add_argument("config", type=Path)
    add_usb_gadget_command(commands)
    return parser


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set needs KEY=VALUE, got {item!r}")
        overrides[key.strip()] = value
    overrides.update({key: value for key, value in vars(args).items() if "." in key and value is not None})
    if args.tasks is not None:
        overrides["tasks.enabled"] = [t.strip() for t in args.tasks.split(",") if t.strip()]
    if args.pty_link:
        chosen = parse_transport_url(str(overrides.get("link.url", "pty")))
        if chosen.base != "pty":
            raise ValueError("--pty-link makes the link a pty; it cannot go with --link " + str(overrides["link.url"]))
        # a ?throttle= of the configured pty stays: the symlink names the pty, the rate is the line's
        overrides["link.url"] = str(TransportUrl(f"pty://{Path(args.pty_link).absolute()}", chosen.throttle))
    if "camera.device" in overrides and str(overrides["camera.device"]).isdigit():
        overrides["camera.device"] = int(overrides["camera.device"])
    return overrides


def persists(args: argparse.Namespace) -> bool:
    """Whether ``run`` writes host changes into its config file: with ``--config``, unless ``--no-persist-config``."""
    if args.persist_config is None:
        return args.config is not None
    return bool(args.persist_config) and args.config is not None


def _run(args: argparse.Namespace) -> int:
    from seedcam_firmware.safe_boot import boot

    overrides = _overrides(args)
    throttle = args.throttle
    if throttle is None and args.pty_link and args.config is not None:
        throttle = _file_throttle(args.config)  # a pty link of the file's with a ?throttle= keeps its line rate
    if throttle is not None:
        overrides["link.url"] = _throttled_link(args.config, overrides, throttle)
    # a config file that does not boot falls back to the last one that did (seedcam_firmware.safe_boot)
    daemon = boot(args.config, overrides, persist=persists(args))
    signal.signal(signal.SIGTERM, lambda *_: daemon.request_stop())
    signal.signal(signal.SIGINT, lambda *_: daemon.request_stop())
    config = daemon.config
    running = config.tasks.enabled  # the enabled tasks whose models loaded
    not_loaded = "".join(f"; {name} not loaded" for name in daemon.missing_tasks)
    fallback = "; config fallback: the last good config runs" if daemon.config_fallback else ""
    details = f"camera {config.camera.source}, tasks {','.join(running) or 'none'}{not_loaded}{fallback}"
    print(format_ready_line(daemon.link_path, details), flush=True)  # what the launcher waits for
    try:
        while not daemon.wait(0.5):
            pass
    finally:
        daemon.stop()
    from seedcam_firmware.supervisor import EXIT_RESTART, SUPERVISED_ENV

    if daemon.restart_requested and os.environ.get(SUPERVISED_ENV):
        return EXIT_RESTART  # the supervisor restarts us (into a new firmware slot on trial, after an update)
    if daemon.restart_requested:  # a host asked for a reboot: start afresh, same arguments, same process id
        sys.stdout.flush()
        os.execv(sys.executable, [sys.executable, "-m", "seedcam_firmware.cli", *sys.argv[1:]])
    return EXIT_OK


def _throttled_link(config_path: Path | None, overrides: dict[str, Any], baud: int) -> str:
    """``link.url`` (from the overrides, the environment or the file) limited to ``baud``."""
    from seedcam_firmware.config import load_config

    try:
        url = load_config(config_path, overrides).link.url
    except FirmwareError:  # the file does not load: safe boot decides; --throttle goes with the overrides' link
        url = load_config(None, overrides).link.url
    return str(parse_transport_url(url).with_throttle(baud))


def _file_throttle(config_path: Path) -> int | None:
    """The ``?throttle=`` of the config file's own pty link, if it has one."""
    from seedcam_firmware.config import load_config

    try:
        url = parse_transport_url(load_config(config_path, {}).link.url)
    except FirmwareError:  # the file does not load: safe boot decides
        return None
    return url.throttle if url.base == "pty" or url.base.startswith("pty://") else None


def _supervise(args: argparse.Namespace) -> int:
    from seedcam_firmware.config import load_config
    from seedcam_firmware.supervisor import supervise

    run_args = [a for a in args.run_args if a != "--"]
    run = _parser().parse_args(["run", *run_args])
    config = load_config(run.config, _overrides(run))
    if not config.updates.dir:
        raise ValueError("supervise needs updates.dir (where the firmware slots are)")
    return supervise(run_args, Path(config.updates.dir), config.updates.confirm_timeout_s)


def _check(args: argparse.Namespace) -> int:
    from seedcam_firmware.config import load_config, to_toml

    sys.stdout.write(to_toml(load_config(args.config)))
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=getattr(args, "log_level", "warning").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        if args.command == "supervise":
            return _supervise(args)
        if args.command == "usb-gadget":
            return int(args.usb_func(args))
        return _run(args) if args.command == "run" else _check(args)
    except LinkBroken as exc:
        print(f"seedcam-firmware: link error: {exc}", file=sys.stderr)
        return EXIT_LINK
    except (FirmwareError, SensorError, ValueError) as exc:
        print(f"seedcam-firmware: error: {exc}", file=sys.stderr)
        return EXIT_USER
    except KeyboardInterrupt:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())

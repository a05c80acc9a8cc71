"""``seedcam-firmware usb-gadget up|down|bind|unbind``: the board's USB gadget from the command line.

A board's boot sequence (see ``deploy/systemd/seedcam.service``)::

    seedcam-firmware usb-gadget up --config /etc/seedcam/firmware.toml
    seedcam-firmware run --config /etc/seedcam/firmware.toml --link ffs:///dev/ffs-seedcam &
    seedcam-firmware usb-gadget bind        # waits until the daemon has written its descriptors
    ...
    seedcam-firmware usb-gadget down        # after the daemon stopped
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_usb_gadget_command", "spec_from_args"]


def add_usb_gadget_command(commands: Any) -> None:
    """Add ``usb-gadget`` to the firmware CLI's subcommands (an ``argparse`` subparsers object)."""
    gadget = commands.add_parser(
        "usb-gadget",
        help="create/remove the USB gadget (CDC-ACM + vendor bulk via FunctionFS) and bind it to the UDC",
    )
    actions = gadget.add_subparsers(dest="usb_action", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--name", default="seedcam", help="configfs gadget name (default seedcam)")
    common.add_argument("--ffs-mount", default="/dev/ffs-seedcam", help="functionfs mountpoint")
    up = actions.add_parser("up", parents=[common], help="create the gadget and mount functionfs (no bind)")
    up.add_argument("--config", type=Path, help="firmware config: its device.serial_number becomes the USB serial")
    up.add_argument("--serial", help="USB serial number (default: the config's device.serial_number)")
    up.add_argument("--bind", action="store_true", help="also bind (waits for the firmware's descriptors)")
    up.add_argument("--udc", help="USB device controller (default: the only one in /sys/class/udc)")
    up.add_argument("--timeout", type=float, default=10.0, help="seconds --bind waits for FunctionFS (default 10)")
    up.set_defaults(usb_func=_up)
    bind = actions.add_parser("bind", parents=[common], help="bind to the UDC once FunctionFS is ready")
    bind.add_argument("--udc", help="USB device controller (default: the only one)")
    bind.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for FunctionFS (default 10)")
    bind.set_defaults(usb_func=_bind)
    unbind = actions.add_parser("unbind", parents=[common], help="unbind from the UDC (the host sees an unplug)")
    unbind.set_defaults(usb_func=_unbind)
    down = actions.add_parser("down", parents=[common], help="unbind, unmount and remove the gadget")
    down.set_defaults(usb_func=_down)


def spec_from_args(args: argparse.Namespace) -> Any:
    """Build the :class:`~seedcam_firmware.usb.gadget.GadgetSpec` the arguments describe.

    Raises:
        ConfigError: the ``--config`` file is invalid.
    """
    from seedcam_firmware.usb.gadget import GadgetSpec

    serial = getattr(args, "serial", None)
    if not serial:
        from seedcam_firmware.config import load_config

        serial = load_config(getattr(args, "config", None)).device.serial_number
    return GadgetSpec(serial=serial, name=args.name, ffs_mount=args.ffs_mount)


def _up(args: argparse.Namespace) -> int:
    from seedcam_firmware.usb import gadget

    spec = spec_from_args(args)
    gadget.up(spec)
    if args.bind:
        gadget.bind(spec, args.udc, args.timeout)
    return 0


def _bind(args: argparse.Namespace) -> int:
    from seedcam_firmware.usb import gadget

    gadget.bind(_plain_spec(args), args.udc, args.timeout)
    return 0


def _unbind(args: argparse.Namespace) -> int:
    from seedcam_firmware.usb import gadget

    gadget.unbind(_plain_spec(args))
    return 0


def _down(args: argparse.Namespace) -> int:
    from seedcam_firmware.usb import gadget

    gadget.down(_plain_spec(args))
    return 0


def _plain_spec(args: argparse.Namespace) -> Any:
    from seedcam_firmware.usb.gadget import GadgetSpec

    return GadgetSpec(serial="-", name=args.name, ffs_mount=args.ffs_mount)  # serial unused by bind/unbind/down

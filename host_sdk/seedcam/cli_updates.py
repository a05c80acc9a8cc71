"""``seedcam models list|push|activate|rollback|delete`` and ``seedcam flash``: updates from the command line.

Each command is a thin layer over :mod:`seedcam.updates`. A push shows a
progress bar (bytes, rate, ETA) and resumes by itself when the link breaks; run
the same command again after giving up and it continues from what the sensor
already holds. Exit codes as for every ``seedcam`` command: 0 ok, 1 user error
(a bad bundle file, an unknown slot), 2 device or link error (including a
bundle the sensor refused; the message names the reason).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

import seedcam
from seedcam import updates
from seedcam._cli_common import EXIT_OK, Command, to_jsonable
from seedcam.bundle import read_bundle
from seedcam.errors import BundleError, UpdateRefused

__all__ = ["add_update_commands"]


@contextmanager
def _progress_bar(enabled: bool, label: str) -> Iterator[Callable[[updates.PushProgress], None] | None]:
    if not enabled:
        yield None
        return
    from tqdm import tqdm

    bar: Any = None

    def update(p: updates.PushProgress) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=p.total, initial=p.resumed_from, unit="B", unit_scale=True, unit_divisor=1024, desc=label)
            if p.resumed_from:
                bar.write(f"resuming at {p.resumed_from} of {p.total} bytes (already on the sensor)")
        bar.update(p.acked - bar.n)

    try:
        yield update
    finally:
        if bar is not None:
            bar.close()


def _local_errors(function: Command) -> Command:
    """A bundle file that is not valid is the user's error (exit 1), not the device's."""

    def wrapped(args: argparse.Namespace, out: TextIO) -> int:
        try:
            return function(args, out)
        except UpdateRefused:
            raise
        except BundleError as exc:
            raise ValueError(str(exc)) from exc

    return wrapped


def _describe(install: updates.InstallResult) -> str:
    if install.restart_pending:
        return f"{install.bundle_id} installed in firmware slot {install.slot}; the sensor restarts into it on trial"
    state = "active" if install.activated else "installed (not active)"
    previous = f"; previous slot {install.previous_slot} kept for rollback" if install.previous_slot else ""
    return (
        f"{install.bundle_id} in {install.name} slot {install.slot}: self-test passed "
        f"(max error {install.selftest_max_error:.3g}), {state}{previous}"
    )


def _describe_held(install: updates.InstallResult) -> str:
    """A push the sensor answered from a slot that already held the bundle."""
    state = "on trial" if install.restart_pending else "active" if install.activated else "not active"
    previous = f"; previous slot {install.previous_slot} kept for rollback" if install.previous_slot else ""
    return (
        f"{install.bundle_id} is already installed in {install.name} slot {install.slot} ({state}){previous}; "
        "nothing was sent"
    )


def _print_slots(groups: tuple[updates.SlotGroup, ...], out: TextIO, as_json: bool) -> None:
    if as_json:
        for group in groups:
            out.write(json.dumps(to_jsonable(group)) + "\n")
        return
    if not groups:
        out.write("no bundles installed (the built-in models run)\n")
    for group in groups:
        running = f"  (running {group.running})" if group.running else ""
        out.write(f"{group.name}: security counter >= {group.security_counter}{running}\n")
        for s in group.slots:
            flags = ",".join(f for f, on in (("active", s.active), ("previous", s.previous)) if on) or "-"
            what = f"{s.bundle_id:<28} {s.sha256[:12]}  counter {s.security_counter}" if s.bundle_id else "(empty)"
            out.write(f"  slot {s.slot}  {s.state:<9} {flags:<15} {what}\n")


def _models_action(args: argparse.Namespace, out: TextIO) -> int:
    if args.action == "push":
        if args.target is None:
            raise ValueError("models push needs a BUNDLE file")
        read_bundle(args.target)  # a truncated or damaged file is refused before the port is opened
    with seedcam.open(args.port, serial=args.serial, timeout=args.timeout) as sensor:
        if args.action == "list":
            _print_slots(updates.list_slots(sensor), out, args.json)
            return EXIT_OK
        if args.action == "push":
            with _progress_bar(not args.quiet, Path(args.target).name) as progress:
                result = updates.push_bundle(
                    sensor, args.target, activate=not args.no_activate, progress=progress, resume_timeout=args.resume
                )
            if result.already_installed:
                out.write(_describe_held(result.install) + "\n")
                return EXIT_OK
            resumed = f", resumed at byte {result.resumed_from}" if result.resumed_from else ""
            out.write(
                f"{_describe(result.install)}\n{result.payload_size} bytes in {result.seconds:.1f} s "
                f"({result.data_rate_bps / 1024:.1f} KiB/s{resumed})\n"
            )
            return EXIT_OK
        if args.target is None:
            raise ValueError(f"models {args.action} needs a task name, e.g. lane")
        if args.action == "activate":
            if args.slot is None:
                raise ValueError("models activate needs TASK and SLOT (a or b)")
            out.write(_describe(updates.activate_slot(sensor, args.target, args.slot)) + "\n")
        elif args.action == "rollback":
            out.write(_describe(updates.rollback(sensor, args.target)) + "\n")
        else:
            if args.slot is None:
                raise ValueError("models delete needs TASK and SLOT (a or b)")
            _print_slots(updates.delete_slot(sensor, args.target, args.slot), out, args.json)
    return EXIT_OK


def cmd_flash(args: argparse.Namespace, out: TextIO) -> int:
    """``seedcam flash BUNDLE``: install a firmware bundle; it must confirm its health or is reverted."""
    read_bundle(args.bundle)
    with seedcam.open(args.port, serial=args.serial, timeout=args.timeout) as sensor:
        before = sensor.device_info.firmware_version if sensor.device_info else "?"
        with _progress_bar(not args.quiet, Path(args.bundle).name) as progress:
            result = updates.flash(sensor, args.bundle, progress=progress, confirm_timeout=args.confirm_timeout)
    out.write(f"firmware {before} -> {result.version} (slot {result.slot}): running and confirmed\n")
    return EXIT_OK


def add_update_commands(
    commands: argparse._SubParsersAction,  # type: ignore[type-arg]
    models: argparse.ArgumentParser,
    list_models: Command,
) -> None:
    """Give ``seedcam models`` its actions and add ``seedcam flash``.

    ``seedcam models`` alone keeps listing the running models (``list_models``).
    """
    models.add_argument(
        "action",
        nargs="?",
        choices=("list", "push", "activate", "rollback", "delete"),
        help="list: slots on the sensor; push BUNDLE; activate TASK SLOT; rollback TASK; delete TASK SLOT",
    )
    models.add_argument("target", nargs="?", help="a bundle file (push) or a task name, e.g. lane")
    models.add_argument("slot", nargs="?", choices=("a", "b"), help="slot a or b (activate, delete)")
    models.add_argument("--no-activate", action="store_true", help="push: install into the inactive slot only")
    models.add_argument("--resume", type=float, default=60.0, help="push: seconds to wait for a broken link (60)")
    models.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    action = _local_errors(_models_action)

    def dispatch(args: argparse.Namespace, out: TextIO) -> int:
        return list_models(args, out) if args.action is None else action(args, out)

    models.set_defaults(func=dispatch)

    flash = commands.add_parser("flash", help="install a firmware bundle (restarts on trial; reverted unless healthy)")
    flash.add_argument("bundle", type=Path)
    flash.add_argument("--confirm-timeout", type=float, default=90.0, help="seconds to wait for confirmation (90)")
    flash.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    flash.set_defaults(func=_local_errors(cmd_flash))

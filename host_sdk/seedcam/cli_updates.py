"""``seedcam models slots|push|activate|rollback|delete`` and ``seedcam flash``: updates from the command line.

Each command is a thin layer over :mod:`seedcam.updates`. A push shows a
progress bar (bytes, rate, ETA; ``-q`` hides it) and resumes by itself when the
link breaks; run the same command again after giving up and it continues from
what the sensor already holds. Exit codes as for every ``seedcam`` command: 0 ok,
1 user error (a bad bundle file, an unknown slot), 2 device or link error
(including a bundle the sensor refused; the message names the reason).
``--json`` prints each result as one JSON object per line.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from seedcam import updates
from seedcam._cli_common import EXIT_OK, Command, write_json
from seedcam._cli_port import open_sensor
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
            write_json(out, group)
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


def cmd_slots(args: argparse.Namespace, out: TextIO) -> int:
    """``seedcam models slots``: the A/B update slots of each task (and the firmware) on the sensor."""
    with open_sensor(args) as sensor:
        _print_slots(updates.list_slots(sensor), out, args.json)
    return EXIT_OK


def cmd_push(args: argparse.Namespace, out: TextIO) -> int:
    """``seedcam models push BUNDLE``: send a model bundle, self-test it on the sensor and activate it."""
    read_bundle(args.bundle)  # a truncated or damaged file is refused before the port is opened
    with open_sensor(args) as sensor:
        with _progress_bar(not args.quiet, Path(args.bundle).name) as progress:
            result = updates.push_bundle(
                sensor, args.bundle, activate=not args.no_activate, progress=progress, resume_timeout=args.resume
            )
    if args.json:
        write_json(out, result)
    elif result.already_installed:
        out.write(_describe_held(result.install) + "\n")
    else:
        resumed = f", resumed at byte {result.resumed_from}" if result.resumed_from else ""
        out.write(
            f"{_describe(result.install)}\n{result.payload_size} bytes in {result.seconds:.1f} s "
            f"({result.data_rate_bps / 1024:.1f} KiB/s{resumed})\n"
        )
    return EXIT_OK


def cmd_activate(args: argparse.Namespace, out: TextIO) -> int:
    """``seedcam models activate TASK SLOT``: self-test a slot again and make it the active one."""
    with open_sensor(args) as sensor:
        install = updates.activate_slot(sensor, args.task, args.slot)
    _report_install(args, out, install)
    return EXIT_OK


def cmd_rollback(args: argparse.Namespace, out: TextIO) -> int:
    """``seedcam models rollback TASK``: go back to the previous slot of a task (or ``firmware``)."""
    with open_sensor(args) as sensor:
        install = updates.rollback(sensor, args.task)
    _report_install(args, out, install)
    return EXIT_OK


def cmd_delete(args: argparse.Namespace, out: TextIO) -> int:
    """``seedcam models delete TASK SLOT``: empty an inactive slot; prints the slots left."""
    with open_sensor(args) as sensor:
        _print_slots(updates.delete_slot(sensor, args.task, args.slot), out, args.json)
    return EXIT_OK


def _report_install(args: argparse.Namespace, out: TextIO, install: updates.InstallResult) -> None:
    if args.json:
        write_json(out, install)
    else:
        out.write(_describe(install) + "\n")


def cmd_flash(args: argparse.Namespace, out: TextIO) -> int:
    """``seedcam flash BUNDLE``: install a firmware bundle; it must confirm its health or is reverted."""
    read_bundle(args.bundle)
    with open_sensor(args) as sensor:
        before = sensor.device_info.firmware_version if sensor.device_info else "?"
        with _progress_bar(not args.quiet, Path(args.bundle).name) as progress:
            result = updates.flash(sensor, args.bundle, progress=progress, confirm_timeout=args.confirm_timeout)
    if args.json:
        write_json(out, result)
    else:
        out.write(f"firmware {before} -> {result.version} (slot {result.slot}): running and confirmed\n")
    return EXIT_OK


def add_update_commands(
    commands: argparse._SubParsersAction,  # type: ignore[type-arg]
    models: argparse._SubParsersAction,  # type: ignore[type-arg]
    shared: argparse.ArgumentParser,
) -> None:
    """Add ``seedcam models slots|push|activate|rollback|delete`` and ``seedcam flash``.

    Args:
        commands: the ``seedcam`` sub-commands (``flash`` goes there).
        models: the ``seedcam models`` sub-commands.
        shared: the parent parser of the options every command takes (``-p``, ``--json``, ``-q`` ...).
    """

    def add(
        group: argparse._SubParsersAction,  # type: ignore[type-arg]
        name: str,
        function: Command,
        text: str,
    ) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = group.add_parser(name, parents=[shared], help=text, description=f"{text}.")
        parser.set_defaults(func=_local_errors(function))
        return parser

    add(models, "slots", cmd_slots, "the A/B update slots per task: active, previous (rollback target), counters")
    push = add(models, "push", cmd_push, "install a model bundle (progress bar; resumes by itself)")
    push.add_argument("bundle", type=Path, metavar="BUNDLE", help="the .scb bundle file")
    push.add_argument("--no-activate", action="store_true", help="install into the inactive slot only")
    push.add_argument("--resume", type=float, default=60.0, help="seconds to wait for a broken link (default 60)")
    activate = add(models, "activate", cmd_activate, "self-test a slot again, then make it the active one")
    activate.add_argument("task", metavar="TASK", help="a task name, e.g. lane")
    activate.add_argument("slot", choices=("a", "b"), metavar="SLOT", help="a or b")
    rollback = add(models, "rollback", cmd_rollback, "go back to the previous slot of a task")
    rollback.add_argument("task", metavar="TASK", help="a task name, e.g. lane, or firmware")
    delete = add(models, "delete", cmd_delete, "empty an inactive slot, then list the slots")
    delete.add_argument("task", metavar="TASK", help="a task name, e.g. lane")
    delete.add_argument("slot", choices=("a", "b"), metavar="SLOT", help="a or b")

    flash = add(commands, "flash", cmd_flash, "install a firmware bundle (restarts on trial; reverted unless healthy)")
    flash.add_argument("bundle", type=Path, metavar="BUNDLE", help="the .scb firmware bundle")
    flash.add_argument("--confirm-timeout", type=float, default=90.0, help="seconds to wait for confirmation (90)")

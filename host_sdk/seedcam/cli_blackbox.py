"""``seedcam blackbox list|pull|trigger``: the sensor's black box (docs/record.md).

- ``seedcam blackbox list``: the frozen files, oldest first, one a line (name, trigger,
  seconds before the trigger, results, size, reason); ``--json``: one JSON array.
- ``seedcam blackbox pull NAME -o x.mcap``: fetch one in pieces (progress on stderr, ``-q``
  none) and write it as an MCAP recording (``seedcam[record]``); one summary line at the end.
- ``seedcam blackbox trigger [--reason TEXT]``: freeze one now; prints its line.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from typing import Any, TextIO

from seedcam._cli_common import EXIT_OK, CliError, byte_size, write_json
from seedcam._cli_port import open_sensor
from seedcam.types import BlackBoxFileInfo

__all__ = ["add_blackbox_commands", "cmd_blackbox_list", "cmd_blackbox_pull", "cmd_blackbox_trigger"]


def _line(info: BlackBoxFileInfo) -> str:
    return (
        f"{info.name}  {info.trigger:<9}  {info.seconds:5.1f} s  {info.results:5d} results  "
        f"{byte_size(info.size):>9}  {info.reason}"
    )


def _fields(info: BlackBoxFileInfo) -> dict[str, Any]:
    return {**asdict(info), "seconds": round(info.seconds, 3)}


def cmd_blackbox_list(args: argparse.Namespace, out: TextIO) -> int:
    """Print the frozen black-box files, oldest first."""
    with open_sensor(args) as sensor:
        files = sensor.blackbox_list()
    if args.json:
        write_json(out, [_fields(info) for info in files])
    elif not files:
        out.write("no black-box files on the sensor (a trigger freezes one: seedcam blackbox trigger)\n")
    else:
        for info in files:
            out.write(_line(info) + "\n")
    return EXIT_OK


def cmd_blackbox_pull(args: argparse.Namespace, out: TextIO) -> int:
    """Fetch one frozen file and write it as an MCAP recording."""
    if not str(args.output).endswith(".mcap"):
        raise CliError(f"-o {args.output}: the black box is written as MCAP; name a .mcap file")

    def progress(received: int, total: int) -> None:
        if not args.quiet and not args.json:
            sys.stderr.write(f"\r{args.name}: {byte_size(received)} of {byte_size(total)}")
            sys.stderr.flush()

    with open_sensor(args) as sensor:
        info = sensor.blackbox_pull(args.name, args.output, progress=progress)
    if args.json:
        write_json(out, {**_fields(info), "path": str(args.output)})
        return EXIT_OK
    if not args.quiet:
        sys.stderr.write("\n")
    out.write(
        f"pulled {info.name} ({info.trigger}: {info.reason}): {info.results} results, "
        f"{info.seconds:.1f} s before the trigger, {byte_size(info.size)} -> {args.output}\n"
    )
    return EXIT_OK


def cmd_blackbox_trigger(args: argparse.Namespace, out: TextIO) -> int:
    """Freeze the black box now."""
    with open_sensor(args) as sensor:
        info = sensor.blackbox_trigger(args.reason)
    if args.json:
        write_json(out, _fields(info))
    else:
        out.write(f"froze {_line(info)}\n")
    return EXIT_OK


def add_blackbox_commands(commands: Any, shared: argparse.ArgumentParser) -> None:
    """Add ``blackbox list|pull|trigger`` to the ``seedcam`` sub-commands."""
    text = "the sensor's black box: the seconds before a trigger (lane lost, a label, CRC errors, a host)"
    blackbox = commands.add_parser("blackbox", parents=[shared], help=text, description=f"{text}.")
    actions = blackbox.add_subparsers(dest="blackbox_command", metavar="ACTION", required=True)
    listing = "list the frozen files, oldest first"
    actions.add_parser("list", parents=[shared], help=listing, description=f"{listing}.").set_defaults(
        func=cmd_blackbox_list
    )
    pulling = "fetch one frozen file and write it as an MCAP recording"
    pull = actions.add_parser("pull", parents=[shared], help=pulling, description=f"{pulling}.")
    pull.add_argument("name", help="a name from 'seedcam blackbox list'")
    pull.add_argument("-o", "--output", required=True, help="the .mcap file to write (replaced if it exists)")
    pull.set_defaults(func=cmd_blackbox_pull)
    triggering = "freeze the black box now"
    trigger = actions.add_parser("trigger", parents=[shared], help=triggering, description=f"{triggering}.")
    trigger.add_argument("--reason", default="", help="kept in the file (default: 'a host asked')")
    trigger.set_defaults(func=cmd_blackbox_trigger)

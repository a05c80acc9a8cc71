"""``seedcam mcp``: serve the sensor to an AI agent over MCP (stdio); read-only unless ``--allow-write``.

stdout carries the MCP protocol, so everything else (logs, errors) goes to stderr.
An agent's config names the command, e.g. ``{"command": "seedcam", "args": ["mcp", "-p", "/dev/ttyACM0"]}``.
"""

from __future__ import annotations

import argparse
from typing import TextIO

from seedcam._cli_common import EXIT_OK
from seedcam._cli_port import open_sensor

__all__ = ["add_mcp_commands"]


def cmd_mcp(args: argparse.Namespace, out: TextIO) -> int:
    """``seedcam mcp [--allow-write]``: the MCP server, until the client closes stdin."""
    from seedcam.fleet.mcp_server import build_server

    with open_sensor(args) as sensor:
        build_server(sensor, allow_write=args.allow_write).run("stdio")
    return EXIT_OK


def add_mcp_commands(
    commands: argparse._SubParsersAction,  # type: ignore[type-arg]
    shared: argparse.ArgumentParser,
) -> None:
    """Add ``seedcam mcp``.

    Args:
        commands: the ``seedcam`` sub-commands.
        shared: the parent parser of the options every command takes.
    """
    text = "serve the sensor to an AI agent over MCP on stdio (read-only tools unless --allow-write)"
    mcp = commands.add_parser("mcp", parents=[shared], help=text, description=f"{text}.")
    mcp.add_argument(
        "--allow-write", action="store_true", help="also offer config_set and select_tasks (they change the sensor)"
    )
    mcp.set_defaults(func=cmd_mcp)

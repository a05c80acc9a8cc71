"""``seedcam view``: the live view in a browser (:mod:`seedcam.view`, extra ``seedcam[view]``).

Opens the sensor, starts its preview stream and serves the page on ``--bind`` (127.0.0.1) and
``--http-port`` (8765) until Ctrl-C; prints the URL to open. Off a loopback address the URL carries
a token every request must show. ``--read-only`` disables every control; ``--catalog URL``
lists a model catalog and installs from it with one click.
"""

from __future__ import annotations

import argparse
from typing import TextIO

from seedcam._cli_common import EXIT_INTERRUPTED, EXIT_USER, CliError
from seedcam._cli_port import open_sensor
from seedcam.errors import CatalogError

__all__ = ["add_view_commands", "cmd_view"]


def _load_view() -> object:
    """The viewer package, or a clear error when the extra is not installed."""
    try:
        import seedcam.view
    except ImportError as exc:
        raise CliError(f"seedcam view needs the view extra: pip install 'seedcam[view]' ({exc})", EXIT_USER) from exc
    return seedcam.view


def cmd_view(args: argparse.Namespace, out: TextIO) -> int:
    """``seedcam view``: serve the live view until interrupted."""
    _load_view()
    from seedcam.view import ViewOptions, ViewServer

    if not 0 < args.preview_fps <= 60:
        raise CliError(f"--preview-fps must be more than 0 and at most 60, got {args.preview_fps:g}", EXIT_USER)
    if not 0 <= args.http_port <= 65535:
        raise CliError(f"--http-port must be 0..65535, got {args.http_port}", EXIT_USER)
    catalog = None
    if args.catalog:
        from seedcam.cli_catalog import catalog_from_args

        try:
            catalog = catalog_from_args(args)
        except CatalogError as exc:
            raise CliError(str(exc), EXIT_USER) from exc
    preview = None if args.no_preview else (args.preview_fps, args.preview_quality, args.preview_width)
    options = ViewOptions(token=args.token, read_only=args.read_only, preview=preview, catalog=catalog)
    with open_sensor(args) as sensor:
        try:
            server = ViewServer(sensor, args.bind, args.http_port, options)
        except OSError as exc:
            raise CliError(f"cannot serve on {args.bind}:{args.http_port}: {exc.strerror or exc}", EXIT_USER) from exc
        info = sensor.device_info
        what = f"{info.board} {info.serial_number}" if info else sensor.url
        out.write(f"seedcam view of {what} on {server.url}" + (" (read-only)" if args.read_only else "") + "\n")
        out.flush()
        server.run()  # until a signal: uvicorn handles SIGINT/SIGTERM itself and returns
    return EXIT_INTERRUPTED  # also where the caller ignores SIGINT (uvicorn then re-raises nothing)


def add_view_commands(
    commands: argparse._SubParsersAction,  # type: ignore[type-arg]
    shared: argparse.ArgumentParser,
) -> None:
    """Add ``seedcam view``.

    Args:
        commands: the top-level sub-commands.
        shared: the parent parser of the options every command takes.
    """
    text = "a live view in the browser: preview, overlays, HUD and controls"
    view = commands.add_parser("view", parents=[shared], help=text, description=f"{text}.")
    view.add_argument(
        "--bind", default="127.0.0.1", metavar="ADDRESS", help="address to serve on (default 127.0.0.1: this machine)"
    )
    view.add_argument("--http-port", type=int, default=8765, metavar="PORT", help="TCP port (default 8765; 0: any)")
    view.add_argument("--token", help="the token another address requires (default: a random one, printed)")
    view.add_argument("--read-only", action="store_true", help="show only: every control is disabled")
    view.add_argument("--preview-fps", type=float, default=10.0, help="preview JPEGs a second wanted (default 10)")
    view.add_argument("--preview-quality", type=int, default=70, help="preview JPEG quality 1..100 (default 70)")
    view.add_argument("--preview-width", type=int, default=320, help="largest preview width in pixels (default 320)")
    view.add_argument("--no-preview", action="store_true", help="results only, no preview stream")
    view.add_argument("--catalog", metavar="URL", help="a model catalog to list and install from")
    view.add_argument("--trust", action="append", metavar="KEY", help="a trusted catalog signing key (repeatable)")
    view.add_argument("--timeout-catalog", type=float, default=30.0, metavar="S", help="seconds per download step")
    view.set_defaults(func=cmd_view)

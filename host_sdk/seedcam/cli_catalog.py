"""``seedcam models available|install``: a model catalog from the command line (:mod:`seedcam.catalog`).

The catalog is ``--catalog URL``, else ``$SEEDCAM_CATALOG``, else ``catalog`` in the config
file (``~/.config/seedcam/seedcam.toml``); the keys its index and bundles must be signed by are
``--trust KEY`` (repeatable: 64 hex digits or a ``.pub`` file), else ``$SEEDCAM_CATALOG_KEYS``,
else ``catalog_keys`` in the config file. ``available`` lists the catalog without opening a
sensor; ``install`` fetches and checks the bundle completely, then opens the sensor and pushes
it with a progress bar. A catalog or bundle that does not verify is a user error (exit 1) and
nothing is sent; a sensor that refuses the bundle is a device error (exit 2).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from seedcam import catalog as catalog_api
from seedcam._cli_common import EXIT_OK, EXIT_USER, CliError, Command, write_json
from seedcam._cli_config import load_tool_config, tool_config_path
from seedcam._cli_port import open_sensor
from seedcam.errors import CatalogError

__all__ = ["add_catalog_commands", "catalog_from_args"]


def catalog_from_args(args: argparse.Namespace) -> catalog_api.Catalog:
    """The verified catalog that ``--catalog``/``--trust``, the environment or the config file name.

    Raises:
        CliError: no catalog named anywhere (exit 1).
        CatalogError: it cannot be read or does not verify.
    """
    config = load_tool_config()
    url = getattr(args, "catalog", None) or os.environ.get(catalog_api.CATALOG_ENV, "").strip() or config.catalog
    if not url:
        raise CliError(
            f"no catalog: pass --catalog URL, set ${catalog_api.CATALOG_ENV} or catalog in {tool_config_path()}",
            EXIT_USER,
        )
    keys: list[str] = list(getattr(args, "trust", None) or [])
    if not keys:
        env_keys = os.environ.get(catalog_api.KEYS_ENV, "").strip()
        keys = catalog_api.split_keys(env_keys) if env_keys else list(config.catalog_keys)
    return catalog_api.load_catalog(url, keys, timeout=args.timeout_catalog)


def _catalog_errors(function: Command) -> Command:
    """A catalog that does not verify, or a name it lacks, is the user's error: one line, exit 1."""

    def wrapped(args: argparse.Namespace, out: TextIO) -> int:
        try:
            return function(args, out)
        except CatalogError as exc:
            raise CliError(str(exc), EXIT_USER) from exc

    return wrapped


def _metrics_text(metrics: dict[str, float], limit: int = 2) -> str:
    """The first headline figures, each with the independent world's beside it (a model is as good as its worst)."""
    shown = []
    for name in [k for k in metrics if "." not in k][:limit]:
        other = metrics.get(f"other_world.{name}")
        shown.append(f"{name} {metrics[name]:.3g}" + (f" (other world {other:.3g})" if other is not None else ""))
    return ", ".join(shown)


def cmd_available(args: argparse.Namespace, out: TextIO) -> int:
    """``seedcam models available``: the bundles of the catalog, newest version of each model first."""
    cat = catalog_from_args(args)
    entries = cat.entries if args.all else cat.latest()
    if args.json:
        for entry in entries:
            write_json(out, {**entry.to_json(), "id": entry.id, "url": cat.bundle_url(entry)})
        return EXIT_OK
    out.write(f"catalog {cat.url}: {len(cat.entries)} bundles, signed by key {cat.key_id}\n")
    for e in entries:
        out.write(
            f"{e.id:<24} {e.task:<9} {e.precision:<8} {catalog_api.size_text(e.size):>9}  "
            f"firmware >= {e.min_firmware:<7} {_metrics_text(dict(e.metrics))}\n"
        )
    return EXIT_OK


@contextmanager
def _progress_bar(enabled: bool, label: str) -> Iterator[Callable[[int, int], None] | None]:
    if not enabled:
        yield None
        return
    from tqdm import tqdm

    bar: Any = None

    def update(sent: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=label)
        bar.update(sent - bar.n)

    try:
        yield update
    finally:
        if bar is not None:
            bar.close()


def cmd_install(args: argparse.Namespace, out: TextIO) -> int:
    """``seedcam models install NAME[@VERSION]``: fetch, check and push a bundle from the catalog."""
    name, version = catalog_api.parse_model_ref(args.model)
    cat = catalog_from_args(args)
    entry = cat.find(name, version)
    # every check, before the port opens; install pushes the bundle as parsed here
    verified = catalog_api.fetch_verified(cat, entry, timeout=args.timeout_catalog)
    with open_sensor(args) as sensor:
        with _progress_bar(not args.quiet, entry.id) as progress:
            result = catalog_api.install(
                sensor,
                cat,
                entry.name,
                entry.version,
                progress,
                activate=not args.no_activate,
                timeout=args.timeout_catalog,
                data=verified,
            )
    install = result.install
    if args.json:
        write_json(out, {"entry": entry.to_json(), "push": result})
        return EXIT_OK
    if result.already_installed:
        out.write(f"{entry.id} is already installed in {install.name} slot {install.slot}; nothing was sent\n")
        return EXIT_OK
    state = "active" if install.activated else "installed (not active)"
    previous = f"; previous slot {install.previous_slot} kept for rollback" if install.previous_slot else ""
    out.write(
        f"{entry.id} from {cat.url} in {install.name} slot {install.slot}: signature and sha256 verified, "
        f"self-test passed (max error {install.selftest_max_error:.3g}), {state}{previous}\n"
        f"{result.payload_size} bytes in {result.seconds:.1f} s\n"
    )
    return EXIT_OK


def add_catalog_commands(
    models: argparse._SubParsersAction,  # type: ignore[type-arg]
    shared: argparse.ArgumentParser,
) -> None:
    """Add ``seedcam models available|install``.

    Args:
        models: the ``seedcam models`` sub-commands.
        shared: the parent parser of the options every command takes.
    """

    def add(name: str, function: Command, text: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = models.add_parser(name, parents=[shared], help=text, description=f"{text}.")
        parser.set_defaults(func=_catalog_errors(function))
        parser.add_argument(
            "--catalog",
            metavar="URL",
            help=f"catalog folder, file:// or https:// URL (default: ${catalog_api.CATALOG_ENV}, else the config file)",
        )
        parser.add_argument(
            "--trust",
            action="append",
            metavar="KEY",
            help=f"a trusted signing key: .pub file or 64 hex digits (default: ${catalog_api.KEYS_ENV}, else config)",
        )
        parser.add_argument(
            "--timeout-catalog", type=float, default=30.0, metavar="S", help="seconds per download step (30)"
        )
        return parser

    available = add("available", cmd_available, "the models of a catalog: name@version, task, size, metrics")
    available.add_argument("--all", action="store_true", help="every version, not only the newest of each model")
    install = add("install", cmd_install, "fetch a model from the catalog, verify it, then push it to the sensor")
    install.add_argument("model", metavar="NAME[@VERSION]", help="e.g. lane-v3 (the newest) or lane-v3@3.0.0")
    install.add_argument("--no-activate", action="store_true", help="install into the inactive slot only")

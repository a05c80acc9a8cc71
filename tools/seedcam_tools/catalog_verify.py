"""``seedcam-tools catalog verify DIR|URL --trust KEY``: check a whole catalog as a host installing from it would.

First the index: its signature against the trusted keys, then its entries
(:func:`seedcam.catalog.load_catalog`); a failure there stops the check (nothing in an index
that does not verify can be believed). Then every entry's bundle, each on its own, with the
same checks ``seedcam models install`` makes before a byte goes to a sensor
(:func:`seedcam.catalog.fetch_bundle`: read up to its size, size and sha256 against the entry,
the payload hashes, the header's name, version and task, the signature by the entry's key).
A release pipeline runs it on the folder ``catalog build`` wrote, and on the mirror it was
copied to::

    seedcam-tools catalog verify site --trust keys/release.pub
    seedcam-tools catalog verify https://models.example.com/seedcam/ --trust keys/release.pub --json

Exit status 0 when every bundle verified, 1 (one line naming the bad entries) otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from seedcam.catalog import KEYS_ENV, fetch_bundle, load_catalog, size_text, split_keys
from seedcam.errors import CatalogError

__all__ = ["CatalogCheck", "EntryCheck", "add_verify_command", "verify_catalog"]

EXIT_OK, EXIT_BAD = 0, 1


@dataclass(frozen=True)
class EntryCheck:
    """The check of one entry's bundle.

    Attributes:
        id: ``name@version``.
        task: the task it runs as.
        precision: ``int8`` or ``float32``.
        size: the bytes the entry states.
        url: where its bundle was read from (empty when the entry names no usable location).
        error: why it failed; empty when it verified.
    """

    id: str
    task: str
    precision: str
    size: int
    url: str
    error: str = ""

    @property
    def ok(self) -> bool:
        """Whether the bundle verified."""
        return not self.error

    @property
    def label(self) -> str:
        """``name@version precision``: how a bad entry is named."""
        return f"{self.id} {self.precision}".strip()


@dataclass(frozen=True)
class CatalogCheck:
    """The check of a catalog whose index verified.

    Attributes:
        url: the index's URL.
        key_id: the key that signed the index.
        entries: each entry's check, in the index's order (by name, then version).
    """

    url: str
    key_id: str
    entries: tuple[EntryCheck, ...]

    @property
    def bad(self) -> tuple[EntryCheck, ...]:
        """The entries whose bundle did not verify."""
        return tuple(e for e in self.entries if not e.ok)


def verify_catalog(url: str, trusted_keys: Sequence[str | bytes] | None, *, timeout: float = 30.0) -> CatalogCheck:
    """Check a catalog's index, then every bundle it lists.

    Args:
        url: a catalog folder (a path, ``file://``, ``https://``) or its ``.json`` index.
        trusted_keys: the keys index and bundles must be signed by (raw, hex or ``.pub`` paths);
            None: ``$SEEDCAM_CATALOG_KEYS``.
        timeout: seconds each network operation may wait.

    Returns:
        Every entry's result; a bundle that fails does not stop the others being checked.

    Raises:
        CatalogError: the index cannot be read, is not signed by a trusted key, was altered, or is malformed.
    """
    catalog = load_catalog(url, trusted_keys, timeout=timeout)
    checks = []
    for entry in catalog.entries:
        where = ""
        error = ""
        try:
            where = catalog.bundle_url(entry)
            fetch_bundle(catalog, entry, timeout=timeout)
        except CatalogError as exc:
            error = str(exc)
        checks.append(EntryCheck(entry.id, entry.task, entry.precision, entry.size, where, error))
    return CatalogCheck(catalog.url, catalog.key_id, tuple(checks))


def _table(check: CatalogCheck) -> str:
    lines = [
        f"catalog {check.url}: {len(check.entries)} bundles, index signed by key {check.key_id}",
        f"{'model':<24} {'task':<9} {'precision':<9} {'size':>9}  check",
    ]
    for e in check.entries:
        lines.append(f"{e.id:<24} {e.task:<9} {e.precision:<9} {size_text(e.size):>9}  {'ok' if e.ok else e.error}")
    good = len(check.entries) - len(check.bad)
    lines.append(f"{good} of {len(check.entries)} bundles verified")
    return "\n".join(lines) + "\n"


def _keys(args: argparse.Namespace) -> list[str] | None:
    """``--trust`` (repeatable, or several separated by commas), else None: ``$SEEDCAM_CATALOG_KEYS``."""
    given = [k for item in args.trust or [] for k in split_keys(item)]
    return given or None


def cmd_verify(args: argparse.Namespace) -> int:
    """``seedcam-tools catalog verify DIR|URL --trust KEY [--json]``."""
    keys = _keys(args)
    if keys is None and not os.environ.get(KEYS_ENV, "").strip():
        raise ValueError(f"catalog verify needs --trust KEY (a .pub file or 64 hex digits) or ${KEYS_ENV}")
    check = verify_catalog(args.catalog, keys, timeout=args.timeout)
    if args.json:
        entries = [{**asdict(e), "ok": e.ok} for e in check.entries]
        document = {"catalog": check.url, "key_id": check.key_id, "ok": not check.bad, "entries": entries}
        sys.stdout.write(json.dumps(document) + "\n")
    else:
        sys.stdout.write(_table(check))
    if check.bad:
        names = ", ".join(e.label for e in check.bad)
        sys.stderr.write(f"seedcam-tools: error: {len(check.bad)} of {len(check.entries)} bundles failed: {names}\n")
        return EXIT_BAD
    return EXIT_OK


def add_verify_command(which: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``verify`` to the ``seedcam-tools catalog`` sub-commands."""
    verify = which.add_parser(
        "verify",
        help="check a catalog's signature and every bundle in it (size, sha256, signature)",
        description="Check a catalog's index signature, then each bundle as 'seedcam models install' would; "
        "exit 1 naming the bundles that fail.",
    )
    verify.add_argument("catalog", metavar="DIR|URL", help="catalog folder, file:// or https:// URL, or its .json")
    verify.add_argument(
        "--trust",
        action="append",
        metavar="KEY",
        help=f"a trusted signing key: .pub file or 64 hex digits (repeatable; default ${KEYS_ENV})",
    )
    verify.add_argument("--json", action="store_true", help="one JSON document instead of the table")
    verify.add_argument("--timeout", type=float, default=30.0, metavar="S", help="seconds per download step (30)")
    verify.set_defaults(func=cmd_verify)

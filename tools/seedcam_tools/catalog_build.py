"""``seedcam-tools catalog build``: turn model folders into signed ``.scb`` bundles and a signed ``catalog.json``.

For each model folder under ``--models`` (a folder with ``manifest.json``, as ``models/lane``)
one precision (the manifest's default, or ``--precision``) becomes a bundle signed with the
key (:func:`seedcam_tools.bundles.build_model_bundle`, :func:`seedcam.bundle.sign_bundle`),
written to ``OUT/bundles/<name>-<version>-<precision>.scb``. The index ``OUT/catalog.json``
lists each bundle's name, task, version, precision, sha256 and size of the file, key id,
minimum firmware and headline metrics from the folder's ``metrics.json``; ``catalog.json.sig``
signs it (:func:`seedcam.catalog.sign_catalog_bytes`).

A catalog grows release by release: when ``OUT`` already holds a catalog that verifies with
the same key, its entries that were not rebuilt are kept, as long as their bundle files are
still there and pass every check a host installing them makes (size, sha256, payload hashes,
name, version and task, signature by this key: :func:`seedcam.catalog.verify_entry_bytes`).
Files are written atomically (temp file, fsync, rename), the index last, so a reader sees the
old catalog or the new one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from seedcam.bundle import key_id, public_key, sign_bundle
from seedcam.catalog import (
    INDEX_FILE,
    SIGNATURE_SUFFIX,
    Catalog,
    CatalogEntry,
    entries_json,
    load_catalog,
    sign_catalog_bytes,
    verify_entry_bytes,
)
from seedcam.errors import CatalogError
from seedcam_firmware.storage.atomic import write_atomically
from seedcam_tools.bundles import build_model_bundle, default_precision, load_private_key
from seedcam_tools.catalog_verify import add_verify_command

__all__ = ["BUNDLES_DIR", "HEADLINE_METRICS", "add_catalog_commands", "build_catalog", "headline_metrics"]

log = logging.getLogger(__name__)

#: where the bundles go inside the catalog folder
BUNDLES_DIR = "bundles"
#: the figures of a model's ``metrics.json`` a catalog shows (those the model has)
HEADLINE_METRICS = (
    "map50",
    "recall",
    "accuracy",
    "top_k_accuracy",
    "line_accuracy",
    "cer",
    "given_box_line_accuracy",
    "two_stage_line_accuracy",
    "offset_mae_m",
    "heading_mae_deg",
    "status_accuracy",
)
#: where they are read: heldout set of the training world, then the two worlds (ARCHITECTURE.md, decision 11)
_SOURCES = (("heldout",), ("worlds", "random"), ("worlds", "other"))
_PREFIX = {("heldout",): "", ("worlds", "random"): "random_world.", ("worlds", "other"): "other_world."}


def headline_metrics(metrics: Mapping[str, Any], precision: str) -> dict[str, float]:
    """The headline figures of one precision: ``map50``, ``other_world.map50`` ... (those present)."""
    out: dict[str, float] = {}
    for path in _SOURCES:
        node: Any = metrics
        for step in (*path, precision):
            node = node.get(step) if isinstance(node, Mapping) else None
        if not isinstance(node, Mapping):
            continue
        for name in HEADLINE_METRICS:
            value = node.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out[_PREFIX[path] + name] = float(f"{value:.6g}")  # six significant digits
    return out


def _model_folders(models: Path, only: Sequence[str]) -> list[Path]:
    folders = sorted(p.parent for p in Path(models).glob("*/manifest.json"))
    if only:
        chosen = [f for f in folders if f.name in only]
        missing = sorted(set(only) - {f.name for f in chosen})
        if missing:
            have = ", ".join(f.name for f in folders) or "none"
            raise ValueError(f"no model folder {', '.join(missing)} in {models} (it has {have})")
        folders = chosen
    if not folders:
        raise ValueError(f"{models} holds no model folder (a folder with manifest.json)")
    return folders


def _kept_entries(out: Path, public: bytes, rebuilt: set[tuple[str, str, str]]) -> list[CatalogEntry]:
    """The entries of a catalog already in ``out`` (signed by this key) whose bundles pass every check."""
    if not (out / INDEX_FILE).exists():
        return []
    try:
        previous: Catalog = load_catalog(str(out), [public])
    except CatalogError as exc:
        log.warning("not keeping the entries of %s: %s", out / INDEX_FILE, exc)
        return []
    kept = []
    for entry in previous.entries:
        if (entry.name, entry.version, entry.precision) in rebuilt:
            continue
        path = out / entry.file
        try:
            data = path.read_bytes()
        except OSError:
            log.warning("dropping %s from the catalog: %s is gone", entry.id, path)
            continue
        try:
            verify_entry_bytes(entry, data, [public])
        except CatalogError as exc:
            log.warning("dropping %s from the catalog: %s", entry.id, exc)
            continue
        kept.append(entry)
    return kept


def build_catalog(
    models: Path,
    out: Path,
    private_key: bytes,
    *,
    precision: str | None = None,
    security_counter: int = 0,
    target: str = "any",
    only: Sequence[str] = (),
) -> Catalog:
    """Write signed bundles of the model folders and a signed index into ``out``.

    Args:
        models: a folder of model folders (``models/``).
        out: the catalog folder (created).
        private_key: raw 32-byte ed25519 key that signs the bundles and the index.
        precision: ``int8`` or ``float32`` for every model (default: each manifest's).
        security_counter: the bundles' anti-rollback counter.
        target: the board the bundles are for (``any``).
        only: the names of the model folders to build (default: all).

    Returns:
        The catalog as a reader sees it (read back and verified).

    Raises:
        ValueError: no model folders, or a named one is missing.
        BundleError: a folder is not a model bundle, or lacks the precision.
    """
    public = public_key(private_key)
    signer = key_id(public)
    (out / BUNDLES_DIR).mkdir(parents=True, exist_ok=True)
    built: list[CatalogEntry] = []
    for folder in _model_folders(models, only):
        chosen = precision or default_precision(folder)
        bundle = sign_bundle(
            build_model_bundle(folder, precision=chosen, security_counter=security_counter, target=target),
            private_key,
        )
        h = bundle.header
        relative = f"{BUNDLES_DIR}/{h.name}-{h.version}-{chosen}.scb"
        data = bundle.to_bytes()
        write_atomically(out / relative, data, mode=0o644)
        manifest = json.loads((folder / "manifest.json").read_text())
        metrics_path = folder / "metrics.json"
        metrics = json.loads(metrics_path.read_text()) if metrics_path.exists() else {}
        built.append(
            CatalogEntry(
                name=h.name,
                task=h.task,
                version=h.version,
                sha256=hashlib.sha256(data).hexdigest(),
                size=len(data),
                key_id=signer,
                min_firmware=h.min_firmware_version,
                metrics=headline_metrics(metrics, chosen),
                file=relative,
                precision=chosen,
                title=str(manifest.get("name", ""))[:200],
            )
        )
    rebuilt = {(e.name, e.version, e.precision) for e in built}
    index = entries_json([*_kept_entries(out, public, rebuilt), *built], signer)
    write_atomically(out / (INDEX_FILE + SIGNATURE_SUFFIX), sign_catalog_bytes(index, private_key), mode=0o644)
    write_atomically(out / INDEX_FILE, index, mode=0o644)
    return load_catalog(str(out), [public])


def cmd_build(args: argparse.Namespace) -> int:
    """``seedcam-tools catalog build``."""
    catalog = build_catalog(
        args.models,
        args.out,
        load_private_key(args.key),
        precision=args.precision,
        security_counter=args.counter,
        target=args.target,
        only=args.model,
    )
    for e in catalog.entries:
        sys.stdout.write(f"{e.id:<24} {e.task:<9} {e.precision:<8} {e.size:>9} bytes  {e.file}\n")
    sys.stdout.write(
        f"wrote {args.out / INDEX_FILE} ({len(catalog.entries)} bundles, signed by key {catalog.key_id})\n"
    )
    return 0


def add_catalog_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``catalog build`` and ``catalog verify`` to the ``seedcam-tools`` sub-commands."""
    catalog = commands.add_parser("catalog", help="model catalogs: signed bundles plus a signed catalog.json")
    which = catalog.add_subparsers(dest="catalog", required=True)
    build = which.add_parser("build", help="bundle and sign model folders, and write a signed catalog.json")
    build.add_argument("--models", type=Path, default=Path("models"), help="folder of model folders (models)")
    build.add_argument("--out", type=Path, required=True, help="catalog folder to write (kept entries stay)")
    build.add_argument("--key", type=Path, required=True, help="private key (.key, from 'bundle keygen')")
    build.add_argument("--model", action="append", default=[], help="only this model folder (repeatable)")
    build.add_argument("--precision", choices=("int8", "float32"), help="default: each manifest's default")
    build.add_argument("--counter", type=int, default=0, help="security counter of the bundles (default 0)")
    build.add_argument("--target", default="any", help="board the bundles are for (default any)")
    build.set_defaults(func=cmd_build)
    add_verify_command(which)

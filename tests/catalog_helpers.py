"""Helpers for the model catalog tests: signed catalogs from the shipped models, a copy at a new version,
re-signing an altered index, and an https server with a CA made in the test.
"""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from helpers import MODELS
from tls_certs import make_test_certificates

from seedcam.catalog import INDEX_FILE, SIGNATURE_SUFFIX, sign_catalog_bytes
from seedcam_tools.bundles import KeyPair

__all__ = [
    "DETECT_VERSION",
    "LANE_VERSION",
    "NEXT_LANE_VERSION",
    "OCR_VERSION",
    "model_at_version",
    "resign_index",
    "tls_catalog_server",
]

#: the shipped lane bundle's version, and the later one the catalog tests publish beside it
LANE_VERSION: str = json.loads((MODELS / "lane" / "manifest.json").read_text())["version"]
_major, _minor, _patch = (int(v) for v in LANE_VERSION.split("."))
NEXT_LANE_VERSION = f"{_major}.{_minor + 1}.0"
#: the shipped detector's and reader's versions, as a catalog built from models/ lists them
DETECT_VERSION: str = json.loads((MODELS / "detect" / "manifest.json").read_text())["version"]
OCR_VERSION: str = json.loads((MODELS / "ocr" / "manifest.json").read_text())["version"]


def model_at_version(root: Path, name: str, version: str) -> Path:
    """A copy of the shipped model folder ``name`` under ``root/name`` whose manifest says ``version``."""
    folder = root / name
    shutil.copytree(MODELS / name, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["version"] = version
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return root


def resign_index(
    catalog: Path, key: KeyPair, edit: dict[str, object], *, entry: str, top: dict[str, object] | None = None
) -> None:
    """Change fields of one entry (and ``top`` fields) of ``catalog/catalog.json`` and sign it with ``key``."""
    index = json.loads((catalog / INDEX_FILE).read_text())
    (target,) = [e for e in index["models"] if e["name"] == entry]
    target.update(edit)
    index.update(top or {})
    data = json.dumps(index, indent=2).encode()
    (catalog / INDEX_FILE).write_bytes(data)
    (catalog / (INDEX_FILE + SIGNATURE_SUFFIX)).write_bytes(sign_catalog_bytes(data, key.private))


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


@contextmanager
def tls_catalog_server(catalog: Path, certs: Path) -> Iterator[tuple[str, Path]]:
    """Serve ``catalog`` over https on 127.0.0.1; yields (the catalog's URL, the CA's PEM file)."""
    ca_pem, cert_pem, key_pem = make_test_certificates(certs)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_pem, key_pem)
    handler = functools.partial(_QuietHandler, directory=str(catalog))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, name="tls-catalog", daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/", ca_pem
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)

"""``ota/set``: install a model named by a signed catalog entry, never by bytes sent over MQTT.

The message is ``{"name", "version", "sha256", "key_id", "signature"}``: the signature is
ed25519 over :data:`OTA_CONTEXT` + the canonical JSON of name, version and sha256, by a
key the bridge trusts (the catalog's keys). Anyone who may publish on the broker can ask;
only an operator holding a trusted key can make a request the bridge accepts. Then the
bridge loads the catalog (its index signature checked by :func:`seedcam.catalog.load_catalog`),
requires the entry there to have the same sha256, and installs it with
:func:`seedcam.catalog.install`, which checks the downloaded bundle's size, sha256 and own
signature before a byte goes to the sensor (and the sensor checks the signature again).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from seedcam import _signing
from seedcam.errors import CatalogError

__all__ = [
    "OTA_CONTEXT",
    "PROGRESS_STEP",
    "OtaPolicy",
    "OtaRequest",
    "install_ota",
    "sign_ota_request",
    "verify_ota_request",
]

OTA_CONTEXT = b"seedcam-ota-v1\x00"
PROGRESS_STEP = 10  #: ``ota/state`` reports the push's progress at every 10 %
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class OtaPolicy:
    """Where bundles come from and which keys sign requests and bundles.

    Attributes:
        catalog_url: the catalog (``file://`` folder or ``https://`` index).
        trusted_keys: raw 32-byte ed25519 public keys.
    """

    catalog_url: str
    trusted_keys: tuple[bytes, ...]


@dataclass(frozen=True)
class OtaRequest:
    """A verified ``ota/set``."""

    name: str
    version: str
    sha256: str
    key_id: str


def _message(name: str, version: str, sha256: str) -> bytes:
    """What a request signs after :data:`OTA_CONTEXT`: the canonical JSON of name, version and sha256."""
    body = json.dumps({"name": name, "sha256": sha256, "version": version}, sort_keys=True, separators=(",", ":"))
    return body.encode()


def sign_ota_request(name: str, version: str, sha256: str, private_key: bytes) -> dict[str, str]:
    """The ``ota/set`` payload for a catalog entry, signed with a raw 32-byte ed25519 private key.

    Raises:
        ValueError: the key is not 32 bytes.
        BundleError: ``cryptography`` is not installed.
    """
    signer, signature = _signing.sign(private_key, OTA_CONTEXT, _message(name, version, sha256))
    return {"name": name, "version": version, "sha256": sha256, "key_id": signer, "signature": signature.hex()}


def verify_ota_request(payload: Any, trusted_keys: Sequence[bytes]) -> OtaRequest:
    """Check an ``ota/set`` payload (parsed JSON).

    Raises:
        ValueError: a field is missing or malformed (the message names it).
        SignatureError: ``reason`` ``unknown_key`` (no trusted key has that id) or ``bad_signature``.
    """
    if not isinstance(payload, dict):
        raise ValueError("ota/set: a JSON object with name, version, sha256, key_id and signature expected")
    if "bundle" in payload or "data" in payload:
        raise ValueError("ota/set takes a catalog entry, never the bundle's bytes")
    fields = {}
    for name in ("name", "version", "sha256", "key_id", "signature"):
        value = payload.get(name)
        if not isinstance(value, str) or not value:
            raise ValueError(f"ota/set: {name!r} missing or not a string")
        fields[name] = value
    if not _SHA256.match(fields["sha256"]):
        raise ValueError("ota/set: sha256 must be 64 lower-case hex digits")
    try:
        signature = bytes.fromhex(fields["signature"])
        bad = "ota/set: the signature does not verify"
    except ValueError:  # not hex: refused as a bad signature once the key is known to be trusted
        signature, bad = b"", "ota/set: the signature is not hex"
    _signing.verify(
        fields["key_id"],
        signature,
        OTA_CONTEXT,
        _message(fields["name"], fields["version"], fields["sha256"]),
        trusted_keys,
        unknown_key=f"ota/set signed by key {fields['key_id']}, which the bridge does not trust",
        bad_signature=bad,
    )
    return OtaRequest(fields["name"], fields["version"], fields["sha256"], fields["key_id"])


def install_ota(
    sensor: Any, policy: OtaPolicy, request: OtaRequest, report: Callable[[str, dict[str, Any]], None]
) -> Any:
    """Find the entry in the catalog, check it is the one signed for, and install it.

    Args:
        sensor: the open :class:`seedcam.Sensor`.
        policy: the catalog and keys.
        request: a verified request.
        report: ``report(state, details)`` as it goes: ``installing`` with ``sent`` / ``total``
            payload bytes and ``percent``, first at 0 and then at every :data:`PROGRESS_STEP` percent.

    Returns:
        The push's :class:`~seedcam.updates.PushResult`.

    Raises:
        CatalogError: the catalog cannot be trusted, has no such entry, its sha256 differs from the
            request's, or the bundle fails a check (nothing was sent).
        UpdateRefused, SensorTimeout, LinkBroken: from the push.
    """
    from seedcam import catalog

    cat = catalog.load_catalog(policy.catalog_url, trusted_keys=list(policy.trusted_keys))
    entry = cat.find(request.name, request.version)
    if entry.sha256 != request.sha256:
        raise CatalogError(
            f"{entry.id}: the catalog's sha256 {entry.sha256[:12]}... "
            f"is not the signed request's {request.sha256[:12]}..."
        )
    report("installing", {"size": entry.size, "sent": 0, "total": 0, "percent": 0})
    return catalog.install(sensor, cat, request.name, request.version, progress=_ProgressSteps(entry.size, report))


class _ProgressSteps:
    """``progress(sent, total)`` of a push, reported as ``installing`` at each :data:`PROGRESS_STEP` percent.

    A push acknowledges every chunk; a retained QoS 1 message per chunk would flood the broker,
    so at most ``100 / PROGRESS_STEP + 1`` reports go out, the last one at 100 %.
    """

    def __init__(self, size: int, report: Callable[[str, dict[str, Any]], None]) -> None:
        self._size = size
        self._report = report
        self._last = 0

    def __call__(self, sent: int, total: int) -> None:
        percent = 100 if total <= 0 or sent >= total else sent * 100 // total
        step = percent - percent % PROGRESS_STEP
        if step > self._last:
            self._last = step
            self._report("installing", {"size": self._size, "sent": sent, "total": total, "percent": percent})

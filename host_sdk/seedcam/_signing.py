"""ed25519 signatures over a context and a message: the one place seedcam signs and verifies.

Every signature seedcam makes or checks is ed25519 over ``context + message``. The context
names what is signed (a bundle's header, a catalog's index, an ``ota/set`` request) and ends
in a NUL byte, so a signature made for one kind never verifies as another. Keys are raw: a
32-byte private key (the seed) and a 32-byte public key, named by :func:`key_id`. The
``cryptography`` package is imported when first needed (the SDK stays light). The callers
(:mod:`seedcam.bundle`, :mod:`seedcam._catalog_format`, :mod:`seedcam.fleet.ota`) keep their
contexts, their signature formats and their wording of a refusal.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from seedcam.errors import BundleError, SignatureError

__all__ = ["key_id", "public_key", "sign", "verify"]


def _ed25519() -> Any:
    try:
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise BundleError("signing and verifying needs the 'cryptography' package") from exc
    return ed25519


def _private(private_key: bytes) -> Any:
    if len(private_key) != 32:
        raise ValueError("an ed25519 private key is 32 bytes")
    return _ed25519().Ed25519PrivateKey.from_private_bytes(private_key)


def _public_bytes(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    raw: bytes = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return raw


def key_id(public_key: bytes) -> str:
    """The id of a raw 32-byte ed25519 public key: the first 16 hex digits of its sha256."""
    return hashlib.sha256(public_key).hexdigest()[:16]


def public_key(private_key: bytes) -> bytes:
    """The raw 32-byte public key of a raw 32-byte ed25519 private key.

    Raises:
        ValueError: the key is not 32 bytes.
        BundleError: ``cryptography`` is not installed.
    """
    return _public_bytes(_private(private_key))


def sign(private_key: bytes, context: bytes, message: bytes) -> tuple[str, bytes]:
    """Sign ``context + message`` with a raw 32-byte ed25519 private key.

    Returns:
        The id of the signing key (:func:`key_id` of its public key) and the 64-byte signature.

    Raises:
        ValueError: the key is not 32 bytes.
        BundleError: ``cryptography`` is not installed.
    """
    key = _private(private_key)
    return key_id(_public_bytes(key)), key.sign(context + message)


def verify(
    signer: str,
    signature: bytes,
    context: bytes,
    message: bytes,
    public_keys: Sequence[bytes],
    *,
    unknown_key: str = "",
    bad_signature: str = "",
) -> str:
    """Check a signature of ``context + message`` by the key ``signer`` names, among raw public keys.

    Args:
        signer: the key id the signature names.
        signature: the signature's bytes (any length: a malformed one does not verify).
        context: what the signer signed before ``message``.
        message: the signed bytes.
        public_keys: the trusted raw 32-byte public keys.
        unknown_key: the refusal's message when no key has the id ``signer`` (the caller's wording).
        bad_signature: the refusal's message when the signature does not verify.

    Returns:
        ``signer``, the id of the key that verified it.

    Raises:
        SignatureError: ``reason`` ``unknown_key`` (no trusted key has that id) or ``bad_signature``.
        BundleError: ``cryptography`` is not installed.
    """
    ed25519 = _ed25519()
    from cryptography.exceptions import InvalidSignature

    for raw in public_keys:
        if key_id(raw) != signer:
            continue
        try:
            ed25519.Ed25519PublicKey.from_public_bytes(raw).verify(signature, context + message)
        except InvalidSignature:
            raise SignatureError(
                "bad_signature", bad_signature or f"the signature does not verify with key {signer}"
            ) from None
        return signer
    raise SignatureError("unknown_key", unknown_key or f"signed by key {signer}, which is not trusted")

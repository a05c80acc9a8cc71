"""The host's link key: how a session finds it and signs its requests with it (see :mod:`seedcam.protocol.signing`).

A key comes from ``seedcam.open(url, link_key=...)`` (bytes, or hex text) or from the
URL option ``?link_key_file=PATH`` (a file holding the key as hex), never both. With
one, the session's encoder signs every request frame; without, nothing changes.
"""

from __future__ import annotations

from typing import Any

from seedcam.protocol.framing import Encoder
from seedcam.protocol.signing import SigningEncoder, parse_key, read_key_file
from seedcam.transport.url_options import parse_transport_url

__all__ = ["session_encoder"]


def session_encoder(url: str, options: dict[str, Any]) -> tuple[Encoder, dict[str, Any]]:
    """The encoder a session for ``url`` sends with, and the options left for the transport.

    Args:
        url: the session's transport URL (may carry ``?link_key_file=PATH``).
        options: the session's keyword options; ``link_key`` is taken out of them.

    Raises:
        ValueError: both a ``link_key`` and a ``link_key_file`` given, or a key that is
            not hex, too short (under 16 bytes) or in a file that cannot be read.
    """
    rest = dict(options)
    key: bytes | str | None = rest.pop("link_key", None)
    key_file = parse_transport_url(url).link_key_file
    if key is not None and key_file is not None:
        raise ValueError(f"{url!r} names a link_key_file and a link_key was given too; give one")
    if key_file is not None:
        key = read_key_file(key_file)
    if key is None:
        return Encoder(), rest
    return SigningEncoder(parse_key(key)), rest

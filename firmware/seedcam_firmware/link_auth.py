"""The device's side of link authentication: its key, and which links may go without one.

A cable (a UART, USB, a pty, an in-process pair) is trusted: whoever holds it
holds the board. A network listener is not: ``tcp-listen://`` on anything but a
loopback address needs the shared link key (``link.key_file``, the device's own
config only), and then every request must be signed with it
(:mod:`seedcam.protocol.signing`; docs/link-auth.md). Without a key such a
listener refuses to start with :class:`LinkKeyRequired`.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from seedcam.protocol.signing import Verifier, read_key_file
from seedcam.transport.url_options import parse_transport_url
from seedcam_firmware.errors import ConfigError

__all__ = ["LinkKeyRequired", "check_listener", "is_network_listener", "load_verifier"]

_LOOPBACK_NAMES = ("localhost",)


class LinkKeyRequired(ConfigError):
    """A link that is not a cable (``tcp-listen://`` beyond loopback) has no link key."""


def is_network_listener(url: str) -> bool:
    """True for a ``tcp-listen://`` URL whose host is not a loopback address (an empty host is every interface)."""
    base = parse_transport_url(url).base
    parts = urlsplit(base)
    if parts.scheme != "tcp-listen":
        return False
    host = parts.hostname or ""
    if host in _LOOPBACK_NAMES:
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:  # empty (all interfaces) or a name: reachable from beyond this board
        return True


def check_listener(url: str, *, authenticated: bool) -> None:
    """Refuse a network listener without a link key, and a device URL that names a host's key file.

    Raises:
        LinkKeyRequired: ``url`` listens beyond loopback and requests are not authenticated.
        ConfigError: ``url`` carries ``?link_key_file=`` (a host's option; the device's key is ``link.key_file``).
    """
    if parse_transport_url(url).link_key_file is not None:
        raise ConfigError(f"link.url {url!r}: link_key_file is a host's option; the device's key is link.key_file")
    if is_network_listener(url) and not authenticated:
        raise LinkKeyRequired(
            f"link.url {url!r} listens beyond loopback without a link key: set link.key_file "
            "(a file holding the shared key as hex, see docs/link-auth.md), or listen on 127.0.0.1"
        )


def load_verifier(key_file: str) -> Verifier | None:
    """The verifier for the key in ``link.key_file``; None when it is empty (no key).

    Raises:
        ConfigError: the file is unreadable or does not hold a key of at least 16 bytes.
    """
    if not key_file:
        return None
    try:
        return Verifier(read_key_file(key_file))
    except ValueError as exc:
        raise ConfigError(f"link.key_file: {exc}") from exc

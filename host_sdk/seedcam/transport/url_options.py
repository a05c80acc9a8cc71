"""The options a transport URL may carry after ``?``: one parser for the SDK and the firmware.

Any transport URL may end in ``?throttle=BAUD`` (see :mod:`seedcam.transport.throttle`):
both directions then behave like a UART of that line rate (8N1). A host's URL may
also carry ``link_key_file=PATH``: the file holding the link key that signs its
requests (see :mod:`seedcam.protocol.signing`; the device's own key is its config's
``link.key_file``). Options join with ``&``; anything else after ``?`` is an error,
so that a misspelt option cannot go unnoticed.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode

__all__ = ["MIN_THROTTLE_BAUD", "TransportUrl", "parse_transport_url"]

#: the slowest line rate ``?throttle=`` accepts
MIN_THROTTLE_BAUD = 300
_KNOWN = ("throttle", "link_key_file")


@dataclass(frozen=True)
class TransportUrl:
    """A transport URL split into what opens the transport and its options.

    Attributes:
        base: the URL without its ``?...`` part (what a backend's ``from_url`` takes).
        throttle: ``?throttle=BAUD``, the emulated UART line rate, or None.
        link_key_file: ``?link_key_file=PATH``, the host's link key file, or None.
    """

    base: str
    throttle: int | None = None
    link_key_file: str | None = None

    def __str__(self) -> str:
        options: dict[str, object] = {}
        if self.throttle is not None:
            options["throttle"] = self.throttle
        if self.link_key_file is not None:
            options["link_key_file"] = self.link_key_file
        return f"{self.base}?{urlencode(options, safe='/')}" if options else self.base

    def with_throttle(self, baud: int | None) -> TransportUrl:
        """The same URL throttled to ``baud`` (None: not throttled)."""
        if baud is not None:
            _check_baud(baud, f"{self.base}?throttle={baud}")
        return TransportUrl(self.base, baud, self.link_key_file)


def parse_transport_url(url: str) -> TransportUrl:
    """Split ``url`` into its base and its options.

    Raises:
        ValueError: a malformed query, an option given twice, an unknown option,
            a throttle that is not a whole baud rate of at least :data:`MIN_THROTTLE_BAUD`,
            or an empty ``link_key_file``.
    """
    base, sep, query = url.partition("?")
    if not sep:
        return TransportUrl(url)
    params: dict[str, str] = {}
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
    except ValueError as exc:
        raise ValueError(f"malformed options {query!r} in {url!r}: {exc}") from exc
    for key, value in pairs:
        if key in params:
            raise ValueError(f"query parameter {key!r} given twice in {url!r}")
        params[key] = value
    unknown = set(params) - set(_KNOWN)
    if unknown:
        raise ValueError(f"unknown query parameter(s) {sorted(unknown)} in {url!r}; known: {', '.join(_KNOWN)}")
    key_file = params.get("link_key_file")
    if key_file is not None and not key_file:
        raise ValueError(f"empty link_key_file in {url!r}")
    text = params.get("throttle")
    if text is None:
        return TransportUrl(base, None, key_file)
    if not text.isdigit():
        raise ValueError(f"bad throttle in {url!r}: a baud rate is a whole number, got {text!r}")
    baud = int(text)
    _check_baud(baud, url)
    return TransportUrl(base, baud, key_file)


def _check_baud(baud: int, url: str) -> None:
    if isinstance(baud, bool) or not isinstance(baud, int) or baud < MIN_THROTTLE_BAUD:
        raise ValueError(f"bad throttle in {url!r}: the baud rate must be at least {MIN_THROTTLE_BAUD}, got {baud!r}")

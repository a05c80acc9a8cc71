"""The options a transport URL may carry after ``?``: one parser for the SDK and the firmware.

Any transport URL may end in ``?throttle=BAUD`` (see :mod:`seedcam.transport.throttle`):
both directions then behave like a UART of that line rate (8N1). That is the only
option; anything else after ``?`` is an error, so that a misspelt option cannot go
unnoticed.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl

__all__ = ["MIN_THROTTLE_BAUD", "TransportUrl", "parse_transport_url"]

#: the slowest line rate ``?throttle=`` accepts
MIN_THROTTLE_BAUD = 300
_KNOWN = ("throttle",)


@dataclass(frozen=True)
class TransportUrl:
    """A transport URL split into what opens the transport and its options.

    Attributes:
        base: the URL without its ``?...`` part (what a backend's ``from_url`` takes).
        throttle: ``?throttle=BAUD``, the emulated UART line rate, or None.
    """

    base: str
    throttle: int | None = None

    def __str__(self) -> str:
        return self.base if self.throttle is None else f"{self.base}?throttle={self.throttle}"

    def with_throttle(self, baud: int | None) -> TransportUrl:
        """The same URL throttled to ``baud`` (None: not throttled)."""
        if baud is not None:
            _check_baud(baud, f"{self.base}?throttle={baud}")
        return TransportUrl(self.base, baud)


def parse_transport_url(url: str) -> TransportUrl:
    """Split ``url`` into its base and its options.

    Raises:
        ValueError: a malformed query, an option given twice, an unknown option,
            or a throttle that is not a whole baud rate of at least :data:`MIN_THROTTLE_BAUD`.
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
    text = params.get("throttle")
    if text is None:
        return TransportUrl(base)
    if not text.isdigit():
        raise ValueError(f"bad throttle in {url!r}: a baud rate is a whole number, got {text!r}")
    baud = int(text)
    _check_baud(baud, url)
    return TransportUrl(base, baud)


def _check_baud(baud: int, url: str) -> None:
    if isinstance(baud, bool) or not isinstance(baud, int) or baud < MIN_THROTTLE_BAUD:
        raise ValueError(f"bad throttle in {url!r}: the baud rate must be at least {MIN_THROTTLE_BAUD}, got {baud!r}")

"""The options a transport URL may carry after ``?``: one parser for the SDK and the firmware.

Any transport URL may end in ``?throttle=BAUD`` (see :mod:`seedcam.transport.throttle`):
both directions then behave like a UART of that line rate (8N1). A serial port's URL
(a plain device path) may carry ``baud=BAUD``, the line rate its UART is opened at
(default 921600). Any URL may carry ``trace=1``: every byte read and written is logged
in hex at DEBUG on the ``seedcam.trace`` logger (see :mod:`seedcam.transport.trace`).
A host's URL may also carry ``link_key_file=PATH``: the file holding the link key that
signs its requests (see :mod:`seedcam.protocol.signing`; the device's own key is its
config's ``link.key_file``). Options join with ``&``; anything else after ``?`` is an
error, so that a misspelt option cannot go unnoticed, but for the options of the
scheme's own backend (``replay://run.mcap?speed=2&loop=1``), which stay in the base URL.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode

__all__ = ["MIN_THROTTLE_BAUD", "TransportUrl", "check_baud", "parse_transport_url"]

#: the slowest line rate ``?throttle=`` accepts
MIN_THROTTLE_BAUD = 300
_KNOWN = ("throttle", "link_key_file", "baud", "trace")
#: options that belong to one scheme's backend: they stay in :attr:`TransportUrl.base` for its ``from_url``
_BACKEND_OPTIONS = {"replay": ("speed", "loop")}
#: what a user coming from pyserial may write instead of a known option
_ALIASES = {"baudrate": "baud"}
_FLAGS = {"1": True, "0": False}


@dataclass(frozen=True)
class TransportUrl:
    """A transport URL split into what opens the transport and its options.

    Attributes:
        base: the URL without its ``?...`` part (what a backend's ``from_url`` takes).
        throttle: ``?throttle=BAUD``, the emulated UART line rate, or None.
        link_key_file: ``?link_key_file=PATH``, the host's link key file, or None.
        baud: ``?baud=BAUD``, the line rate a serial port is opened at, or None (the backend's default).
        trace: ``?trace=1``: log every byte read and written (see :mod:`seedcam.transport.trace`).
    """

    base: str
    throttle: int | None = None
    link_key_file: str | None = None
    baud: int | None = None
    trace: bool = False

    def __str__(self) -> str:
        options: dict[str, object] = {}
        if self.throttle is not None:
            options["throttle"] = self.throttle
        if self.link_key_file is not None:
            options["link_key_file"] = self.link_key_file
        if self.baud is not None:
            options["baud"] = self.baud
        if self.trace:
            options["trace"] = 1
        if not options:
            return self.base
        return f"{self.base}{'&' if '?' in self.base else '?'}{urlencode(options, safe='/')}"

    def with_throttle(self, baud: int | None) -> TransportUrl:
        """The same URL throttled to ``baud`` (None: not throttled)."""
        if baud is not None:
            _check_throttle(baud, f"{self.base}?throttle={baud}")
        return dataclasses.replace(self, throttle=baud)

    def with_baud(self, baud: int | None) -> TransportUrl:
        """The same URL with its serial line rate set to ``baud`` (None: the backend's default).

        Raises:
            ValueError: ``baud`` is not a positive whole number.
        """
        if baud is not None:
            check_baud(baud, f"{self.base}?baud={baud}")
        return dataclasses.replace(self, baud=baud)

    def with_trace(self, trace: bool = True) -> TransportUrl:
        """The same URL with its traffic logged (or not)."""
        return dataclasses.replace(self, trace=trace)


def parse_transport_url(url: str) -> TransportUrl:
    """Split ``url`` into its base and its options.

    Raises:
        ValueError: a malformed query, an option given twice, an unknown option,
            a throttle that is not a whole baud rate of at least :data:`MIN_THROTTLE_BAUD`,
            a baud that is not a positive whole number, a trace other than 0 or 1,
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
    scheme = base.partition("://")[0].lower() if "://" in base else ""
    own = {key: params.pop(key) for key in _BACKEND_OPTIONS.get(scheme, ()) if key in params}
    if own:
        base = f"{base}?{urlencode(own, safe='/')}"
    unknown = set(params) - set(_KNOWN)
    if unknown:
        hints = "".join(f" (did you mean {_ALIASES[k]!r}?)" for k in sorted(unknown) if k in _ALIASES)
        known = ", ".join((*_KNOWN, *_BACKEND_OPTIONS.get(scheme, ())))
        raise ValueError(f"unknown query parameter(s) {sorted(unknown)} in {url!r}{hints}; known: {known}")
    key_file = params.get("link_key_file")
    if key_file is not None and not key_file:
        raise ValueError(f"empty link_key_file in {url!r}")
    trace = params.get("trace", "0")
    if trace not in _FLAGS:
        raise ValueError(f"bad trace in {url!r}: use trace=1 or trace=0, got {trace!r}")
    return TransportUrl(
        base,
        _baud_option(params, "throttle", url, _check_throttle),
        key_file,
        _baud_option(params, "baud", url, check_baud),
        _FLAGS[trace],
    )


def _baud_option(params: dict[str, str], name: str, url: str, check: Callable[[int, str], None]) -> int | None:
    text = params.get(name)
    if text is None:
        return None
    if not text.isdigit():
        raise ValueError(f"bad {name} in {url!r}: a baud rate is a whole number, got {text!r}")
    baud = int(text)
    check(baud, url)
    return baud


def check_baud(baud: object, where: str) -> None:
    """Raise ValueError naming ``where`` unless ``baud`` is a positive whole number (bit/s).

    Raises:
        ValueError: ``baud`` is not an ``int`` above 0.
    """
    if isinstance(baud, bool) or not isinstance(baud, int) or baud <= 0:
        raise ValueError(f"bad baud rate in {where!r}: a baud rate is a whole number above 0, got {baud!r}")


def _check_throttle(baud: int, url: str) -> None:
    if isinstance(baud, bool) or not isinstance(baud, int) or baud < MIN_THROTTLE_BAUD:
        raise ValueError(f"bad throttle in {url!r}: the baud rate must be at least {MIN_THROTTLE_BAUD}, got {baud!r}")

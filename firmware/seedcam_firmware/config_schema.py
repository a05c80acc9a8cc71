"""Per-key rules of the firmware configuration: types, ranges, choices, live keys.

A config section is a frozen dataclass deriving from :class:`Section` whose
fields are made with :func:`setting` (the firmware's own sections are in
:mod:`seedcam_firmware.config_sections`, a task's next to the task, see
:mod:`seedcam_firmware.task_catalog`); this module holds the machinery that
checks and coerces a value for one key, so that a file, an environment variable,
a command-line override and a run-time ``config_set`` all follow the same rules
and produce the same error text.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import math
import re
import socket
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Literal, get_args

from seedcam.transport.url_options import MIN_THROTTLE_BAUD, parse_transport_url
from seedcam_firmware.errors import ConfigError, UnknownConfigKey

__all__ = [
    "HOST_POLICIES",
    "LINK_URL_SCHEMES",
    "HostPolicy",
    "KeySpec",
    "Section",
    "check_link_url",
    "coerce_value",
    "default_serial_number",
    "parse_text",
    "section_keys",
    "section_specs",
    "setting",
    "unknown_key_error",
]

#: URL schemes accepted by ``link.url`` besides the bare word ``pty`` and a device path.
LINK_URL_SCHEMES: tuple[str, ...] = ("pty", "tcp-listen", "pair", "ffs")

#: What a host may do to a key over the link (``config_set``, ``config_reset``, VisionSeed ``setConfig``):
#: ``"yes"`` change it; ``"local"`` nothing, only the device's own config file sets it (anything that
#: loads code, names a file or a device, or turns a security check off); ``"allow-list"`` change it
#: to a file inside the folders the device allows (see :mod:`seedcam_firmware.host_policy`).
HostPolicy = Literal["yes", "local", "allow-list"]
HOST_POLICIES: tuple[str, ...] = get_args(HostPolicy)

_META = "seedcam_setting"
_SERIAL_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")


@dataclass(frozen=True)
class _Rules:
    """The checks attached to one dataclass field (see :func:`setting`)."""

    choices: tuple[Any, ...] | None = None
    lo: float | None = None
    hi: float | None = None
    live: bool = False
    is_path: bool = False
    check: Callable[[Any], str | None] | None = None
    doc: str = ""
    host: HostPolicy | None = None


@dataclass(frozen=True)
class KeySpec:
    """Everything known about one dotted config key.

    Attributes:
        key: dotted name, e.g. ``"camera.fps"``.
        type: the annotated Python type (``int``, ``float``, ``str``, ``bool``,
            ``tuple[str, ...]`` or ``str | int``).
        default: a zero-argument callable returning the default value.
        rules: range, choices and other checks.
    """

    key: str
    type: Any
    default: Callable[[], Any]
    rules: _Rules

    @property
    def live(self) -> bool:
        """True when the daemon can apply a change without a restart."""
        return self.rules.live

    @property
    def doc(self) -> str:
        """One-line description of the key."""
        return self.rules.doc

    @property
    def host(self) -> HostPolicy:
        """What a host may do to the key over the link (see :data:`HostPolicy`).

        A key declared without a policy is treated as ``"local"`` (a test requires every key to declare one).
        """
        return self.rules.host or "local"

    @property
    def host_declared(self) -> bool:
        """True when the key's :func:`setting` names its host policy."""
        return self.rules.host is not None


def setting(
    default: Any = dataclasses.MISSING,
    *,
    factory: Callable[[], Any] | None = None,
    choices: Iterable[Any] | None = None,
    lo: float | None = None,
    hi: float | None = None,
    live: bool = False,
    is_path: bool = False,
    check: Callable[[Any], str | None] | None = None,
    doc: str = "",
    host: HostPolicy | None = None,
) -> Any:
    """Declare a config field with its validation rules.

    Args:
        default: the default value (immutable).
        factory: computes the default instead of ``default``.
        choices: the only accepted values.
        lo: inclusive lower bound for numbers.
        hi: inclusive upper bound for numbers.
        live: the daemon applies a change at run time (no restart).
        is_path: a filesystem path; relative values in a file are taken
            relative to that file's folder.
        check: extra check returning an error phrase, or None when valid.
        doc: one-line description.
        host: what a host may do to the key over the link (:data:`HostPolicy`): ``"yes"``,
            ``"local"`` (only the device's config file sets it; a host's change is refused) or
            ``"allow-list"`` (a file inside the folders the device allows). Every key declares one;
            an undeclared key is treated as ``"local"``.

    Returns:
        A :func:`dataclasses.field`.
    """
    rules = _Rules(
        choices=tuple(choices) if choices is not None else None,
        lo=lo,
        hi=hi,
        live=live,
        is_path=is_path,
        check=check,
        doc=doc,
        host=host,
    )
    if host is not None and host not in HOST_POLICIES:
        raise ValueError(f"host policy must be one of {HOST_POLICIES}, got {host!r}")
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata={_META: rules})
    return dataclasses.field(default=default, metadata={_META: rules})


def section_specs(section: str, cls: type, hints: dict[str, Any]) -> dict[str, KeySpec]:
    """Build the :class:`KeySpec` of every field of one section dataclass.

    Args:
        section: the section name, e.g. ``"camera"``.
        cls: the section dataclass.
        hints: resolved type hints of ``cls`` (``typing.get_type_hints``).

    Returns:
        Field name to spec, in declaration order.
    """
    specs: dict[str, KeySpec] = {}
    for f in dataclasses.fields(cls):
        rules = f.metadata.get(_META, _Rules())
        if f.default_factory is not dataclasses.MISSING:
            default: Callable[[], Any] = f.default_factory
        else:
            default = functools.partial(lambda v: v, f.default)
        specs[f.name] = KeySpec(f"{section}.{f.name}", hints[f.name], default, rules)
    return specs


class Section:
    """Base of a config section: a frozen dataclass whose fields are made with :func:`setting`.

    A subclass names its TOML table in ``section_name`` (``"camera"``: keys
    ``camera.<field>``) and checks and canonicalises every field on construction,
    so that ``CameraConfig(width="x")`` fails as loudly as a bad file does::

        @dataclass(frozen=True)
        class ClassifyConfig(Section):
            section_name: ClassVar[str] = "classify"
            top_k: int = setting(3, lo=1, hi=20, live=True, doc="classes reported per frame")
    """

    section_name: ClassVar[str]

    def __post_init__(self) -> None:
        for name, spec in section_keys(type(self)).items():
            value = coerce_value(spec, getattr(self, name), type(self).__name__)
            object.__setattr__(self, name, value)


_SECTION_KEYS: dict[type[Section], Mapping[str, KeySpec]] = {}


def section_keys(cls: type[Section]) -> Mapping[str, KeySpec]:
    """The :class:`KeySpec` of every field of a section class, by field name (read-only).

    Args:
        cls: a :class:`Section` dataclass.
    """
    keys = _SECTION_KEYS.get(cls)
    if keys is None:  # built once per class (two threads racing build the same)
        keys = _SECTION_KEYS[cls] = MappingProxyType(section_specs(cls.section_name, cls, typing.get_type_hints(cls)))
    return keys


_TYPE_NAMES: dict[Any, str] = {
    bool: "a boolean (true/false)",
    int: "an integer",
    float: "a number",
    str: "a string",
    tuple[str, ...]: "a list of strings",
    str | int: "a string or an integer",
}


def _short(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters (a hostile value must not make a huge answer)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def _kind(value: Any) -> str:
    return f"{type(value).__name__} {_short(value)}"


def coerce_value(spec: KeySpec, value: Any, source: str) -> Any:
    """Check ``value`` for ``spec`` and return it in the field's canonical type.

    Integers are accepted for floats; lists for string lists (stored as tuples).

    Args:
        spec: the key's spec.
        value: the candidate value, already typed (see :func:`parse_text`).
        source: where the value came from (file path, env var...), for messages.

    Returns:
        The canonical value.

    Raises:
        ConfigError: wrong type, out of range, not one of the choices, or
            rejected by the key's own check; the message names key and source.
    """
    t = spec.type
    ok = True
    if t is bool:
        ok = isinstance(value, bool)
    elif t is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif t is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok:
            value = float(value)
            ok = math.isfinite(value)
    elif t is str:
        ok = isinstance(value, str)
    elif t == tuple[str, ...]:
        ok = isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
        if ok:
            value = tuple(value)
    elif t == str | int:
        ok = isinstance(value, (str, int)) and not isinstance(value, bool)
    else:  # pragma: no cover - a schema bug, not a user error
        raise TypeError(f"unsupported config type {t!r} for {spec.key}")
    if not ok:
        raise ConfigError(f"{source}: {spec.key} must be {_TYPE_NAMES[t]}, got {_kind(value)}")
    _check_rules(spec, value, source)
    return value


def _check_rules(spec: KeySpec, value: Any, source: str) -> None:
    rules = spec.rules
    if rules.choices is not None:
        items = value if isinstance(value, tuple) else (value,)
        bad = [v for v in items if v not in rules.choices]
        if bad:
            allowed = ", ".join(repr(c) for c in rules.choices)
            verb = "may only contain" if isinstance(value, tuple) else "must be one of"
            raise ConfigError(f"{source}: {spec.key} {verb} {allowed}; got {_short(bad[0])}")
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if is_number and ((rules.lo is not None and value < rules.lo) or (rules.hi is not None and value > rules.hi)):
        raise ConfigError(f"{source}: {spec.key} must be between {rules.lo} and {rules.hi}, got {value!r}")
    if rules.check is not None:
        problem = rules.check(value)
        if problem:
            raise ConfigError(f"{source}: {spec.key} {problem}, got {_short(value)}")


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def parse_text(spec: KeySpec, text: str, source: str) -> Any:
    """Turn the text of an environment variable or ``--set`` option into a value.

    Booleans accept true/false/yes/no/on/off/1/0, lists are comma-separated and
    ``str | int`` keys (``camera.device``) read an all-digit text as an integer.

    Args:
        spec: the key's spec.
        text: the raw text.
        source: where the text came from, for messages.

    Returns:
        A typed value, still to be checked by :func:`coerce_value`.

    Raises:
        ConfigError: the text cannot be read as the key's type.
    """
    t = spec.type
    s = text.strip()
    try:
        if t is bool:
            if s.lower() in _TRUE:
                return True
            if s.lower() in _FALSE:
                return False
            raise ValueError(s)
        if t is int:
            return int(s)
        if t is float:
            return float(s)
        if t == tuple[str, ...]:
            return tuple(p.strip() for p in s.split(",") if p.strip())
        if t == str | int:
            return int(s) if s.isdigit() else text
    except ValueError:
        raise ConfigError(f"{source}: {spec.key} must be {_TYPE_NAMES[t]}, got {text!r}") from None
    return text


def unknown_key_error(key: str, known: Iterable[str], source: str) -> UnknownConfigKey:
    """Build the error for an unknown section or key, with a suggestion.

    Args:
        key: the dotted key (or section name) that is not known.
        known: the valid names at that level (dotted keys or section names).
        source: the file or other origin.

    Returns:
        The :class:`UnknownConfigKey` to raise.
    """
    known = list(known)
    what = "key" if "." in key else "section"
    msg = f"{source}: unknown config {what} '{key}'"
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if close:
        msg += f" (did you mean '{close[0]}'?)"
    return UnknownConfigKey(msg)


# ---- key-specific checks ------------------------------------------------------


def check_serial(value: str) -> str | None:
    """Check ``device.serial_number``: 1-64 of ``A-Z a-z 0-9 . _ -``."""
    return None if _SERIAL_RE.fullmatch(value) else "must be 1-64 of A-Z, a-z, 0-9, '.', '_', '-'"


def check_name(value: str) -> str | None:
    """Check ``device.name``: printable, at most 64 characters."""
    if len(value) > 64 or not value.isprintable():
        return "must be printable and at most 64 characters"
    return None


def check_device(value: str | int) -> str | None:
    """Check ``camera.device``: a non-empty path or a non-negative index."""
    if isinstance(value, int):
        return None if value >= 0 else "must be a device path or an index >= 0"
    return None if value else "must not be empty"


def check_fourcc(value: str) -> str | None:
    """Check ``camera.pixel_format``: empty (the driver's default) or a V4L2 FourCC of four printable characters."""
    if value == "" or (len(value) == 4 and value.isascii() and value.isprintable()):
        return None
    return "must be empty (the driver's default) or a FourCC of 4 characters such as YUYV or MJPG"


def check_link_url(url: str) -> str | None:
    """Check ``link.url``.

    Accepted: ``pty``, ``pty:///abs/symlink``, ``tcp-listen://host:port``, a
    plain serial device path (``/dev/ttyGS0``) and ``pair://NAME`` (an in-process
    pair: the daemon embedded in a test or host program).

    Any of them may end in ``?throttle=BAUD`` to behave like a UART of that baud rate.

    Returns:
        None when valid, else an error phrase.
    """
    try:
        url = parse_transport_url(url).base
    except ValueError:
        return f"may only carry ?throttle=BAUD (a baud rate of at least {MIN_THROTTLE_BAUD})"
    if url == "pty":
        return None
    scheme, sep, rest = url.partition("://")
    if not sep:
        return None if url.strip() else "must not be empty"
    if scheme not in LINK_URL_SCHEMES:
        return "has an unknown scheme (use pty, pty:///path, tcp-listen://host:port, ffs:///path or a device path)"
    if scheme in ("pty", "ffs"):  # ffs: the USB gadget's FunctionFS mount (seedcam_firmware.usb)
        return None if rest.startswith("/") else f"must be {scheme}:///absolute/path"
    if scheme == "pair":
        return None if rest else "must be pair://NAME"
    host, colon, port = rest.rpartition(":")
    if not colon or not host or not port.isdigit() or int(port) > 65535:
        return "must be tcp-listen://host:port"
    return None


@functools.lru_cache(maxsize=1)
def default_serial_number() -> str:
    """A stable serial number for this machine.

    Hashes ``/etc/machine-id`` (or the D-Bus copy, else the host name) so the
    raw machine id never leaves the board.

    Returns:
        ``"SC"`` followed by 10 upper-case hex digits.
    """
    raw = ""
    for candidate in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            raw = Path(candidate).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if raw:
            break
    if not raw:
        raw = socket.gethostname()
    digest = hashlib.sha256(b"seedcam-serial:" + raw.encode()).hexdigest()
    return "SC" + digest[:10].upper()

"""Link authentication: a shared key signs every request frame from the host (MAVLink 2 signing is the model).

For links that are not a cable (``tcp-listen://`` beyond 127.0.0.1): whoever
can reach the port must not be able to drive the sensor. The host appends a
signature to the payload of each request frame (CONTROL and TRANSFER, not
responses); a device with a key refuses, answers ``UNAUTHENTICATED`` to and
counts every request whose signature is missing, wrong, outside the time window
or not newer than the last one it accepted. The wire format (docs/link-auth.md)::

    signed payload = payload || timestamp_us (u64 LE) || tag (16 bytes)
    tag = HMAC-SHA256(key, DOMAIN || version || channel || flags || seq (u16 LE)
                           || timestamp_us (u64 LE) || payload)[:16]

The timestamp is the host's wall clock in microseconds since the Unix epoch,
strictly increasing per host. The device accepts a timestamp within
``window_s`` of its own clock and above the highest it accepted before: a
recorded request replayed later is refused as old, one replayed at once as a
replay. Only requests are signed; what the device sends is not.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

from seedcam.protocol.framing import DEFAULT_MAX_FRAME_SIZE, PROTOCOL_VERSION, Channel, Encoder, Flag, Frame

__all__ = [
    "DEFAULT_WINDOW_S",
    "DOMAIN",
    "MIN_KEY_BYTES",
    "SIGNATURE_SIZE",
    "SIGNED_CHANNELS",
    "SigningEncoder",
    "Verifier",
    "parse_key",
    "read_key_file",
    "sign_payload",
]

#: bytes of the signature appended to a request's payload: the timestamp and the tag
SIGNATURE_SIZE = 24
#: the shortest key accepted (128 bits)
MIN_KEY_BYTES = 16
#: seconds a timestamp may differ from the device's clock
DEFAULT_WINDOW_S = 60.0
#: the channels whose requests are signed
SIGNED_CHANNELS = (Channel.CONTROL, Channel.TRANSFER)
#: what the tag covers first: no signature of another protocol (or version of this one) verifies here
DOMAIN = b"seedcam-link-sign-v1"

_TAG_SIZE = 16
_TRAILER = struct.Struct("<Q")
_HEADER = struct.Struct("<BBBHQ")
Clock = Callable[[], int]  #: nanoseconds since the Unix epoch (``time.time_ns``)


def parse_key(key: bytes | str) -> bytes:
    """A link key from its bytes or its hex text (whitespace around it ignored).

    Raises:
        ValueError: not hex, or shorter than :data:`MIN_KEY_BYTES`.
    """
    if isinstance(key, str):
        try:
            key = bytes.fromhex(key.strip())
        except ValueError as exc:
            raise ValueError("a link key is written as hex digits") from exc
    if len(key) < MIN_KEY_BYTES:
        raise ValueError(f"a link key has at least {MIN_KEY_BYTES} bytes ({2 * MIN_KEY_BYTES} hex digits)")
    return bytes(key)


def read_key_file(path: str | Path) -> bytes:
    """The link key in a file (hex digits, one line).

    Raises:
        ValueError: the file is unreadable, or does not hold a key.
    """
    try:
        text = Path(path).read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the link key file {path}: {exc}") from exc
    try:
        return parse_key(text)
    except ValueError as exc:
        raise ValueError(f"link key file {path}: {exc}") from exc


def _tag(key: bytes, channel: Channel, flags: Flag, seq: int, timestamp_us: int, payload: bytes, version: int) -> bytes:
    mac = hmac.new(key, DOMAIN, hashlib.sha256)
    mac.update(_HEADER.pack(version, int(channel), int(flags), seq, timestamp_us))
    mac.update(payload)
    return mac.digest()[:_TAG_SIZE]


def sign_payload(
    key: bytes,
    channel: Channel,
    seq: int,
    payload: bytes,
    timestamp_us: int,
    *,
    flags: Flag = Flag.NONE,
    version: int = PROTOCOL_VERSION,
) -> bytes:
    """``payload`` with its signature appended (see the module docstring)."""
    tag = _tag(key, channel, flags, seq, timestamp_us, payload, version)
    return payload + _TRAILER.pack(timestamp_us) + tag


class SigningEncoder(Encoder):
    """The host's frame encoder with a key: request frames on :data:`SIGNED_CHANNELS` go out signed.

    Args:
        key: the link key.
        clock: wall-clock nanoseconds (tests pass their own).
        max_frame_size: the largest payload, signature included.
    """

    def __init__(
        self, key: bytes, *, clock: Clock = time.time_ns, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    ) -> None:
        super().__init__(max_frame_size=max_frame_size)
        self._key = parse_key(key)
        self._clock = clock
        self._last_us = 0
        self._lock = threading.Lock()

    def encode(
        self,
        channel: Channel,
        payload: bytes,
        *,
        flags: Flag = Flag.NONE,
        seq: int | None = None,
        version: int = PROTOCOL_VERSION,
    ) -> bytes:
        if channel in SIGNED_CHANNELS and not flags & Flag.RESPONSE:
            if seq is None:
                seq = self.next_seq(channel)
            with self._lock:  # strictly increasing, also when the wall clock steps back
                self._last_us = max(self._clock() // 1000, self._last_us + 1)
                stamp = self._last_us
            payload = sign_payload(self._key, channel, seq, payload, stamp, flags=flags, version=version)
        return super().encode(channel, payload, flags=flags, seq=seq, version=version)


class Verifier:
    """The device's check of signed requests.

    Args:
        key: the link key.
        window_s: how far a timestamp may be from the device's clock, seconds.
        clock: wall-clock nanoseconds (tests pass their own).
    """

    REASONS = ("missing", "bad_signature", "outside_window", "replayed")

    def __init__(self, key: bytes, *, window_s: float = DEFAULT_WINDOW_S, clock: Clock = time.time_ns) -> None:
        if window_s <= 0:
            raise ValueError(f"window_s must be positive, got {window_s}")
        self._key = parse_key(key)
        self._window_us = int(window_s * 1e6)
        self._clock = clock
        self._highest_us = 0
        self._lock = threading.Lock()
        self.refused: dict[str, int] = dict.fromkeys(self.REASONS, 0)

    @property
    def refused_total(self) -> int:
        """Requests refused since start, all reasons."""
        return sum(self.refused.values())

    def verify(self, frame: Frame) -> tuple[bytes | None, str]:
        """Check a request frame's signature.

        Returns:
            ``(payload, "")`` with the signature removed when it verifies, else
            ``(None, reason)`` (one of :attr:`REASONS`, counted in :attr:`refused`).
        """
        data = frame.payload
        if len(data) < SIGNATURE_SIZE:
            return self._refuse("missing")
        payload, stamp_bytes, tag = data[:-SIGNATURE_SIZE], data[-SIGNATURE_SIZE:-_TAG_SIZE], data[-_TAG_SIZE:]
        (stamp,) = _TRAILER.unpack(stamp_bytes)
        expected = _tag(self._key, frame.channel, frame.flags, frame.seq, stamp, payload, frame.version)
        if not hmac.compare_digest(tag, expected):
            return self._refuse("bad_signature")
        with self._lock:
            if abs(stamp - self._clock() // 1000) > self._window_us:
                return self._refuse_locked("outside_window")
            if stamp <= self._highest_us:
                return self._refuse_locked("replayed")
            self._highest_us = stamp
        return payload, ""

    def _refuse(self, reason: str) -> tuple[None, str]:
        with self._lock:
            return self._refuse_locked(reason)

    def _refuse_locked(self, reason: str) -> tuple[None, str]:
        self.refused[reason] += 1
        return None, reason

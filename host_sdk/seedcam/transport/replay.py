"""``replay://run.mcap[?speed=1|2|max&loop=1]``: a recording played back as a sensor on the other end.

The transport is the device side of a link: what the host writes is answered
by a :class:`~seedcam.recording.replay_device.ReplayDevice`, what it reads is
the recording's stream at its recorded pace, so ``seedcam.open``, ``seedcam
monitor`` and the AGV controller run on a recording as on a sensor. The path
after ``replay://`` is the file (relative, or absolute: ``replay:///data/run.mcap``).
``speed`` is a factor (``2``: twice as fast) or ``max`` (as fast as the host
reads); ``loop=1`` starts over at the end. Needs ``seedcam[record]``.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any
from urllib.parse import parse_qsl

from seedcam.errors import LinkBroken, RecordingError
from seedcam.transport.base import Transport, remaining

__all__ = ["ReplayTransport", "parse_replay_url"]

_SCHEME = "replay://"
_FLAGS = {"1": True, "0": False, "true": True, "false": False}


def parse_replay_url(url: str) -> tuple[str, float, bool]:
    """``replay://PATH?speed=S&loop=1`` -> (path, speed, loop); speed ``max`` is ``math.inf``.

    Raises:
        ValueError: not a replay URL, no path, a speed that is not a number above 0 or ``max``,
            a loop other than 0 or 1, an unknown option.
    """
    if not url.lower().startswith(_SCHEME):
        raise ValueError(f"not a replay URL: {url!r}")
    path, _, query = url[len(_SCHEME) :].partition("?")
    if not path:
        raise ValueError(f"{url!r} names no recording: use replay://run.mcap")
    options = dict(parse_qsl(query, keep_blank_values=True))
    unknown = set(options) - {"speed", "loop"}
    if unknown:
        raise ValueError(f"unknown replay option(s) {sorted(unknown)} in {url!r}; known: speed, loop")
    text = options.get("speed", "1")
    if text.lower() == "max":
        speed = math.inf
    else:
        try:
            speed = float(text)
        except ValueError:
            speed = math.nan
        if not speed > 0 or math.isinf(speed):
            raise ValueError(f"bad speed in {url!r}: a factor above 0 (1, 2, 0.5) or max, got {text!r}")
    loop = _FLAGS.get(options.get("loop", "0").lower())
    if loop is None:
        raise ValueError(f"bad loop in {url!r}: use loop=1 or loop=0")
    return path, speed, loop


class ReplayTransport(Transport):
    """A recording on the other end of the link (see the module).

    Args:
        url: the ``replay://`` URL.

    Raises:
        LinkBroken: the recording cannot be opened or is not a seedcam recording (the message says why).
        ValueError: a malformed URL.
    """

    def __init__(self, url: str) -> None:
        super().__init__(url)
        path, speed, loop = parse_replay_url(url)
        from seedcam.recording.replay_device import START_AFTER_S, ReplayDevice

        try:
            self._device = ReplayDevice(path, name=url, speed=speed, loop=loop)
        except RecordingError as exc:
            raise LinkBroken(f"{url}: {exc}") from exc
        self._cond = threading.Condition()
        self._outgoing = bytearray()
        self._opened = time.monotonic()
        self._start_after_s = START_AFTER_S

    @classmethod
    def from_url(cls, url: str, **options: Any) -> Transport:
        if options:
            raise TypeError(f"replay:// takes no options, got {sorted(options)}")
        return cls(url)

    def _read(self, max_bytes: int, deadline: float | None) -> bytes:
        device = self._device
        with self._cond:
            while True:
                if self._closed:
                    raise LinkBroken(f"{self.url}: transport closed")
                now = time.monotonic()
                if not device.started and now - self._opened >= self._start_after_s:
                    device.start(now)
                self._outgoing += device.due(now)
                if self._outgoing:
                    out = bytes(self._outgoing[:max_bytes])
                    del self._outgoing[:max_bytes]
                    return out
                wake = device.next_due()
                if wake is None and not device.started:
                    wake = self._opened + self._start_after_s
                left = remaining(deadline)
                if left == 0.0:
                    return b""
                waits = [w for w in (left, None if wake is None else max(0.0, wake - now)) if w is not None]
                self._cond.wait(min(waits) if waits else None)

    def _write(self, data: memoryview, deadline: float | None) -> None:
        with self._cond:
            if self._closed:
                raise LinkBroken(f"{self.url}: transport closed during write")
            self._outgoing += self._device.receive(bytes(data), time.monotonic())
            self._cond.notify_all()

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def _close(self) -> None:
        self._outgoing.clear()

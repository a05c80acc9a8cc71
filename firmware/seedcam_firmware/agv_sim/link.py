"""An impaired link for the simulator: relays the firmware's pty to a new pty for the host,
frame by frame, adding latency, dropping and corrupting result frames, or cutting the line.

Only frames on the RESULT channel are dropped or corrupted: the handshake and
calls stay intact, as a real link's small control traffic usually does. The
latency applies to every byte in both directions.
"""

from __future__ import annotations

import collections
import logging
import random
import threading
import time
from dataclasses import dataclass

from cobs import cobs

from seedcam.errors import SensorError
from seedcam.protocol.framing import Channel
from seedcam.transport import Transport, open_transport
from seedcam.transport.pty_device import PtyDeviceTransport

__all__ = ["ImpairedLink", "LinkImpairment", "RelayCounters"]

log = logging.getLogger(__name__)

_READ_S = 0.005


@dataclass(frozen=True)
class LinkImpairment:
    """What the link does to the traffic.

    Attributes:
        latency_s: added one-way delay, both directions.
        drop_rate: fraction of result frames dropped (0..1).
        corrupt_rate: fraction of result frames with one flipped bit (the host counts a CRC error).
        seed: seed of the random choices.
    """

    latency_s: float = 0.0
    drop_rate: float = 0.0
    corrupt_rate: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.latency_s < 0 or not 0 <= self.drop_rate <= 1 or not 0 <= self.corrupt_rate <= 1:
            raise ValueError("latency must be >= 0 and rates within 0..1")


@dataclass(frozen=True)
class RelayCounters:
    """What the impaired link did to the sensor's result frames."""

    result_frames: int  #: relayed
    dropped: int
    corrupted: int


class _Direction:
    def __init__(self, name: str, source: Transport, sink: Transport, link: ImpairedLink, impair: bool) -> None:
        self.name = name
        self.source = source
        self.sink = sink
        self.link = link
        self.impair = impair
        self.frames = 0
        self.dropped = 0
        self.corrupted = 0
        self._buffer = bytearray()
        self._queue: collections.deque[tuple[float, bytes]] = collections.deque()
        self._rng = random.Random(f"{link.impairment.seed}-{name}")

    def run(self, stop: threading.Event) -> None:
        latency = self.link.impairment.latency_s
        while not stop.is_set():
            wait = _READ_S
            if self._queue:
                wait = max(0.0, min(wait, self._queue[0][0] - time.monotonic()))
            try:
                data = self.source.read(65536, wait)
            except SensorError:
                if stop.wait(0.05):
                    return
                continue
            now = time.monotonic()
            if self.link.is_cut:
                self._buffer.clear()
                self._queue.clear()
                continue
            if data:
                self._buffer += data
                while (end := self._buffer.find(0)) >= 0:
                    frame = bytes(self._buffer[: end + 1])
                    del self._buffer[: end + 1]
                    frame = self._judge(frame)
                    if frame:
                        self._queue.append((now + latency, frame))
            out = bytearray()
            while self._queue and self._queue[0][0] <= now:
                out += self._queue.popleft()[1]
            if out:
                try:
                    self.sink.write(bytes(out), 1.0)
                except SensorError as exc:  # nobody reading (yet): the bytes are lost, as on a wire
                    log.debug("%s: %s", self.name, exc)

    def _judge(self, frame: bytes) -> bytes:
        if len(frame) < 4 or not self.impair:
            return frame
        try:
            channel = cobs.decode(frame[:-1])[1]
        except (cobs.DecodeError, IndexError):
            return frame
        if channel != Channel.RESULT:
            return frame
        self.frames += 1
        imp = self.link.impairment
        if self._rng.random() < imp.drop_rate:
            self.dropped += 1
            return b""
        if self._rng.random() < imp.corrupt_rate:
            body = bytearray(frame[:-1])
            for _ in range(8):  # never create a delimiter: that would split the frame
                i, bit = self._rng.randrange(len(body)), 1 << self._rng.randrange(8)
                if body[i] ^ bit:
                    body[i] ^= bit
                    break
            self.corrupted += 1
            return bytes(body) + b"\x00"
        return frame


class ImpairedLink:
    """Relay between a device URL (the firmware's pty) and a fresh pty at ``host_path`` for the host.

    Args:
        device_url: the firmware's link (e.g. its ``--pty-link`` path).
        host_path: where to put the symlink to the host's pty.
        impairment: latency, drops and corruption.

    Raises:
        LinkBroken: the device port cannot be opened.
    """

    def __init__(self, device_url: str, host_path: str, impairment: LinkImpairment) -> None:
        self.impairment = impairment
        self.host_path = host_path
        self.cut_at: float | None = None  #: host monotonic instant of :meth:`cut`
        self._device = open_transport(device_url)
        self._host = PtyDeviceTransport.create(host_path)
        self._stop = threading.Event()
        self._up = _Direction("sensor->host", self._device, self._host, self, impair=True)
        self._down = _Direction("host->sensor", self._host, self._device, self, impair=False)
        self._threads = [
            threading.Thread(target=d.run, args=(self._stop,), name=f"sim-link {d.name}", daemon=True)
            for d in (self._up, self._down)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def is_cut(self) -> bool:
        """True after :meth:`cut`."""
        return self.cut_at is not None

    def cut(self) -> float:
        """Cut the line: nothing more gets through, frames in flight are lost. Returns the instant."""
        self.cut_at = time.monotonic()
        return self.cut_at

    @property
    def counters(self) -> RelayCounters:
        """Result frames relayed, dropped and corrupted (sensor → host)."""
        return RelayCounters(self._up.frames, self._up.dropped, self._up.corrupted)

    def close(self) -> None:
        """Stop relaying and close both ends. Idempotent."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=2.0)
        self._device.close()
        self._host.close()

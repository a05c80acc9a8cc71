"""A man-in-the-middle for link tests: forwards frames between two transports and damages some.

It works on whole frames (split at the 0x00 delimiter), so it knows exactly
which frames it damaged: a flipped bit inside a frame, or a burst of random
non-zero garbage glued in front of one. Each damaged frame must show up as
exactly one corrupted frame in the receiver's counters.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

from seedcam.errors import SensorError
from seedcam.protocol.framing import Decoder
from seedcam.transport import Transport

#: decides, from the frame's index in its direction, how to damage it: "flip", "garbage" or None
Policy = Callable[[int], "str | None"]


class Direction:
    """One direction of the proxy: read ``source``, damage per ``policy``, write ``sink``."""

    def __init__(self, source: Transport, sink: Transport, policy: Policy, seed: int, *, synced: bool) -> None:
        self.source = source
        self.sink = sink
        self.policy = policy
        self.rng = random.Random(seed)
        self.frames = 0
        self.damaged = 0
        self.intact = 0
        self.bytes_out = 0
        self.enabled = threading.Event()  #: damage frames only while set
        self._synced = synced
        self._buffer = bytearray()

    def pump(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                data = self.source.read(65536, 0.05)
            except SensorError:
                return
            self._buffer += data
            while True:
                end = self._buffer.find(0)
                if end < 0:
                    break
                frame = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                if not self._synced:  # the first piece may be the tail of a frame sent before we started
                    self._synced = True
                    if not Decoder().feed(frame):
                        continue
                self._forward(frame)

    def _forward(self, frame: bytes) -> None:
        if len(frame) == 1:
            out = frame  # idle delimiter
        else:
            action = self.policy(self.frames) if self.enabled.is_set() else None
            self.frames += 1
            out = self._damage(frame, action) if action else frame
            if action:
                self.damaged += 1
            else:
                self.intact += 1
        try:
            self.sink.write(out, 2.0)
        except SensorError:
            return
        self.bytes_out += len(out)

    def _damage(self, frame: bytes, action: str) -> bytes:
        body = bytearray(frame[:-1])
        if action == "flip":
            index = self.rng.randrange(len(body))
            bit = 1 << self.rng.randrange(8)
            if body[index] ^ bit == 0:  # never create a delimiter: that would split the frame in two
                bit = 0x80 if body[index] != 0x80 else 0x01
            body[index] ^= bit
            return bytes(body) + b"\x00"
        garbage = bytes(self.rng.randrange(1, 256) for _ in range(self.rng.randrange(1, 40)))
        return garbage + bytes(body) + b"\x00"


class CorruptingProxy:
    """Runs both directions in threads until :meth:`close`."""

    def __init__(self, device: Transport, host: Transport, *, to_host: Policy, to_device: Policy) -> None:
        self.to_host = Direction(device, host, to_host, seed=1, synced=False)
        self.to_device = Direction(host, device, to_device, seed=2, synced=True)
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self.to_host.pump, args=(self._stop,), daemon=True),
            threading.Thread(target=self.to_device.pump, args=(self._stop,), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(2.0)

"""The host's side of protocol 2's compact results on one sensor: the dictionary per boot, the references."""

from __future__ import annotations

import threading

from seedcam._proto import seedcam_pb2 as pb
from seedcam.protocol import codec
from seedcam.protocol.compact import CompactDecoder
from seedcam.types import Health, Result

__all__ = ["CompactResults"]


class CompactResults:
    """Decodes a sensor's compact results with the dictionary it announced last.

    Fed from the reader thread: results, announcements, Hellos, Health and the
    DeviceInfo of an info call's answer (the session's response hook runs there, so
    every dictionary is taken in the order the link carried it); thread-safe.
    """

    def __init__(self) -> None:
        self._decoder = CompactDecoder()
        self._lock = threading.Lock()
        self._boot_id: str | None = None

    def device(self, info: pb.DeviceInfo, *, refresh: bool = False) -> None:
        """A DeviceInfo (a Hello, an info call's answer), taken in the link's order (on the reader thread).

        Its dictionary replaces the one in use only when it is of a newer generation: the
        device may fill its answer in, announce the next generation and send that first.
        Another boot id than the one known drops the old boot's dictionary (a restarted device
        counts its generations from 1 again); the link's first boot id keeps what was
        announced before it.

        Args:
            info: the DeviceInfo.
            refresh: the device was asked because a result could not be decoded: its
                dictionary is taken as it is, even of an older generation than the one held.
        """
        dictionary = codec.result_dictionary_from_pb(info.result_dictionary)
        with self._lock:
            if refresh or (self._boot_id is not None and info.boot_id != self._boot_id):
                self._decoder.forget()
            self._boot_id = info.boot_id
            self._decoder.set_dictionary(dictionary)

    def announced(self, message: pb.ResultDictionary) -> None:
        """A dictionary announced on the status channel (it precedes the results that use it)."""
        dictionary = codec.result_dictionary_from_pb(message)
        with self._lock:
            self._decoder.set_dictionary(dictionary)

    def health(self, health: Health) -> None:
        """A Health report's frame id and time become the references of the truncated counters."""
        if health.boot_id != self._boot_id:
            return  # another boot's: its counters are no reference for this dictionary
        with self._lock:
            self._decoder.anchor(health.latest_frame_id or None, health.timestamp_us or None)

    def decode(self, payload: bytes, received_monotonic: float) -> Result:
        """One RESULT payload.

        Raises:
            StaleDictionary: the payload needs a dictionary this side has not received.
            ProtocolError: the payload is malformed.
        """
        with self._lock:
            return self._decoder.decode(payload, received_monotonic=received_monotonic)

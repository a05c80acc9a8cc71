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

    Fed from the reader thread (results, announcements, Hellos, Health) and from
    calls (the DeviceInfo of an info call); thread-safe.
    """

    def __init__(self) -> None:
        self._decoder = CompactDecoder()
        self._lock = threading.Lock()
        self._boot_id: str | None = None

    def device(self, info: pb.DeviceInfo) -> None:
        """A DeviceInfo (a Hello or an info call's answer): its dictionary, the first of a new boot's."""
        dictionary = codec.result_dictionary_from_pb(info.result_dictionary)
        with self._lock:
            if info.boot_id != self._boot_id:
                self._decoder.forget()  # a restarted device counts its generations from 1 again
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

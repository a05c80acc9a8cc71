"""The update channel: requests and chunk acknowledgements on a session's TRANSFER channel."""

from __future__ import annotations

import queue
import threading
import time

from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import ProtocolError, SensorTimeout, UpdateRefused
from seedcam.protocol import codec
from seedcam.protocol.framing import Channel, Flag, Frame
from seedcam.sensor import Sensor
from seedcam.session import Session

__all__ = ["UpdateChannel", "raise_for"]


class UpdateChannel:
    """Update requests and chunk acknowledgements over one session's TRANSFER channel.

    Built on the session's public API only (:meth:`Session.subscribe`,
    :meth:`Session.send`). Answers are matched to requests by sequence number;
    :meth:`close` unsubscribes.

    Args:
        link: an open sensor, or its session.
    """

    def __init__(self, link: Sensor | Session) -> None:
        self.session = link.session if isinstance(link, Sensor) else link
        self._lock = threading.Lock()
        self._waiting: dict[int, tuple[threading.Event, list[pb.UpdateResponse]]] = {}
        self.acks: queue.Queue[tuple[int, pb.UpdateResponse]] = queue.Queue()
        self._chunk_seqs: set[int] = set()
        self._unsubscribe = self.session.subscribe(Channel.TRANSFER, self._on_frame)

    def close(self) -> None:
        self._unsubscribe()

    def __enter__(self) -> UpdateChannel:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _on_frame(self, frame: Frame) -> None:
        if not frame.flags & Flag.RESPONSE:
            return
        try:
            response = codec.parse(pb.UpdateResponse, frame.payload)
        except ProtocolError:
            return  # counted by nobody: the frame's CRC was fine, a resend or timeout recovers
        with self._lock:
            waiter = self._waiting.pop(frame.seq, None)
            is_chunk = frame.seq in self._chunk_seqs
            self._chunk_seqs.discard(frame.seq)
        if waiter is not None:
            waiter[1].append(response)
            waiter[0].set()
        elif is_chunk:
            self.acks.put((frame.seq, response))

    def call(self, request: pb.UpdateRequest, timeout: float) -> pb.UpdateResponse:
        """Send a request and wait for its answer.

        Raises:
            SensorTimeout, LinkBroken: no answer.
            UpdateRefused: the device refused.
        """
        event, box = threading.Event(), list[pb.UpdateResponse]()
        deadline = time.monotonic() + timeout  # the send's wait for a busy link counts too

        def expect(seq: int) -> None:
            with self._lock:
                self._waiting[seq] = (event, box)

        seq = self.session.send(Channel.TRANSFER, request.SerializeToString(), timeout, before_send=expect)
        if not event.wait(max(0.0, deadline - time.monotonic())):
            with self._lock:
                self._waiting.pop(seq, None)
            what = request.WhichOneof("body")
            raise SensorTimeout(f"no answer to update request {what} within {timeout} s")
        response = box[0]
        raise_for(response)
        return response

    def call_repeating(self, request: pb.UpdateRequest, timeout: float, total: float) -> pb.UpdateResponse:
        """:meth:`call`, sent again every ``timeout`` s (a lost request or answer) for up to ``total`` s.

        Only for idempotent requests (``end``: the device joins a repeat to the running installation).
        """
        deadline = time.monotonic() + total
        while True:
            try:
                return self.call(request, min(timeout, max(0.1, deadline - time.monotonic())))
            except SensorTimeout:
                if time.monotonic() >= deadline:
                    raise

    def send_chunk(self, tag: int, offset: int, data: bytes, timeout: float) -> int:
        """Send one chunk without waiting; its acknowledgement arrives in :attr:`acks`."""
        request = pb.UpdateRequest(chunk=pb.TransferChunk(transfer_tag=tag, offset=offset, data=data))

        def expect(seq: int) -> None:
            with self._lock:
                self._chunk_seqs.add(seq)

        return self.session.send(Channel.TRANSFER, request.SerializeToString(), timeout, before_send=expect)

    def drain(self) -> None:
        """Forget acknowledgements of an earlier attempt."""
        with self._lock:
            self._chunk_seqs.clear()
        while not self.acks.empty():
            self.acks.get_nowait()


def raise_for(response: pb.UpdateResponse) -> None:
    """Raise the device's refusal, if the answer is one.

    Raises:
        UpdateRefused: the status is not OK.
    """
    if response.status != pb.STATUS_OK:
        raise UpdateRefused(response.reason or "refused", codec.status_name(response.status), response.message)

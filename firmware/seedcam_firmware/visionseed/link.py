"""The VisionSeed personality of the link: VisionSeed's framing and messages on the same LinkServer.

:class:`VisionSeedPersonality` plugs into the native
:class:`~seedcam_firmware.link_server.LinkServer` (same transports, reopening,
write timeouts and drop counting) and brings the two pieces that make the protocol:

* the framing: VisionSeed's SOF / escape / CRC-16 frames
  (:mod:`seedcam_firmware.visionseed.framing`) instead of COBS frames, so every
  garbage byte, bad CRC, truncated or oversize frame is counted in the same
  :class:`~seedcam.protocol.framing.LinkCounters`, and never raises;
* the messages: the typed values the daemon sends become ``YtMsg``s directly (a
  Result a ``dataV2`` result tree, a Health or a Hello a ``systemStatusResult``
  heartbeat), and each ``YtRpc`` from the host goes to a VisionSeed handler
  (:class:`~seedcam_firmware.visionseed.rpc.VisionSeedRpc`) built on the same
  device services as the native dispatcher. LOG records have no VisionSeed
  equivalent and are not sent.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

from google.protobuf.message import DecodeError

from seedcam.errors import ProtocolError
from seedcam.protocol.framing import PROTOCOL_VERSION, Channel, Flag, Frame, LinkCounters
from seedcam.types import DeviceInfo, Health, Result
from seedcam_firmware.link_personality import Outgoing, Personality, Reply
from seedcam_firmware.visionseed._proto import visionseed_pb2 as vs
from seedcam_firmware.visionseed.datav2 import decode_datav2
from seedcam_firmware.visionseed.framing import VisionSeedDecoder, encode_visionseed
from seedcam_firmware.visionseed.results import heartbeat_message, result_message

__all__ = [
    "MIN_RECEIVE_PAYLOAD",
    "RpcHandler",
    "RpcOutcome",
    "VisionSeedFrameDecoder",
    "VisionSeedFrameEncoder",
    "VisionSeedPersonality",
]

log = logging.getLogger(__name__)

#: an uploadFile chunk of the Python/JS clients (128 KiB) plus its YtMsg wrapping must fit
MIN_RECEIVE_PAYLOAD = 128 * 1024 + 4096

#: a handler's answer: the response, and what to do once it is on the wire (a reboot), or None
RpcOutcome = tuple[vs.YtRpcResponse, Callable[[], None] | None]
RpcHandler = Callable[[vs.YtRpc], RpcOutcome]


class VisionSeedFrameDecoder:
    """VisionSeed frames in, payloads out as CONTROL :class:`Frame` objects (what LinkServer handles).

    Args:
        max_frame_size: largest payload accepted; a longer LEN is counted as oversize.
    """

    def __init__(self, max_frame_size: int) -> None:
        self.max_frame_size = max_frame_size
        self._decoder = VisionSeedDecoder(max_payload=max_frame_size)

    @property
    def counters(self) -> LinkCounters:
        return self._decoder.counters

    @counters.setter
    def counters(self, value: LinkCounters) -> None:  # LinkServer carries the counters over to a new peer
        self._decoder.counters = value

    def feed(self, data: bytes) -> list[Frame]:
        """Consume bytes; return the complete frames (never raises, counts bad input)."""
        return [Frame(Channel.CONTROL, 0, payload) for payload in self._decoder.feed(data)]


class VisionSeedFrameEncoder:
    """Frames payloads the VisionSeed way; counts what it encodes. Channel, flags, seq, version are not on the wire."""

    def __init__(self, max_frame_size: int) -> None:
        self.max_frame_size = max_frame_size
        self.counters = LinkCounters()

    def encode(
        self,
        channel: Channel,
        payload: bytes,
        *,
        flags: Flag = Flag.NONE,
        seq: int | None = None,
        version: int = PROTOCOL_VERSION,
    ) -> bytes:
        """Encode one ``YtMsg`` payload.

        Raises:
            ValueError: the payload is larger than ``max_frame_size``.
        """
        if len(payload) > self.max_frame_size:
            raise ValueError(f"{len(payload)}-byte payload over the {self.max_frame_size}-byte frame limit")
        data = encode_visionseed(payload)
        self.counters.frames_tx += 1
        self.counters.bytes_tx += len(data)
        return data


class VisionSeedPersonality(Personality):
    """Speaks VisionSeed's protocol on a LinkServer (see the module docstring).

    Args:
        handler: answers one ``YtRpc`` (never raises).

    A LinkServer with this personality accepts payloads of at least
    :data:`MIN_RECEIVE_PAYLOAD` bytes (so the clients' 128 KiB upload chunks fit)
    and sends at most its ``max_frame_size``.
    """

    def __init__(self, handler: RpcHandler) -> None:
        self._rpc = handler
        self._heartbeat_lock = threading.Lock()
        self._next_heartbeat = 0
        self._last_frame_id = 0
        # RPCs run in order on one worker, never on the reader thread: an upload's last chunk imports a
        # model (loads and runs it), and the reader must keep draining and counting the link meanwhile
        self._rpcs: queue.SimpleQueue[tuple[vs.YtRpc, Reply] | None] = queue.SimpleQueue()
        self._rpc_thread = threading.Thread(target=self._rpc_loop, name="seedcam-visionseed-rpc", daemon=True)

    def encoder(self, max_frame_size: int) -> VisionSeedFrameEncoder:
        return VisionSeedFrameEncoder(max_frame_size)

    def decoder(self, max_frame_size: int) -> VisionSeedFrameDecoder:
        return VisionSeedFrameDecoder(max(max_frame_size, MIN_RECEIVE_PAYLOAD))

    def start(self) -> None:
        """Start the RPC worker."""
        self._rpc_thread.start()

    def close(self) -> None:
        """Stop the RPC worker. Idempotent."""
        self._rpcs.put(None)
        if self._rpc_thread.is_alive() and threading.current_thread() is not self._rpc_thread:
            self._rpc_thread.join(timeout=5.0)

    @property
    def heartbeats_sent(self) -> int:
        """How many heartbeats were handed to the link (the next heartBeatId)."""
        return self._next_heartbeat

    # ------------------------------------------------------------------ what the daemon sends

    def result(self, result: Result) -> tuple[Outgoing]:
        """A Result as a ``dataV2`` tree.

        Raises:
            ValueError: the tree does not fit ``dataV2`` (more than 255 records).
        """
        self._last_frame_id = result.frame_id
        return (Outgoing(Channel.RESULT, result_message(result).SerializeToString()),)

    def health(self, health: Health) -> Outgoing:
        """A ``systemStatusResult`` heartbeat."""
        return self._heartbeat()

    def hello(self, info: DeviceInfo) -> Outgoing:
        """A ``systemStatusResult`` heartbeat too: id 0 for the first one after boot."""
        return self._heartbeat()

    def _heartbeat(self) -> Outgoing:
        with self._heartbeat_lock:
            heartbeat_id = self._next_heartbeat
            self._next_heartbeat += 1
        now_us = time.monotonic_ns() // 1000
        heartbeat = heartbeat_message(heartbeat_id, frame_id=self._last_frame_id, timestamp_us=now_us)
        return Outgoing(Channel.STATUS, heartbeat.SerializeToString())

    # ------------------------------------------------------------------ what the host sends

    def handle(self, frame: Frame, reply: Reply) -> None:
        message = vs.YtMsg()
        try:
            message.ParseFromString(frame.payload)
        except DecodeError as exc:
            self.undecodable_requests += 1
            log.debug("undecodable message from the host: %s", exc)
            return
        kind = message.WhichOneof("values")
        if kind == "result" and message.result.HasField("dataV2"):
            try:
                decode_datav2(message.result.dataV2)
            except ProtocolError as exc:  # trailing bytes, a varint too long: counted like any bad request
                self.undecodable_requests += 1
                log.debug("undecodable dataV2 from the host: %s", exc)
                return
        if kind != "rpc":
            log.debug("ignored a %s message from the host", kind)
            return
        rpc = message.rpc
        if not rpc.IsInitialized():  # no function, or one this schema does not know (a closed proto2 enum)
            self.undecodable_requests += 1
            missing = ", ".join(rpc.FindInitializationErrors())  # type: ignore[attr-defined]  # not in the stubs
            response = vs.YtRpcResponse(code=vs.YtRpcResponse.ERROR_PARAMETERS, strData=f"undecodable rpc: {missing}")
            self._answer(rpc, response, None, reply)
        else:
            self._rpcs.put((rpc, reply))  # answered by the worker, in order

    def _rpc_loop(self) -> None:
        while (item := self._rpcs.get()) is not None:
            rpc, reply = item
            try:
                response, after = self._rpc(rpc)
                self._answer(rpc, response, after, reply)
            except Exception:  # a bug here must not end the worker: every later RPC would go unanswered
                log.exception("answering a VisionSeed rpc failed")

    @staticmethod
    def _answer(rpc: vs.YtRpc, response: vs.YtRpcResponse, after: Callable[[], None] | None, reply: Reply) -> None:
        response.sequenceId = rpc.sequenceId
        log.debug("rpc %d seq %d -> code %d", rpc.func, rpc.sequenceId, response.code)
        reply(Channel.CONTROL, vs.YtMsg(response=response).SerializeToString())
        if after is not None:
            after()

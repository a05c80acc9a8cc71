"""The VisionSeed personality of the link: the same LinkServer, framed and spoken the VisionSeed way.

:class:`VisionSeedLinkServer` is the native :class:`~seedcam_firmware.link_server.LinkServer`
(same transports, reopening, write timeouts and drop counting) with two pieces
swapped at the edge:

* the framing: VisionSeed's SOF / escape / CRC-16 frames
  (:mod:`seedcam.protocol.visionseed_framing`) instead of COBS frames, so every
  garbage byte, bad CRC, truncated or oversize frame is counted in the same
  :class:`~seedcam.protocol.framing.LinkCounters`, and never raises;
* the messages: what the daemon sends (a Result, a Health, a Hello) is turned
  into a ``YtMsg`` (a ``dataV2`` result tree, a ``systemStatusResult``
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

from google.protobuf.message import DecodeError, Message

from seedcam._proto import seedcam_pb2 as pb
from seedcam._proto import visionseed_pb2 as vs
from seedcam.protocol import codec
from seedcam.protocol.framing import Channel, Flag, Frame, LinkCounters
from seedcam.protocol.visionseed_framing import VisionSeedDecoder, encode_visionseed
from seedcam_firmware.link_server import LinkServer
from seedcam_firmware.visionseed.results import heartbeat_message, result_message

__all__ = [
    "MIN_RECEIVE_PAYLOAD",
    "RpcHandler",
    "RpcOutcome",
    "VisionSeedFrameDecoder",
    "VisionSeedFrameEncoder",
    "VisionSeedLinkServer",
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
    """Frames payloads the VisionSeed way; counts what it encodes. Channel, flags and seq are not on the wire."""

    def __init__(self, max_frame_size: int) -> None:
        self.max_frame_size = max_frame_size
        self.counters = LinkCounters()

    def encode(self, channel: Channel, payload: bytes, *, flags: Flag = Flag.NONE, seq: int | None = None) -> bytes:
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


class VisionSeedLinkServer(LinkServer):
    """A LinkServer that speaks VisionSeed's protocol (see the module docstring).

    Args:
        url: firmware-side link URL (as for LinkServer).
        handler: answers one ``YtRpc`` (never raises).
        on_connect: called after the link (re)opens; the daemon sends a Hello, which goes out as a heartbeat.
        max_frame_size: largest payload sent; at least :data:`MIN_RECEIVE_PAYLOAD` is accepted,
            so the clients' 128 KiB upload chunks fit.
        write_timeout, line_rate_bps, reopen_interval, transport_options: as for LinkServer.

    Raises:
        LinkBroken: the link cannot be opened at start.
    """

    def __init__(
        self,
        url: str,
        handler: RpcHandler,
        *,
        on_connect: Callable[[], None] | None = None,
        max_frame_size: int = 65536,
        write_timeout: float = 0.25,
        line_rate_bps: int | None = None,
        reopen_interval: float = 0.5,
        transport_options: dict[str, object] | None = None,
    ) -> None:
        super().__init__(
            url,
            _no_native_requests,
            on_connect=on_connect,
            max_frame_size=max_frame_size,
            write_timeout=write_timeout,
            line_rate_bps=line_rate_bps,
            reopen_interval=reopen_interval,
            transport_options=transport_options,
        )
        self._encoder = VisionSeedFrameEncoder(max_frame_size)  # type: ignore[assignment]
        self._decoder = VisionSeedFrameDecoder(max(max_frame_size, MIN_RECEIVE_PAYLOAD))  # type: ignore[assignment]
        self._rpc = handler
        self._heartbeat_lock = threading.Lock()
        self._next_heartbeat = 0
        self._last_frame_id = 0
        # RPCs run in order on one worker, never on the reader thread: an upload's last chunk imports a
        # model (loads and runs it), and the reader must keep draining and counting the link meanwhile
        self._rpcs: queue.SimpleQueue[vs.YtRpc | None] = queue.SimpleQueue()
        self._rpc_thread = threading.Thread(target=self._rpc_loop, name="seedcam-visionseed-rpc", daemon=True)
        self._rpc_thread.start()

    def close(self) -> None:
        """Stop the reader and the RPC worker and close the transport. Idempotent."""
        super().close()
        self._rpcs.put(None)
        if self._rpc_thread.is_alive() and threading.current_thread() is not self._rpc_thread:
            self._rpc_thread.join(timeout=5.0)

    def _rpc_loop(self) -> None:
        while (rpc := self._rpcs.get()) is not None:
            try:
                response, after = self._rpc(rpc)
                self._answer(rpc, response, after)
            except Exception:  # a bug here must not end the worker: every later RPC would go unanswered
                log.exception("answering a VisionSeed rpc failed")

    @property
    def heartbeats_sent(self) -> int:
        """How many heartbeats were handed to the link (the next heartBeatId)."""
        return self._next_heartbeat

    def send(self, channel: Channel, message: Message) -> bool:
        """Send what the daemon hands over, as the matching ``YtMsg``; returns False if it was dropped.

        A ``Result`` becomes a ``dataV2`` tree, a Hello or Health a ``systemStatusResult``
        heartbeat (id 0 for the first one after boot). LOG records are not sent.
        """
        if channel is Channel.RESULT and isinstance(message, pb.Result):
            result = codec.result_from_pb(message)
            self._last_frame_id = result.frame_id
            try:
                payload = result_message(result).SerializeToString()
            except ValueError as exc:
                self.frames_dropped += 1
                log.error("dropped result %d: %s", result.frame_id, exc)
                return False
            return self._send_payload(Channel.RESULT, payload)
        if channel is Channel.STATUS and isinstance(message, pb.StatusEvent):
            with self._heartbeat_lock:
                heartbeat_id = self._next_heartbeat
                self._next_heartbeat += 1
            heartbeat = heartbeat_message(
                heartbeat_id, frame_id=self._last_frame_id, timestamp_us=time.monotonic_ns() // 1000
            )
            return self._send_payload(Channel.STATUS, heartbeat.SerializeToString())
        return False  # LOG (and anything else): VisionSeed has no such message

    def _handle(self, frame: Frame) -> None:
        try:
            self._handle_payload(frame.payload)
        except Exception:  # a bug here must not end the reader thread: the link would go deaf
            log.exception("handling a VisionSeed message failed")

    def _handle_payload(self, payload: bytes) -> None:
        message = vs.YtMsg()
        try:
            message.ParseFromString(payload)
        except DecodeError as exc:
            self.undecodable_requests += 1
            log.debug("undecodable message from the host: %s", exc)
            return
        kind = message.WhichOneof("values")
        if kind != "rpc":
            log.debug("ignored a %s message from the host", kind)
            return
        rpc = message.rpc
        if not rpc.IsInitialized():  # no function, or one this schema does not know (a closed proto2 enum)
            self.undecodable_requests += 1
            missing = ", ".join(rpc.FindInitializationErrors())
            response = vs.YtRpcResponse(code=vs.YtRpcResponse.ERROR_PARAMETERS, strData=f"undecodable rpc: {missing}")
            self._answer(rpc, response, None)
        else:
            self._rpcs.put(rpc)  # answered by the worker, in order

    def _answer(self, rpc: vs.YtRpc, response: vs.YtRpcResponse, after: Callable[[], None] | None) -> None:
        response.sequenceId = rpc.sequenceId
        log.debug("rpc %d seq %d -> code %d", rpc.func, rpc.sequenceId, response.code)
        self._send_payload(Channel.CONTROL, vs.YtMsg(response=response).SerializeToString())
        if after is not None:
            after()


def _no_native_requests(request: pb.Request) -> pb.Response:
    """Never called: this link decodes VisionSeed RPCs, not native requests."""
    return pb.Response(status=pb.STATUS_UNSUPPORTED, message="this link speaks the VisionSeed protocol")

"""The native seedcam protocol as a link personality: COBS frames, protobuf messages, the SDK's codec.

The typed values the daemon hands over are encoded with
:mod:`seedcam.protocol.codec` and :mod:`seedcam.protocol.compact`, the code the
host SDK decodes them with. A Result goes out in protocol 2's compact layout,
its latency figure measured up to its encoding; when it needs names the host has
not been told, a ``ResultDictionary`` status event goes first (and the link keeps
announcing that generation until one announcement was written). Every DeviceInfo
this personality sends, as a Hello or as the answer to an info call, carries the
dictionary in force.

A host speaking another protocol version gets, to each of its CONTROL requests, a
``STATUS_UNSUPPORTED`` response in its own version's framing that names both
versions (protocol 1's Request and Response are protocol 2's). Requests on the CONTROL
channel go to a :data:`RequestHandler` (the :class:`~seedcam_firmware.rpc.Dispatcher`),
TRANSFER-channel requests to a :data:`TransferHandler`
(:class:`~seedcam_firmware.transfer.UpdateService`), and each answer goes back
with the request's sequence number.

With a link key (a :class:`~seedcam.protocol.signing.Verifier`), every request
on those channels must be signed: one whose signature is missing, wrong, outside
the time window or replayed is not handled; it is counted and answered with
``STATUS_UNAUTHENTICATED`` (docs/link-auth.md).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from google.protobuf.message import Message

from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import ProtocolError
from seedcam.protocol import codec
from seedcam.protocol.compact import CompactEncoder
from seedcam.protocol.framing import PROTOCOL_VERSION, Channel, Decoder, Encoder, Flag, Frame
from seedcam.protocol.signing import SIGNED_CHANNELS, Verifier
from seedcam.types import DeviceInfo, Health, Result
from seedcam_firmware.link_personality import Outgoing, Personality, Reply

__all__ = ["NativePersonality", "RequestHandler", "TransferHandler"]

log = logging.getLogger(__name__)

#: older protocol versions whose hosts are told, in their own framing, that this device speaks another
_ANSWERED_VERSIONS = frozenset({1})

RequestHandler = Callable[[pb.Request], pb.Response]
#: answers one TRANSFER-channel request payload through the reply function (see seedcam_firmware.transfer)
TransferHandler = Callable[[bytes, Callable[[bytes], None]], None]


class NativePersonality(Personality):
    """Speaks the seedcam protocol (see the module docstring).

    Args:
        handler: turns a request into a response (never raises).
        transfer_handler: answers TRANSFER-channel requests (None: they are ignored).
        verifier: the link key's check; every request must then be signed (None: no key).
        timings: the initial ``pipeline.timings`` mode (``off``, ``summary``, ``full``).

    Raises:
        ValueError: ``timings`` is not a timings mode.
    """

    def __init__(
        self,
        handler: RequestHandler,
        *,
        transfer_handler: TransferHandler | None = None,
        verifier: Verifier | None = None,
        timings: str = "summary",
    ) -> None:
        self._handler = handler
        self._results = CompactEncoder(timings)
        self._results_lock = threading.Lock()
        self._announced_generation = 0
        self._transfer_handler = transfer_handler
        self._verifier = verifier
        self.authenticated = verifier is not None
        self._refusals_logged: set[str] = set()

    def encoder(self, max_frame_size: int) -> Encoder:
        return Encoder(max_frame_size=max_frame_size)

    def decoder(self, max_frame_size: int) -> Decoder:
        return Decoder(max_frame_size, answer_versions=_ANSWERED_VERSIONS)

    def set_timings(self, mode: str) -> None:
        """Change ``pipeline.timings`` live (the next result is encoded under a new dictionary).

        Raises:
            ValueError: ``mode`` is not a timings mode.
        """
        with self._results_lock:
            self._results.set_timings(mode)

    def result(self, result: Result) -> tuple[Outgoing, ...]:
        with self._results_lock:
            fresh, payload = self._results.encode(result, time.monotonic_ns() // 1000)
            generation = self._results.generation
            # the anchored copy is made only for an announcement, not for every frame
            dictionary = None if generation == self._announced_generation else fresh or self._results.dictionary
        outgoing = Outgoing(Channel.RESULT, payload)
        if dictionary is None:
            return (outgoing,)
        event = pb.StatusEvent(dictionary=pb.ResultDictionary())
        codec.result_dictionary_to_pb(dictionary, event.dictionary)

        def announced(generation: int = dictionary.generation) -> None:
            self._announced_generation = max(self._announced_generation, generation)

        return Outgoing(Channel.STATUS, event.SerializeToString(), announced), outgoing

    def _current_dictionary(self, out: pb.ResultDictionary) -> None:
        with self._results_lock:
            dictionary = self._results.dictionary
        codec.result_dictionary_to_pb(dictionary, out)

    def health(self, health: Health) -> Outgoing:
        event = pb.StatusEvent(health=pb.Health())
        codec.health_to_pb(health, event.health)
        return Outgoing(Channel.STATUS, event.SerializeToString())

    def hello(self, info: DeviceInfo) -> Outgoing:
        event = pb.StatusEvent(hello=pb.Hello())
        codec.device_info_to_pb(info, event.hello.device)
        self._current_dictionary(event.hello.device.result_dictionary)
        return Outgoing(Channel.STATUS, event.SerializeToString())

    def log(self, record: pb.LogRecord) -> Outgoing:
        return Outgoing(Channel.LOG, record.SerializeToString())

    def message(self, channel: Channel, message: Message) -> Outgoing:
        return Outgoing(channel, message.SerializeToString())

    def handle(self, frame: Frame, reply: Reply) -> None:
        if frame.version != PROTOCOL_VERSION:
            self._refuse_version(frame, reply)
            return
        if self._verifier is not None and frame.channel in SIGNED_CHANNELS and not frame.flags & Flag.RESPONSE:
            payload, reason = self._verifier.verify(frame)
            if payload is None:
                self._refuse(frame, reason, reply)
                return
            frame = replace(frame, payload=payload)
        if frame.channel == Channel.TRANSFER and self._transfer_handler is not None and not frame.flags & Flag.RESPONSE:
            seq = frame.seq

            def answer(payload: bytes) -> None:
                reply(Channel.TRANSFER, payload, seq=seq, flags=Flag.RESPONSE)

            self._transfer_handler(frame.payload, answer)
            return
        if frame.channel != Channel.CONTROL or frame.flags & Flag.RESPONSE:
            log.debug("ignored a %s frame from the host", frame.channel.name)
            return
        kind = "(undecodable)"
        try:
            request = codec.parse(pb.Request, frame.payload)
        except ProtocolError as exc:
            self.undecodable_requests += 1
            response = pb.Response(status=pb.STATUS_INVALID_ARGUMENT, message=str(exc))
        else:
            kind = request.WhichOneof("body")
            response = self._handler(request)
            if response.HasField("info"):
                self._current_dictionary(response.info.result_dictionary)
        log.debug("request %s seq %d -> status %d", kind, frame.seq, response.status)
        reply(Channel.CONTROL, response.SerializeToString(), seq=frame.seq, flags=Flag.RESPONSE)

    def _refuse_version(self, frame: Frame, reply: Reply) -> None:
        """Tell a host of another protocol version, in its framing, which versions meet here."""
        if frame.channel != Channel.CONTROL or frame.flags & Flag.RESPONSE:
            return
        message = (
            f"this device speaks seedcam protocol {PROTOCOL_VERSION}, the host protocol {frame.version}: "
            f"install a seedcam host package that speaks protocol {PROTOCOL_VERSION}"
        )
        log.warning("refused a request in protocol %d (this device speaks %d)", frame.version, PROTOCOL_VERSION)
        answer = pb.Response(status=pb.STATUS_UNSUPPORTED, message=message).SerializeToString()
        reply(Channel.CONTROL, answer, seq=frame.seq, flags=Flag.RESPONSE, version=frame.version)

    def _refuse(self, frame: Frame, reason: str, reply: Reply) -> None:
        """Count and answer a request whose signature did not verify (its payload is not read)."""
        self.unauthenticated_requests += 1
        level = logging.DEBUG if reason in self._refusals_logged else logging.WARNING
        self._refusals_logged.add(reason)
        log.log(level, "refused a %s request seq %d: link signature %s", frame.channel.name, frame.seq, reason)
        message = f"request refused: link key signature {reason.replace('_', ' ')} (see docs/link-auth.md)"
        if frame.channel == Channel.TRANSFER:
            answer = pb.UpdateResponse(status=pb.STATUS_UNAUTHENTICATED, reason="unauthenticated", message=message)
            payload = answer.SerializeToString()
        else:
            payload = pb.Response(status=pb.STATUS_UNAUTHENTICATED, message=message).SerializeToString()
        reply(frame.channel, payload, seq=frame.seq, flags=Flag.RESPONSE)

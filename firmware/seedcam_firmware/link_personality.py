"""The seam between the link server and a wire protocol: what a personality is.

:class:`~seedcam_firmware.link_server.LinkServer` owns everything a protocol
does not care about: the transport and its reopening, the reader thread, write
timeouts, drop counting and the link counters. A :class:`Personality` owns what
makes a protocol: its framing, how the typed values the daemon hands over
(:class:`~seedcam.types.Result`, :class:`~seedcam.types.Health`,
:class:`~seedcam.types.DeviceInfo`) become payloads, and how a request from the
host is answered. Two personalities exist: the native seedcam protocol
(:class:`~seedcam_firmware.link_native.NativePersonality`) and VisionSeed's
(:class:`~seedcam_firmware.visionseed.link.VisionSeedPersonality`).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol

from google.protobuf.message import Message

from seedcam._proto import seedcam_pb2 as pb
from seedcam.protocol.framing import PROTOCOL_VERSION, Channel, Flag, Frame, LinkCounters
from seedcam.types import DeviceInfo, Health, Result

__all__ = ["FrameDecoder", "FrameEncoder", "Outgoing", "Personality", "Reply"]


class FrameEncoder(Protocol):
    """A protocol's framing, sending side (:class:`seedcam.protocol.framing.Encoder` is one)."""

    max_frame_size: int

    @property
    def counters(self) -> LinkCounters:
        """What was sent (``frames_tx``, ``bytes_tx``)."""
        ...

    def encode(
        self,
        channel: Channel,
        payload: bytes,
        *,
        flags: Flag = Flag.NONE,
        seq: int | None = None,
        version: int = PROTOCOL_VERSION,
    ) -> bytes:
        """One payload as bytes on the wire (a protocol without channels, seq or versions ignores them).

        Raises:
            ValueError: the payload is larger than ``max_frame_size``.
        """
        ...


class FrameDecoder(Protocol):
    """A protocol's framing, receiving side (:class:`seedcam.protocol.framing.Decoder` is one)."""

    max_frame_size: int
    #: what was received and dropped; the link server carries it over to the decoder of a new peer
    counters: LinkCounters

    def feed(self, data: bytes) -> list[Frame]:
        """Consume bytes; return the complete frames (never raises, counts bad input)."""
        ...


class Reply(Protocol):
    """Sends one payload on the link now; returns False when it was dropped (the link's ``_send_payload``)."""

    def __call__(
        self,
        channel: Channel,
        payload: bytes,
        *,
        seq: int | None = None,
        flags: Flag = Flag.NONE,
        version: int = PROTOCOL_VERSION,
    ) -> bool:
        """Frame and write one payload (``version``: see :meth:`FrameEncoder.encode`)."""
        ...


class Outgoing(NamedTuple):
    """One message ready for the link: the channel it goes out on and its encoded payload."""

    channel: Channel
    payload: bytes
    #: called once the frame is written (a personality learns what reached the wire)
    on_sent: Callable[[], None] | None = None


class Personality(abc.ABC):
    """One wire protocol spoken over a :class:`~seedcam_firmware.link_server.LinkServer`.

    The message methods return None when the protocol has no such message (the
    link then reports the send as not made, without counting a drop). They may
    be called from any thread.

    Attributes:
        undecodable_requests: requests from the host the protocol could not decode
            (counted before they are answered).
        authenticated: every request must carry a valid link-key signature (see
            :mod:`seedcam.protocol.signing`); only then may the link listen beyond loopback.
        unauthenticated_requests: requests refused for a missing, bad or old signature.
    """

    undecodable_requests: int = 0
    authenticated: bool = False
    unauthenticated_requests: int = 0

    @abc.abstractmethod
    def encoder(self, max_frame_size: int) -> FrameEncoder:
        """A new framing encoder (one per link server)."""

    @abc.abstractmethod
    def decoder(self, max_frame_size: int) -> FrameDecoder:
        """A new framing decoder (one per peer: a reopened link starts with a fresh one)."""

    @abc.abstractmethod
    def result(self, result: Result) -> Sequence[Outgoing]:
        """One processed frame's Result: the messages to send, in order (none: no equivalent).

        The link sends them back to back and stops at the first it cannot send.

        Raises:
            ValueError: the result does not fit the protocol (the link drops and counts it).
        """

    @abc.abstractmethod
    def health(self, health: Health) -> Outgoing | None:
        """The periodic health report."""

    @abc.abstractmethod
    def hello(self, info: DeviceInfo) -> Outgoing | None:
        """The announcement sent whenever the link (re)opens."""

    def log(self, record: pb.LogRecord) -> Outgoing | None:
        """A firmware log record forwarded to the host (none by default)."""
        return None

    def message(self, channel: Channel, message: Message) -> Outgoing | None:
        """A native protobuf message built by the caller, sent as it is (none by default)."""
        return None

    @abc.abstractmethod
    def handle(self, frame: Frame, reply: Reply) -> None:
        """Answer one frame from the host through ``reply`` (now or later, from any thread).

        Called on the link's reader thread; an exception is logged and the link keeps reading.
        """

    def start(self) -> None:  # noqa: B027 - a hook: most personalities need no start
        """Called once before the link starts reading (start worker threads here)."""

    def close(self) -> None:  # noqa: B027 - a hook: most personalities hold nothing
        """Called once when the link closes (stop worker threads here). Idempotent."""

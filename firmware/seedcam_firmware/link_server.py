"""The firmware's end of the link: frames out, requests in, answers back.

Uses the same framing and codec as the SDK (``seedcam.protocol``): the code that
frames a byte here is the code that parses it on the host.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from google.protobuf.message import Message

from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import LinkBroken, ProtocolError, SensorError
from seedcam.protocol import codec
from seedcam.protocol.framing import DELIMITER, Channel, Decoder, Encoder, Flag, Frame, LinkCounters, link_counters
from seedcam.transport import Transport, open_transport, register_backend

register_backend("ffs", "seedcam_firmware.usb.ffs:FfsTransport")  # the USB gadget's vendor bulk interface

__all__ = ["LinkServer", "RequestHandler"]

log = logging.getLogger(__name__)

RequestHandler = Callable[[pb.Request], pb.Response]
#: answers one TRANSFER-channel request payload through the reply function (see seedcam_firmware.transfer)
TransferHandler = Callable[[bytes, Callable[[bytes], None]], None]

_READ_CHUNK = 65536
_POLL_S = 0.1
_FAST_LINK_BPS = 10_000_000  # pty, TCP, USB: assume at least ~1 MB/s
_RESYNC_TIMEOUT_S = 0.05


class LinkServer:
    """Serves one link URL (``pty``, ``pty:///path``, a serial device, ``tcp-listen://...``).

    A reader thread decodes requests and answers them with ``handler``; any
    thread may :meth:`send`. When the transport breaks (a USB gadget unplugged)
    the server reopens it in the background; frames sent meanwhile are dropped
    and counted, never queued up.

    Args:
        url: firmware-side link URL.
        handler: turns a request into a response (never raises).
        on_connect: called after the link (re)opens, e.g. to send a Hello.
        max_frame_size: largest payload accepted or sent.
        write_timeout: a frame that cannot be written in this time (plus twice its
            time on the wire) is dropped.
        line_rate_bps: the link's baud rate when it is a UART (or throttled); None = fast.

    Raises:
        LinkBroken: the link cannot be opened at start.
    """

    def __init__(
        self,
        url: str,
        handler: RequestHandler,
        *,
        on_connect: Callable[[], None] | None = None,
        max_frame_size: int = 65536,
        write_timeout: float = 0.25,
        line_rate_bps: int | None = None,
        reopen_interval: float = 0.5,
        transport_options: dict[str, object] | None = None,
        transfer_handler: TransferHandler | None = None,
    ) -> None:
        base, sep, query = url.partition("?")
        self.url = f"pty://{sep}{query}" if base == "pty" else url  # "pty" is short for a pty without a link
        self._handler = handler
        self._transfer_handler = transfer_handler
        self._on_connect = on_connect
        self._write_timeout = write_timeout
        # a frame may take twice its time on the wire before it counts as stuck (8N1: 10 bits a byte)
        self._seconds_per_byte = 2 * 10 / (line_rate_bps or _FAST_LINK_BPS)
        self._reopen_interval = reopen_interval
        self._options = transport_options or {}
        self._encoder = Encoder(max_frame_size=max_frame_size)
        self._decoder = Decoder(max_frame_size=max_frame_size)
        self._send_lock = threading.Lock()
        self._open_lock = threading.Lock()
        self._stop = threading.Event()
        self.frames_dropped = 0
        self.undecodable_requests = 0
        self._transport: Transport | None = open_transport(self.url, **self._options)
        self._thread = threading.Thread(target=self._serve, name="seedcam-link", daemon=True)

    @property
    def device_path(self) -> str:
        """Where a host connects: the pty's stable link or slave path, else the URL."""
        transport = self._transport
        transport = getattr(transport, "inner", transport)  # look through a throttle
        for attribute in ("link_path", "slave_path"):
            value = getattr(transport, attribute, None)
            if value:
                return str(value)
        return self.url

    def start(self) -> None:
        """Start answering requests and announce the device."""
        self._thread.start()
        self._announce()

    def close(self) -> None:
        """Stop the reader and close the transport. Idempotent."""
        self._stop.set()
        with self._open_lock:
            transport, self._transport = self._transport, None
        if transport is not None:
            transport.close()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=2.0)

    @property
    def counters(self) -> LinkCounters:
        """The device's view of the link: decoder counters plus what was sent."""
        return link_counters(self._decoder, self._encoder)

    def send(self, channel: Channel, message: Message) -> bool:
        """Encode and send one message; returns False if it was dropped.

        A frame is dropped (and counted) when the link is down or the host does
        not drain it within the write timeout: the pipeline never blocks on a
        host that is not listening.
        """
        return self._send_payload(channel, message.SerializeToString())

    def _send_payload(
        self, channel: Channel, payload: bytes, *, seq: int | None = None, flags: Flag = Flag.NONE
    ) -> bool:
        with self._send_lock:
            transport = self._transport
            if transport is None:
                self.frames_dropped += 1
                return False
            try:
                data = self._encoder.encode(channel, payload, flags=flags, seq=seq)
            except ValueError:
                self.frames_dropped += 1
                oversize = True
            else:
                oversize = False
                try:
                    transport.write(data, self._write_timeout + len(data) * self._seconds_per_byte)
                except SensorError as exc:
                    self.frames_dropped += 1
                    log.debug("dropped %s frame: %s", channel.name, exc)
                    self._end_partial_frame(transport)
                    return False
        if oversize:  # logged outside the lock: the log handler sends on this link too
            log.error("dropped a %d-byte %s frame over the frame size limit", len(payload), channel.name)
            return False
        return True

    @staticmethod
    def _end_partial_frame(transport: Transport) -> None:
        """After a write that may have stopped half-way, a delimiter lets the host resync at once."""
        try:
            transport.write(DELIMITER, _RESYNC_TIMEOUT_S)
        except SensorError:
            pass  # the link is down or still full; the host's decoder resyncs at the next frame

    def _announce(self) -> None:
        transport = self._transport
        if transport is not None:
            self._end_partial_frame(transport)  # whatever the host buffered before is not glued to the Hello
        if self._on_connect is not None:
            try:
                self._on_connect()
            except Exception:
                log.exception("on_connect hook failed")

    def _serve(self) -> None:
        while not self._stop.is_set():
            transport = self._transport
            if transport is None:
                return
            try:
                data = transport.read(_READ_CHUNK, _POLL_S)
            except LinkBroken as exc:
                if self._stop.is_set():
                    return
                log.warning("link %s broke: %s; reopening", self.url, exc)
                self._reopen(transport)
                continue
            if data:
                for frame in self._decoder.feed(data):
                    self._handle(frame)

    def _reopen(self, broken: Transport) -> None:
        broken.close()
        while not self._stop.wait(self._reopen_interval):
            try:
                transport = open_transport(self.url, **self._options)
            except SensorError as exc:
                log.debug("reopen of %s failed: %s", self.url, exc)
                continue
            with self._open_lock:
                if self._stop.is_set():
                    transport.close()
                    return
                # a new peer: no half frame, no old sequence (type(): a personality brings its own framing)
                fresh = type(self._decoder)(self._decoder.max_frame_size)
                fresh.counters = self._decoder.counters
                self._decoder = fresh
                self._transport = transport
            self._announce()
            return

    def _handle(self, frame: Frame) -> None:
        if frame.channel == Channel.TRANSFER and self._transfer_handler is not None and not frame.flags & Flag.RESPONSE:
            seq = frame.seq
            self._transfer_handler(
                frame.payload,
                lambda payload: self._send_payload(Channel.TRANSFER, payload, seq=seq, flags=Flag.RESPONSE),
            )
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
        log.debug("request %s seq %d -> status %d", kind, frame.seq, response.status)
        self._send_payload(Channel.CONTROL, response.SerializeToString(), seq=frame.seq, flags=Flag.RESPONSE)

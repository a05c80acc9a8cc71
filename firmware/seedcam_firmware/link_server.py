"""The firmware's end of the link: typed values out, requests in, answers back.

One :class:`LinkServer` serves every wire protocol: it owns the transport
(opening, reopening after a break), the reader thread, write timeouts and drop
counting, and speaks through a :class:`~seedcam_firmware.link_personality.Personality`
plugged into it: the native seedcam protocol
(:class:`~seedcam_firmware.link_native.NativePersonality`, whose framing and
codec are the SDK's own, so the code that frames a byte here is the code that
parses it on the host) or VisionSeed's
(:class:`~seedcam_firmware.visionseed.link.VisionSeedPersonality`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from google.protobuf.message import Message

from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import LinkBroken, PeerClosed, SensorError
from seedcam.protocol.framing import DELIMITER, PROTOCOL_VERSION, Channel, Flag, Frame, LinkCounters
from seedcam.transport import Transport, open_transport
from seedcam.transport.url_options import TransportUrl, parse_transport_url
from seedcam.types import DeviceInfo, Health, Result
from seedcam_firmware.link_auth import check_listener
from seedcam_firmware.link_native import NativePersonality, RequestHandler
from seedcam_firmware.link_personality import Outgoing, Personality

__all__ = ["LinkServer", "RequestHandler"]

log = logging.getLogger(__name__)

_READ_CHUNK = 65536
_POLL_S = 0.1
_FAST_LINK_BPS = 10_000_000  # pty, TCP, USB: assume at least ~1 MB/s
_RESYNC_TIMEOUT_S = 0.05


class LinkServer:
    """Serves one link URL (``pty``, ``pty:///path``, a serial device, ``tcp-listen://...``).

    A reader thread decodes what the host sends and hands it to the
    personality, which answers; any thread may send. When the transport breaks
    (a USB gadget unplugged) the server reopens it in the background; frames sent
    meanwhile are dropped and counted, never queued up.

    Args:
        url: firmware-side link URL.
        personality: the wire protocol spoken; a plain request handler (the native
            :class:`~seedcam_firmware.rpc.Dispatcher`) is short for ``NativePersonality(handler)``.
        on_connect: called after the link (re)opens, e.g. to send a Hello.
        max_frame_size: largest payload sent (and received, unless the personality needs more).
        write_timeout: a frame that cannot be written in this time (plus twice its
            time on the wire) is dropped.
        line_rate_bps: the link's baud rate when it is a UART (or throttled); None = fast.
        reopen_interval: seconds between attempts to reopen a broken transport.
        transport_options: passed to :func:`~seedcam.transport.open_transport`.

    Raises:
        LinkBroken: the link cannot be opened at start.
        LinkKeyRequired: ``tcp-listen://`` beyond loopback with a personality that
            does not authenticate requests (no link key).
        ConfigError: the URL carries a host's ``?link_key_file=``.
    """

    def __init__(
        self,
        url: str,
        personality: Personality | RequestHandler,
        *,
        on_connect: Callable[[], None] | None = None,
        max_frame_size: int = 65536,
        write_timeout: float = 0.25,
        line_rate_bps: int | None = None,
        reopen_interval: float = 0.5,
        transport_options: dict[str, object] | None = None,
    ) -> None:
        parsed = parse_transport_url(url)
        # "pty" is short for a pty without a link
        self.url = str(TransportUrl("pty://", parsed.throttle)) if parsed.base == "pty" else url
        self._personality = personality if isinstance(personality, Personality) else NativePersonality(personality)
        check_listener(url, authenticated=self._personality.authenticated)
        self._on_connect = on_connect
        self._write_timeout = write_timeout
        # a frame may take twice its time on the wire before it counts as stuck (8N1: 10 bits a byte)
        self._seconds_per_byte = 2 * 10 / (line_rate_bps or _FAST_LINK_BPS)
        self._reopen_interval = reopen_interval
        self._options = transport_options or {}
        self._max_frame_size = max_frame_size
        self._encoder = self._personality.encoder(max_frame_size)
        self._decoder = self._personality.decoder(max_frame_size)
        self._send_lock = threading.RLock()  # send_result holds it across an announcement and its result
        self._open_lock = threading.Lock()
        self._stop = threading.Event()
        self.frames_dropped = 0
        #: results not sent: too large for the protocol, or not taken by the host in time
        self.results_dropped = 0
        self._transport: Transport | None = open_transport(self.url, **self._options)
        self._thread = threading.Thread(target=self._serve, name="seedcam-link", daemon=True)

    @property
    def personality(self) -> Personality:
        """The wire protocol this link speaks."""
        return self._personality

    @property
    def undecodable_requests(self) -> int:
        """Requests from the host that could not be decoded (answered with an error where the protocol can)."""
        return self._personality.undecodable_requests

    @property
    def unauthenticated_requests(self) -> int:
        """Requests refused for a missing, bad or old link-key signature."""
        return self._personality.unauthenticated_requests

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
        self._personality.start()
        self._thread.start()
        self._announce()

    def close(self) -> None:
        """Stop the reader and the personality and close the transport. Idempotent."""
        self._stop.set()
        with self._open_lock:
            transport, self._transport = self._transport, None
        if transport is not None:
            transport.close()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=2.0)
        self._personality.close()

    @property
    def counters(self) -> LinkCounters:
        """The device's view of the link: decoder counters plus what was sent."""
        counters = self._decoder.counters.snapshot()
        sent = self._encoder.counters
        counters.frames_tx, counters.bytes_tx = sent.frames_tx, sent.bytes_tx
        return counters

    # ------------------------------------------------------------------ sending typed values

    def send_result(self, result: Result) -> bool:
        """Send one processed frame's Result; returns False if it was dropped or has no equivalent.

        A frame is dropped (and counted in :attr:`results_dropped`) when the link is down,
        the result does not fit the protocol, or the host does not drain it within the
        write timeout: the pipeline never blocks on a host that is not listening.
        """
        try:
            outgoing = self._personality.result(result)
        except ValueError as exc:
            self.frames_dropped += 1
            self.results_dropped += 1
            log.error("dropped result %d: %s", result.frame_id, exc)
            return False
        if not outgoing:
            return False
        with self._send_lock:  # an announcement and the result it precedes go out back to back
            for item in outgoing:
                if not self._send_outgoing(item):
                    self.results_dropped += 1
                    return False
        return True

    def send_health(self, health: Health) -> bool:
        """Send the periodic health report; returns False if it was dropped."""
        return self._send_outgoing(self._personality.health(health))

    def send_hello(self, info: DeviceInfo) -> bool:
        """Announce the device (on every (re)connect); returns False if it was dropped."""
        return self._send_outgoing(self._personality.hello(info))

    def send_log(self, record: pb.LogRecord) -> bool:
        """Forward one log record; returns False if it was dropped or the protocol has no log messages."""
        return self._send_outgoing(self._personality.log(record))

    def send(self, channel: Channel, message: Message) -> bool:
        """Send a native protobuf message as it is; returns False if it was dropped.

        For callers that build their own messages (a test's fake device); a
        personality that does not speak the native schema sends nothing.
        """
        return self._send_outgoing(self._personality.message(channel, message))

    def _send_outgoing(self, outgoing: Outgoing | None) -> bool:
        if outgoing is None:
            return False
        sent = self._send_payload(outgoing.channel, outgoing.payload)
        if sent and outgoing.on_sent is not None:
            outgoing.on_sent()
        return sent

    def _send_payload(
        self,
        channel: Channel,
        payload: bytes,
        *,
        seq: int | None = None,
        flags: Flag = Flag.NONE,
        version: int = PROTOCOL_VERSION,
    ) -> bool:
        with self._send_lock:
            transport = self._transport
            if transport is None:
                self.frames_dropped += 1
                return False
            try:
                data = self._encoder.encode(channel, payload, flags=flags, seq=seq, version=version)
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
                if isinstance(exc, PeerClosed):  # a host that leaves is no fault of the link
                    log.info("the host left link %s (%s); waiting for the next one", self.url, exc)
                else:
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
                # a new peer: no half frame, no old sequence
                fresh = self._personality.decoder(self._max_frame_size)
                fresh.counters = self._decoder.counters
                self._decoder = fresh
                self._transport = transport
            self._announce()
            return

    def _handle(self, frame: Frame) -> None:
        try:
            self._personality.handle(frame, self._send_payload)
        except Exception:  # a bug here must not end the reader thread: the link would go deaf
            log.exception("handling a %s frame from the host failed", frame.channel.name)

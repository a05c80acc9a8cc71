"""The host session: one reader thread, typed results, calls, health and auto-reconnect.

::

    import seedcam

    with seedcam.open("/dev/ttyACM0") as sensor:
        for result in sensor.results():
            steer_from(result.lane)  # your code

One thread reads the transport and sorts frames: results go to a bounded
latest-wins queue (and to callbacks), responses to the call waiting on their
sequence number, status events update :attr:`Sensor.health` and
:attr:`Sensor.device_info`. Results keep flowing while a call waits.
"""

from __future__ import annotations

import collections
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import LinkBroken, ProtocolError, RpcError, SensorError, SensorTimeout
from seedcam.protocol import codec
from seedcam.protocol.framing import DELIMITER, PROTOCOL_VERSION, Channel, Decoder, Encoder, Flag, Frame, link_counters
from seedcam.transport import Transport, open_transport
from seedcam.types import ConfigValue, DeviceInfo, Health, LinkStats, ModelInfo, Result, Snapshot, TaskList

__all__ = ["Sensor", "SensorStats", "ReconnectEvent"]

log = logging.getLogger(__name__)

_READ_CHUNK = 65536
_POLL_S = 0.1


@dataclass(frozen=True)
class ReconnectEvent:
    """The link came back after a loss.

    Attributes:
        device_rebooted: True when the boot id changed (the firmware restarted),
            False when the same firmware instance is back (a cable or port glitch).
        old_boot_id: boot id before the loss.
        new_boot_id: boot id after it.
        downtime_s: time without a link.
    """

    device_rebooted: bool
    old_boot_id: str
    new_boot_id: str
    downtime_s: float


@dataclass(frozen=True)
class SensorStats:
    """Host-side statistics of a session."""

    connected: bool
    link: LinkStats  #: what the host's decoder and encoder saw
    results_received: int
    results_dropped: int  #: overwritten in the latest-wins queue before anyone read them
    undecodable_messages: int  #: frames with a valid CRC whose protobuf did not parse
    reconnects: int
    device_reboots: int
    device_link: LinkStats | None  #: the device's view, from its latest health report


class _PendingCall:
    __slots__ = ("event", "response", "error")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.response: pb.Response | None = None
        self.error: SensorError | None = None


class Sensor:
    """A connection to one seedcam sensor. Use :func:`seedcam.open` to create one.

    Args:
        url: transport URL (device path, ``socket://host:port``, ``loop://`` ...).
        timeout: default timeout for calls and for the opening handshake, seconds.
        reconnect: reopen the transport by itself when it breaks.
        queue_size: results kept for :meth:`recv`; older ones are dropped first.
        reconnect_interval: seconds between reopen attempts.
        transport_options: passed to :func:`seedcam.transport.open_transport`.

    Raises:
        LinkBroken: the transport cannot be opened.
        SensorTimeout: the sensor did not answer the opening handshake in time.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 5.0,
        reconnect: bool = True,
        queue_size: int = 64,
        reconnect_interval: float = 0.2,
        **transport_options: Any,
    ) -> None:
        if queue_size < 1:
            raise ValueError("queue_size must be at least 1")
        self.url = url
        self.timeout = timeout
        self.reconnect = reconnect
        self.reconnect_interval = reconnect_interval
        self._transport_options = transport_options
        self._encoder = Encoder()
        self._decoder = Decoder()
        self._write_lock = threading.Lock()
        self._state = threading.Condition()
        self._results: collections.deque[Result] = collections.deque(maxlen=queue_size)
        self._pending: dict[int, _PendingCall] = {}
        self._result_callbacks: list[Callable[[Result], None]] = []
        self._health_callbacks: list[Callable[[Health], None]] = []
        self._reconnect_callbacks: list[Callable[[ReconnectEvent], None]] = []
        self._transfer_callbacks: list[Callable[[Frame], None]] = []  # seedcam.updates
        self._device_info: DeviceInfo | None = None
        self._health: Health | None = None
        self._last_reconnect: ReconnectEvent | None = None
        self._lost_at: float | None = None
        self._boot_id_before_loss = ""
        self._closed = False
        self._link_error: LinkBroken | None = None
        self._counts = collections.Counter[str]()
        self._reset_sequence = False  # set by any thread, acted on by the reader thread
        self._transport: Transport | None = self._open()
        self._reader = threading.Thread(target=self._read_loop, name=f"seedcam-reader {url}", daemon=True)
        self._reader.start()
        try:
            self._device_info = self.info(timeout=timeout)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Stop the reader thread and close the transport. Idempotent."""
        with self._state:
            if self._closed:
                return
            self._closed = True
            transport = self._transport
            self._fail_pending(LinkBroken("sensor closed"))
            self._state.notify_all()
        if transport is not None:
            transport.close()
        if threading.current_thread() is not self._reader:
            self._reader.join(timeout=2.0)

    def __enter__(self) -> Sensor:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Sensor {self.url!r} {'connected' if self.connected else 'disconnected'}>"

    @property
    def connected(self) -> bool:
        """True while the transport is open."""
        return self._transport is not None and not self._closed

    # ------------------------------------------------------------------ results

    def recv(self, timeout: float | None = None) -> Result | None:
        """Return the oldest unread result, waiting up to ``timeout`` s; None on timeout.

        Raises:
            LinkBroken: the link is down and will not come back (``reconnect=False``
                or the sensor was closed).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._state:
            while not self._results:
                self._raise_if_dead()
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._state.wait(remaining if remaining is not None else _POLL_S * 5)
            return self._results.popleft()

    def results(self, timeout: float | None = None) -> Iterator[Result]:
        """Iterate results as they arrive, forever.

        Args:
            timeout: if set, raise :class:`SensorTimeout` when no result arrives for that long.

        Raises:
            SensorTimeout: no result within ``timeout``.
            LinkBroken: the link is down for good.
        """
        while True:
            result = self.recv(timeout)
            if result is None:
                raise SensorTimeout(f"no result from {self.url} within {timeout} s")
            yield result

    def __iter__(self) -> Iterator[Result]:
        return self.results()

    async def aresults(self, timeout: float | None = None) -> AsyncIterator[Result]:
        """``async for result in sensor.aresults():`` — results without blocking the event loop."""
        import asyncio

        loop = asyncio.get_running_loop()
        while True:
            result = await loop.run_in_executor(None, self.recv, _POLL_S * 5 if timeout is None else timeout)
            if result is None:
                if timeout is not None:
                    raise SensorTimeout(f"no result from {self.url} within {timeout} s")
                continue
            yield result

    def __aiter__(self) -> AsyncIterator[Result]:
        return self.aresults()

    def on_result(self, callback: Callable[[Result], None]) -> Callable[[], None]:
        """Call ``callback(result)`` on the reader thread for every result; keep it quick.

        Returns:
            A function that unregisters the callback.
        """
        return self._register(self._result_callbacks, callback)

    def on_health(self, callback: Callable[[Health], None]) -> Callable[[], None]:
        """Call ``callback(health)`` for every health report. Returns the unregister function."""
        return self._register(self._health_callbacks, callback)

    def on_reconnect(self, callback: Callable[[ReconnectEvent], None]) -> Callable[[], None]:
        """Call ``callback(event)`` when the link comes back. Returns the unregister function."""
        return self._register(self._reconnect_callbacks, callback)

    # ------------------------------------------------------------------ state

    @property
    def device_info(self) -> DeviceInfo | None:
        """The latest device info (from the handshake or a Hello)."""
        return self._device_info

    @property
    def health(self) -> Health | None:
        """The latest health report, or None before the first."""
        return self._health

    @property
    def last_reconnect(self) -> ReconnectEvent | None:
        """The most recent reconnect, or None."""
        return self._last_reconnect

    @property
    def stats(self) -> SensorStats:
        """A snapshot of the session's counters."""
        counters = link_counters(self._decoder, self._encoder)
        health = self._health
        return SensorStats(
            connected=self.connected,
            link=codec.link_stats_from_counters(counters),
            results_received=self._counts["results"],
            results_dropped=self._counts["results_dropped"],
            undecodable_messages=self._counts["undecodable"],
            reconnects=self._counts["reconnects"],
            device_reboots=self._counts["reboots"],
            device_link=health.link if health else None,
        )

    # ------------------------------------------------------------------ calls

    def _call(self, request: pb.Request, timeout: float | None = None) -> pb.Response:
        """Send a request and wait for its response (the typed methods build on this).

        While the link is down and reconnecting, the call first waits for it to
        come back; the whole call, wait included, is bounded by ``timeout``.

        Raises:
            SensorTimeout: no response within ``timeout`` (default: the sensor's timeout).
            LinkBroken: the link broke before the response arrived.
            RpcError: the device answered with a non-OK status.
        """
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        pending = _PendingCall()
        with self._write_lock:
            seq = self._encoder.next_seq(Channel.CONTROL)
            with self._state:
                self._state.wait_for(lambda: self._transport is not None or self._closed or not self.reconnect, timeout)
                self._raise_if_dead()
                self._pending[seq] = pending
            try:
                self._write(
                    self._encoder.encode(Channel.CONTROL, request.SerializeToString(), seq=seq),
                    max(0.0, deadline - time.monotonic()),
                )
            except SensorError:
                with self._state:
                    self._pending.pop(seq, None)
                raise
        if not pending.event.wait(max(0.0, deadline - time.monotonic())):
            with self._state:
                self._pending.pop(seq, None)
            raise SensorTimeout(f"no answer to {request.WhichOneof('body')} from {self.url} within {timeout} s")
        if pending.error is not None:
            raise pending.error
        assert pending.response is not None
        response = pending.response
        if response.status != pb.STATUS_OK:
            raise RpcError(codec.status_name(response.status), response.status, response.message)
        return response

    def info(self, timeout: float | None = None) -> DeviceInfo:
        """Ask the device who it is (versions, boot id, serial number, models)."""
        response = self._call(pb.Request(info=pb.InfoRequest(host_protocol_version=PROTOCOL_VERSION)), timeout)
        info = codec.device_info_from_pb(response.info)
        self._observe_device(info)
        return info

    def config_get(self, key: str = "", timeout: float | None = None) -> object:
        """Read a config value by dotted key (``"camera.fps"``), a section, or all (``""``).

        Raises:
            RpcError: ``NOT_FOUND`` for an unknown key.
        """
        response = self._call(pb.Request(config_get=pb.ConfigGetRequest(key=key)), timeout)
        return _config_value(response).value

    def config_set(self, key: str, value: object, timeout: float | None = None) -> ConfigValue:
        """Change a config value; returns what the device stored and whether it needs a restart.

        Raises:
            ValueError: ``value`` cannot be encoded as JSON.
            RpcError: ``NOT_FOUND`` (unknown key) or ``INVALID_ARGUMENT`` (bad value).
        """
        try:
            encoded = json.dumps(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"config value for {key!r} is not JSON-encodable: {exc}") from exc
        response = self._call(pb.Request(config_set=pb.ConfigSetRequest(key=key, value_json=encoded)), timeout)
        return _config_value(response)

    def config_reset(self, key: str = "", timeout: float | None = None) -> ConfigValue:
        """Reset a key, a section or (``""``) the whole config to defaults."""
        response = self._call(pb.Request(config_reset=pb.ConfigResetRequest(key=key)), timeout)
        return _config_value(response)

    def models(self, timeout: float | None = None) -> tuple[ModelInfo, ...]:
        """List the model bundles on the device."""
        response = self._call(pb.Request(list_models=pb.ListModelsRequest()), timeout)
        return tuple(codec.model_info_from_pb(m) for m in response.models.models)

    def select_tasks(self, tasks: list[str] | tuple[str, ...], timeout: float | None = None) -> TaskList:
        """Choose which tasks run (e.g. ``["lane"]``); an empty list turns all off.

        Raises:
            RpcError: ``INVALID_ARGUMENT`` for an unknown task.
        """
        response = self._call(pb.Request(select_tasks=pb.SelectTasksRequest(tasks=list(tasks))), timeout)
        return TaskList(tuple(response.tasks.enabled), tuple(response.tasks.available))

    def snapshot(self, quality: int = 0, timeout: float | None = None) -> Snapshot:
        """Take a JPEG of the current camera frame (``quality`` 1..100, 0 = device default).

        Raises:
            ValueError: quality out of range.
            RpcError: ``FAILED_PRECONDITION`` before the first frame.
        """
        if not 0 <= quality <= 100:
            raise ValueError("JPEG quality must be 0..100")
        response = self._call(pb.Request(snapshot=pb.SnapshotRequest(quality=quality)), timeout)
        s = response.snapshot
        return Snapshot(s.jpeg, s.frame_id, s.capture_timestamp_us, s.width, s.height)

    def ping(self, payload: bytes = b"", timeout: float | None = None) -> float:
        """Round-trip a payload through the device; returns the round-trip time in seconds.

        Raises:
            ProtocolError: the payload came back altered.
        """
        start = time.monotonic()
        response = self._call(pb.Request(ping=pb.PingRequest(payload=payload)), timeout)
        if response.pong.payload != payload:
            raise ProtocolError("ping payload came back altered")
        return time.monotonic() - start

    def _send_frame(
        self, channel: Channel, payload: bytes, timeout: float | None, before_send: Callable[[int], None] | None = None
    ) -> int:
        """Send one frame on ``channel`` (the update channel's requests); returns its sequence number.

        ``before_send(seq)`` runs before the bytes go out, so a caller can expect
        the answer before it can arrive.

        Raises:
            LinkBroken: the link is down.
            SensorTimeout: the transport did not take the frame in time.
        """
        with self._write_lock:
            seq = self._encoder.next_seq(channel)
            if before_send is not None:
                before_send(seq)
            self._write(self._encoder.encode(channel, payload, seq=seq), timeout)
        return seq

    def _wait_link(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the link to be up; False when it is not (or the sensor closed)."""
        with self._state:
            self._state.wait_for(lambda: self._transport is not None or self._closed, timeout)
            return self._transport is not None and not self._closed

    # ------------------------------------------------------------------ reader thread

    def _open(self) -> Transport:
        """Open the transport and end any half frame the device may hold from an earlier host."""
        transport = open_transport(self.url, **self._transport_options)
        try:
            transport.write(DELIMITER, self.timeout)
        except SensorError:
            transport.close()
            raise
        return transport

    def _register(self, registry: list[Callable[[Any], None]], callback: Callable[[Any], None]) -> Callable[[], None]:
        with self._state:
            registry.append(callback)

        def unregister() -> None:
            with self._state:
                if callback in registry:
                    registry.remove(callback)

        return unregister

    def _write(self, data: bytes, timeout: float | None) -> None:
        transport = self._transport
        if transport is None:
            raise LinkBroken(f"link to {self.url} is down")
        transport.write(data, timeout)

    def _raise_if_dead(self) -> None:
        if self._closed:
            raise LinkBroken("sensor closed")
        if self._link_error is not None and not self.reconnect:
            raise self._link_error

    def _read_loop(self) -> None:
        while not self._closed:
            transport = self._transport
            if transport is None:
                if not self._try_reconnect():
                    return
                continue
            try:
                data = transport.read(_READ_CHUNK, _POLL_S)
            except LinkBroken as exc:
                self._on_link_lost(transport, exc)
                continue
            except Exception as exc:  # a transport bug must not kill the session silently
                log.exception("transport read failed")
                self._on_link_lost(transport, LinkBroken(f"transport failed: {exc}"))
                continue
            if self._reset_sequence:
                self._reset_sequence = False
                self._decoder.reset_sequence()
            if data:
                for frame in self._decoder.feed(data):
                    self._dispatch(frame)

    def _on_link_lost(self, transport: Transport, error: LinkBroken) -> None:
        transport.close()
        with self._state:
            if self._closed:
                return
            self._transport = None
            self._link_error = error
            self._lost_at = time.monotonic()
            self._boot_id_before_loss = self._device_info.boot_id if self._device_info else ""
            self._fail_pending(error)
            self._state.notify_all()
        log.warning("link to %s lost: %s", self.url, error)

    def _try_reconnect(self) -> bool:
        """Reopen the transport; returns False when the reader should stop."""
        if not self.reconnect:
            return False
        try:
            transport = self._open()
        except SensorError:
            with self._state:
                self._state.wait_for(lambda: self._closed, timeout=self.reconnect_interval)
            return not self._closed
        fresh = Decoder(self._decoder.max_frame_size)
        fresh.counters = self._decoder.counters
        with self._state:
            if self._closed:
                transport.close()
                return False
            self._decoder = fresh
            self._transport = transport
            self._link_error = None
            self._counts["reconnects"] += 1
            self._state.notify_all()  # calls waiting for the link
        # Ask who is there; the answer arrives on this thread and is handled in _observe_device.
        threading.Thread(target=self._handshake_after_reconnect, daemon=True).start()
        return True

    def _handshake_after_reconnect(self) -> None:
        try:
            self.info(timeout=self.timeout)
        except SensorError as exc:
            log.debug("handshake after reconnect failed: %s", exc)

    def _observe_device(self, info: DeviceInfo) -> None:
        with self._state:
            previous = self._device_info
            self._device_info = info
            lost_at, self._lost_at = self._lost_at, None
            old_boot = self._boot_id_before_loss or (previous.boot_id if previous else "")
            self._boot_id_before_loss = ""  # consumed: a later reboot must not report this stale id
        if lost_at is None and (previous is None or previous.boot_id == info.boot_id):
            return
        rebooted = bool(old_boot) and old_boot != info.boot_id
        event = ReconnectEvent(
            device_rebooted=rebooted,
            old_boot_id=old_boot,
            new_boot_id=info.boot_id,
            downtime_s=time.monotonic() - lost_at if lost_at is not None else 0.0,
        )
        if rebooted:
            self._counts["reboots"] += 1
            self._reset_sequence = True
        self._last_reconnect = event
        log.info("sensor %s back: %s", self.url, "device rebooted" if rebooted else "link restored")
        self._notify(self._reconnect_callbacks, event)

    def _dispatch(self, frame: Frame) -> None:
        try:
            if frame.channel == Channel.RESULT:
                message = codec.parse(pb.Result, frame.payload)
                self._on_result(codec.result_from_pb(message, received_monotonic=time.monotonic()))
            elif frame.channel == Channel.CONTROL and frame.flags & Flag.RESPONSE:
                self._on_response(frame.seq, codec.parse(pb.Response, frame.payload))
            elif frame.channel == Channel.STATUS:
                self._on_status(codec.parse(pb.StatusEvent, frame.payload))
            elif frame.channel == Channel.TRANSFER and frame.flags & Flag.RESPONSE:
                self._notify(self._transfer_callbacks, frame)
            elif frame.channel == Channel.LOG:
                record = codec.parse(pb.LogRecord, frame.payload)
                log.log(record.level or logging.INFO, "[device %s] %s", record.logger, record.message)
        except ProtocolError as exc:
            self._counts["undecodable"] += 1
            log.debug("dropped %s frame: %s", frame.channel.name, exc)
            if frame.channel == Channel.CONTROL:
                self._fail_call(frame.seq, exc)

    def _on_result(self, result: Result) -> None:
        with self._state:
            if len(self._results) == self._results.maxlen:
                self._counts["results_dropped"] += 1
            self._results.append(result)
            self._counts["results"] += 1
            self._state.notify_all()
        self._notify(self._result_callbacks, result)

    def _on_response(self, seq: int, response: pb.Response) -> None:
        with self._state:
            pending = self._pending.pop(seq, None)
        if pending is None:
            log.debug("response to unknown or expired request %d", seq)
            return
        pending.response = response
        pending.event.set()

    def _on_status(self, event: pb.StatusEvent) -> None:
        kind = event.WhichOneof("body")
        if kind == "health":
            health = codec.health_from_pb(event.health)
            self._health = health
            known = self._device_info
            if known is not None and health.boot_id and health.boot_id != known.boot_id and self._lost_at is None:
                # The firmware restarted behind a port that never went away (a real UART).
                with self._state:
                    self._lost_at = time.monotonic()
                    self._boot_id_before_loss = known.boot_id
                threading.Thread(target=self._handshake_after_reconnect, daemon=True).start()
            self._notify(self._health_callbacks, health)
        elif kind == "hello":
            self._observe_device(codec.device_info_from_pb(event.hello.device))

    def _fail_call(self, seq: int, error: SensorError) -> None:
        with self._state:
            pending = self._pending.pop(seq, None)
        if pending is not None:
            pending.error = error
            pending.event.set()

    def _fail_pending(self, error: SensorError) -> None:
        for pending in self._pending.values():
            pending.error = error
            pending.event.set()
        self._pending.clear()

    @staticmethod
    def _notify(callbacks: list[Callable[[Any], None]], value: object) -> None:
        for callback in list(callbacks):
            try:
                callback(value)
            except Exception:  # user code must not kill the reader thread
                log.exception("seedcam callback %r failed", callback)



def _config_value(response: pb.Response) -> ConfigValue:
    try:
        value = json.loads(response.config.value_json) if response.config.value_json else None
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"device sent an undecodable config value: {exc}") from exc
    return ConfigValue(response.config.key, value, response.config.restart_required)

"""A sensor: typed results, calls, health and reboot detection over one :class:`~seedcam.session.Session`.

::

    import seedcam

    with seedcam.open("/dev/ttyACM0") as sensor:
        for result in sensor.results():
            steer_from(result.lane)  # your code

The session's reader thread hands this class the frames of its channels:
results go to a bounded latest-wins queue (and to callbacks), status events
update :attr:`Sensor.health` and :attr:`Sensor.device_info`, device log records
go to this module's logger. Calls are control requests answered by sequence
number; results keep flowing while a call waits. Code that works with frames
(updates, recording) uses :attr:`Sensor.session`.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

from seedcam._boot_watch import BootWatch, ReconnectEvent
from seedcam._callbacks import Callbacks
from seedcam._compact_results import CompactResults
from seedcam._preview import PreviewClient
from seedcam._proto import seedcam_pb2 as pb
from seedcam._sensor_config import ConfigCalls
from seedcam._sensor_media import MediaCalls
from seedcam.errors import DeviceMismatch, LinkBroken, ProtocolError, RpcError, SensorError, SensorTimeout
from seedcam.protocol import codec
from seedcam.protocol.compact import StaleDictionary
from seedcam.protocol.framing import PROTOCOL_VERSION, Channel, Flag, Frame
from seedcam.session import Session
from seedcam.types import (
    DeviceInfo,
    Health,
    LinkStats,
    Result,
)

__all__ = ["Sensor", "SensorStats", "ReconnectEvent"]

log = logging.getLogger(__name__)

M = TypeVar("M", pb.StatusEvent, pb.LogRecord, pb.Response)  #: what the reader thread parses here

_POLL_S = 0.1
REBOOT_TIMEOUT_S = 30.0  #: how long :meth:`Sensor.reboot` waits by default (the firmware loads its models again)


@dataclass(frozen=True)
class SensorStats:
    """Host-side statistics of a session."""

    connected: bool
    link: LinkStats  #: what the host's decoder and encoder saw
    results_received: int
    results_dropped: int  #: overwritten in the latest-wins queue before anyone read them
    undecodable_messages: int  #: frames with a valid CRC whose payload did not parse
    #: results dropped because they named a dictionary this host had not received (it then asks for it)
    results_stale: int
    reconnects: int
    device_reboots: int
    device_link: LinkStats | None  #: the device's view, from its latest health report


@dataclass
class _Counts:
    results: int = 0
    results_dropped: int = 0
    undecodable: int = 0
    stale: int = 0
    reboots: int = 0


class Sensor(MediaCalls, ConfigCalls):
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
        self._session = Session(
            url, timeout=timeout, reconnect=reconnect, reconnect_interval=reconnect_interval, **transport_options
        )
        self._state = threading.Condition()
        self._results: collections.deque[Result] = collections.deque(maxlen=queue_size)
        self._result_callbacks: Callbacks[Result] = Callbacks(log)
        self._health_callbacks: Callbacks[Health] = Callbacks(log)
        self._reconnect_callbacks: Callbacks[ReconnectEvent] = Callbacks(log)
        self._boots = BootWatch(url)
        self._health: Health | None = None
        self._last_reconnect: ReconnectEvent | None = None
        self._counts = _Counts()
        self._compact = CompactResults()
        self._refreshing = threading.Lock()  # held while an info call fetches a missed dictionary
        self._preview = PreviewClient(self._call)
        session = self._session
        session.subscribe(Channel.RESULT, self._on_result_frame)
        session.subscribe(Channel.STATUS, self._on_status_frame)
        session.subscribe(Channel.LOG, self._on_log_frame)
        session.subscribe(Channel.CONTROL, self._on_stray_response)
        session.on_link_lost(self._on_link_lost)
        session.set_link_check(self._check_device)  # a reopened link is used once it leads to the same device
        session.start()
        try:
            self.info(timeout=timeout)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ lifecycle

    @property
    def session(self) -> Session:
        """The session under this sensor: frames by channel, for code beyond the typed calls (updates...)."""
        return self._session

    @property
    def url(self) -> str:
        return self._session.url

    @property
    def timeout(self) -> float:
        """Default timeout of calls, seconds."""
        return self._session.timeout

    @timeout.setter
    def timeout(self, value: float) -> None:
        self._session.timeout = value

    @property
    def reconnect(self) -> bool:
        """Whether the transport is reopened by itself when it breaks."""
        return self._session.reconnect

    @reconnect.setter
    def reconnect(self, value: bool) -> None:
        self._session.reconnect = value

    @property
    def reconnect_interval(self) -> float:
        """Seconds between reopen attempts."""
        return self._session.reconnect_interval

    @reconnect_interval.setter
    def reconnect_interval(self, value: float) -> None:
        self._session.reconnect_interval = value

    def close(self) -> None:
        """Stop the reader thread and close the transport. Idempotent."""
        self._session.close()  # first: a lease renewal waiting for its answer fails at once
        self._preview.close()
        with self._state:
            self._state.notify_all()

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
        return self._session.connected

    # ------------------------------------------------------------------ results

    def recv(self, timeout: float | None = None) -> Result | None:
        """Return the oldest unread result, waiting up to ``timeout`` s; None on timeout.

        Raises:
            LinkBroken: the link is down and will not come back (``reconnect=False``
                or the sensor was closed).
            DeviceMismatch: the link leads to another device than the first one (the sensor stopped).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._state:
            while not self._results:
                self._session.check_alive()
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
        return self._result_callbacks.add(callback)

    def on_health(self, callback: Callable[[Health], None]) -> Callable[[], None]:
        """Call ``callback(health)`` for every health report. Returns the unregister function."""
        return self._health_callbacks.add(callback)

    def on_reconnect(self, callback: Callable[[ReconnectEvent], None]) -> Callable[[], None]:
        """Call ``callback(event)`` when the link comes back. Returns the unregister function."""
        return self._reconnect_callbacks.add(callback)

    # ------------------------------------------------------------------ state

    @property
    def device_info(self) -> DeviceInfo | None:
        """The latest device info (from the handshake or a Hello)."""
        return self._boots.device_info

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
        health = self._health
        return SensorStats(
            connected=self.connected,
            link=codec.link_stats_from_counters(self._session.link_counters),
            results_received=self._counts.results,
            results_dropped=self._counts.results_dropped,
            undecodable_messages=self._counts.undecodable,
            results_stale=self._counts.stale,
            reconnects=self._session.reconnects,
            device_reboots=self._counts.reboots,
            device_link=health.link if health else None,
        )

    # ------------------------------------------------------------------ calls

    def _call(
        self,
        request: pb.Request,
        timeout: float | None = None,
        on_response: Callable[[Frame], None] | None = None,
    ) -> pb.Response:
        """Send a request and wait for its response (the typed methods build on this).

        While the link is down and reconnecting, the call first waits for it to
        come back; the whole call, wait included, is bounded by ``timeout``.
        ``on_response`` sees the response frame on the reader thread (:meth:`Session.call`).

        Raises:
            SensorTimeout: no response within ``timeout`` (default: the sensor's timeout).
            LinkBroken: the link broke before the response arrived.
            ProtocolError: the response did not parse.
            RpcError: the device answered with a non-OK status.
            DeviceMismatch: the link leads to another device than the first one (the sensor stopped).
        """
        what = str(request.WhichOneof("body"))
        frame = self._session.call(
            Channel.CONTROL, request.SerializeToString(), timeout, what=what, on_response=on_response
        )
        try:
            response = codec.parse(pb.Response, frame.payload)
        except ProtocolError as exc:
            self._count_undecodable(frame, exc)
            raise
        if response.status != pb.STATUS_OK:
            raise RpcError(codec.status_name(response.status), response.status, response.message)
        return response

    def info(self, timeout: float | None = None) -> DeviceInfo:
        """Ask the device who it is (versions, boot id, serial number, models)."""
        return self._info(timeout)

    def _info(self, timeout: float | None = None, *, refresh: bool = False) -> DeviceInfo:
        """The info call; the answer's result dictionary is taken on the reader thread, in the link's order.

        (On the calling thread it could land after a newer announcement the reader already took.)
        ``refresh``: asked because a result could not be decoded (:meth:`CompactResults.device`).
        """

        def take_dictionary(frame: Frame) -> None:
            try:
                response = codec.parse(pb.Response, frame.payload)
            except ProtocolError:
                return  # the calling thread counts and raises it
            if response.status == pb.STATUS_OK and response.HasField("info"):
                self._compact.device(response.info, refresh=refresh)

        request = pb.Request(info=pb.InfoRequest(host_protocol_version=PROTOCOL_VERSION))
        response = self._call(request, timeout, on_response=take_dictionary)
        info = codec.device_info_from_pb(response.info)
        self._observe_device(info)
        return info

    def reboot(self, timeout: float | None = None) -> DeviceInfo:
        """Restart the firmware and wait until it is back (a new boot id) and the link carries again.

        The device answers first, then restarts; config changes it did not persist are lost
        (:attr:`ConfigValue.persisted`). Reconnect callbacks see the reboot
        (``ReconnectEvent.device_rebooted``) like any other, and results flow again afterwards.

        Args:
            timeout: seconds for the whole reboot, the answer and the way back included
                (default :data:`REBOOT_TIMEOUT_S`).

        Returns:
            The device info of the new boot.

        Raises:
            SensorTimeout: no answer, or the device did not come back within ``timeout``.
            LinkBroken: the link broke and will not come back (``reconnect=False``).
            RpcError: the device refused (``UNSUPPORTED`` from a firmware without the request).
            DeviceMismatch: another device came back on the port.
        """
        limit = REBOOT_TIMEOUT_S if timeout is None else timeout
        deadline = time.monotonic() + limit
        known = self._boots.device_info
        old_boot = known.boot_id if known is not None else ""
        self._call(pb.Request(reboot=pb.RebootRequest()), limit)
        with self._state:
            while True:
                info = self._boots.device_info
                if info is not None and info.boot_id != old_boot and self.connected:
                    return info
                self._session.check_alive()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise SensorTimeout(f"sensor {self.url} did not come back from its reboot within {limit:g} s")
                self._state.wait(min(remaining, _POLL_S * 5))

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

    # ------------------------------------------------------------------ frames from the reader thread

    def _on_result_frame(self, frame: Frame) -> None:
        try:
            result = self._compact.decode(frame.payload, time.monotonic())
        except StaleDictionary as exc:
            self._counts.stale += 1
            log.debug("dropped result frame %d: %s", frame.seq, exc)
            self._fetch_dictionary()
            return
        except ProtocolError as exc:
            self._count_undecodable(frame, exc)
            return
        with self._state:
            if len(self._results) == self._results.maxlen:
                self._counts.results_dropped += 1
            self._results.append(result)
            self._counts.results += 1
            self._state.notify_all()
        self._result_callbacks(result)

    def _on_status_frame(self, frame: Frame) -> None:
        event = self._parse(pb.StatusEvent, frame)
        if event is None:
            return
        kind = event.WhichOneof("body")
        if kind == "preview":
            self._preview.chunk(event.preview)
        elif kind == "dictionary":
            self._compact.announced(event.dictionary)
        elif kind == "health":
            health = codec.health_from_pb(event.health)
            self._health = health
            self._compact.health(health)
            if self._boots.health_shows_reboot(health):
                self._session.recheck_link()  # the same device, restarted, or another one behind the port?
            self._health_callbacks(health)
        elif kind == "hello":
            with contextlib.suppress(DeviceMismatch):  # the session has stopped with it
                self._observe_device(codec.device_info_from_pb(event.hello.device))
                self._compact.device(event.hello.device)

    def _fetch_dictionary(self) -> None:
        """Ask for the dictionary in force, off the reader thread (whose frames would answer the call)."""
        if not self._refreshing.acquire(blocking=False):
            return  # a fetch is under way

        def fetch() -> None:
            try:
                self._info(refresh=True)
            except SensorError as exc:
                log.debug("could not fetch the result dictionary: %s", exc)
            finally:
                self._refreshing.release()

        threading.Thread(target=fetch, name="seedcam-dictionary", daemon=True).start()

    def _on_log_frame(self, frame: Frame) -> None:
        record = self._parse(pb.LogRecord, frame)
        if record is None:
            return
        log.log(record.level or logging.INFO, "[device %s] %s", record.logger, record.message)

    def _on_stray_response(self, frame: Frame) -> None:
        """A control frame no call waits for: a late answer to a call that timed out."""
        if not frame.flags & Flag.RESPONSE:
            return
        if self._parse(pb.Response, frame) is not None:
            log.debug("response to unknown or expired request %d", frame.seq)

    def _parse(self, message_type: type[M], frame: Frame) -> M | None:
        """The frame's message, or None (counted) when its payload does not parse."""
        try:
            return codec.parse(message_type, frame.payload)
        except ProtocolError as exc:
            self._count_undecodable(frame, exc)
            return None

    def _count_undecodable(self, frame: Frame, error: ProtocolError) -> None:
        self._counts.undecodable += 1
        log.debug("dropped %s frame: %s", frame.channel.name, error)

    # ------------------------------------------------------------------ link loss and reboots

    def _on_link_lost(self, _: LinkBroken) -> None:
        self._boots.link_lost()
        with self._state:
            self._state.notify_all()  # a recv waiting on a link that will not come back raises

    def _check_device(self) -> None:
        """The session's link check after a reconnect: ask who is there (:meth:`_observe_device` compares).

        Raises:
            DeviceMismatch: another device answered.
        """
        self.info(timeout=self.timeout)

    def _observe_device(self, info: DeviceInfo) -> None:
        """Note who the device is; another device than the first one stops the session.

        Raises:
            DeviceMismatch: ``info`` is another device's.
        """
        try:
            event = self._boots.observe(info)
        except DeviceMismatch as exc:
            log.error("%s", exc)
            self._session.close(exc)
            with self._state:
                self._state.notify_all()  # a recv waiting for results raises it
            raise
        if event is None:
            return
        if event.device_rebooted:
            self._counts.reboots += 1
            self._session.reset_rx_sequence()
        with self._state:
            self._state.notify_all()  # a reboot() waits for the new boot
        self._last_reconnect = event
        log.info("sensor %s back: %s", self.url, "device rebooted" if event.device_rebooted else "link restored")
        self._reconnect_callbacks(event)

"""The session: one link to one sensor — the transport, the reader thread, calls and subscribers.

This is the seam everything that talks to a sensor builds on: the typed calls
of :class:`seedcam.Sensor`, :mod:`seedcam.updates`, and code that records or
relays frames. A session knows frames and channels, not protobuf messages::

    from seedcam.protocol.framing import Channel
    from seedcam.session import Session

    with Session("socket://board:5555") as session:
        session.subscribe(Channel.RESULT, frames.append)  # frames: a list of the result Frames
        answer = session.call(Channel.CONTROL, request_bytes)  # the response Frame

A sensor's own session is :attr:`seedcam.Sensor.session`.

Threads: one reader thread reads the transport and routes every frame. A
response (flag ``RESPONSE``) that a :meth:`Session.call` waits for, by channel
and sequence number, completes that call; every other frame goes to its
channel's subscribers, in arrival order, on the reader thread (keep them quick).
Calls and sends may come from any thread; writes are serialised.

Link loss: when the transport breaks, waiting calls fail with
:class:`~seedcam.errors.LinkBroken` and the link-lost listeners run. With
``reconnect`` the reader reopens the transport every ``reconnect_interval`` s
and, once it is back, runs the link-restored listeners; calls made meanwhile
wait for the link (within their timeout).

Link checks: what answers on a reopened port need not be the device that was
there before (a pty symlink another board took over, a USB serial path). With a
check (:meth:`Session.set_link_check`; :class:`seedcam.Sensor` installs one that
compares the device's serial number and board), a reopened link counts as up only
once the check passed: until then calls wait and sends fail with ``LinkBroken``,
and a check that fails ends the session with its error (every later call raises it).

Deadlines: a call's timeout bounds all of it: the wait for the link, for the write
lock (another thread's frame may be going out on a slow line), the write and the
wait for the answer each get only what is left of it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from seedcam._callbacks import Callbacks
from seedcam._link_gate import LinkGate
from seedcam._link_key import session_encoder
from seedcam.errors import LinkBroken, ProtocolVersionMismatch, SensorError, SensorTimeout
from seedcam.protocol.framing import (
    DELIMITER,
    PROTOCOL_VERSION,
    Channel,
    Decoder,
    Flag,
    Frame,
    LinkCounters,
    link_counters,
)
from seedcam.transport import Transport, open_transport

__all__ = ["Session"]

log = logging.getLogger(__name__)

_READ_CHUNK = 65536
_POLL_S = 0.1


def _left(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


class _PendingCall:
    __slots__ = ("event", "frame", "error", "on_response")

    def __init__(self, on_response: Callable[[Frame], None] | None = None) -> None:
        self.event = threading.Event()
        self.frame: Frame | None = None
        self.error: SensorError | None = None
        self.on_response = on_response  #: run on the reader thread, before the frames after the response


class Session:
    """A link to one sensor: frames in and out, calls by sequence number, per-channel subscribers.

    Creating a session opens nothing; :meth:`start` (or ``with``) opens the
    transport and starts the reader thread, so subscribers registered before it
    see every frame.

    Args:
        url: transport URL (device path, ``socket://host:port``, ``loop://`` ...).
        timeout: default timeout of :meth:`call` and :meth:`send`, and of the
            first write after opening, seconds.
        reconnect: reopen the transport by itself when it breaks.
        reconnect_interval: seconds between reopen attempts.
        transport_options: passed to :func:`seedcam.transport.open_transport`, but ``link_key`` (see ``_link_key``).
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 5.0,
        reconnect: bool = True,
        reconnect_interval: float = 0.2,
        **transport_options: Any,
    ) -> None:
        self.url = url
        self.timeout = timeout
        self.reconnect = reconnect
        self.reconnect_interval = reconnect_interval
        self._encoder, self._transport_options = session_encoder(url, transport_options)  # signs with a link key
        self._decoder = Decoder()
        self._start_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._state = threading.Condition()
        self._pending: dict[tuple[Channel, int], _PendingCall] = {}
        self._subscribers: dict[Channel, Callbacks[Frame]] = {channel: Callbacks(log) for channel in Channel}
        self._lost_listeners: Callbacks[LinkBroken] = Callbacks(log)
        self._restored_listeners: Callbacks[None] = Callbacks(log)
        self._transport: Transport | None = None
        self._reader: threading.Thread | None = None
        self._closed = False
        self._link_error: LinkBroken | None = None
        self._fatal: SensorError | None = None  # what ended the session, when not a plain close()
        self._gate = LinkGate(self._state, url)  # holds a reopened link until its check passed
        self._reconnects = 0
        self._reset_sequence = False  # set by any thread, acted on by the reader thread

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Open the transport and start the reader thread (once; later calls do nothing).

        Raises:
            LinkBroken: the transport cannot be opened, or the session was closed.
            SensorTimeout: the transport did not take the first byte in time.
        """
        with self._start_lock:
            if self._closed:
                raise LinkBroken("sensor closed")
            if self._reader is not None:
                return
            transport = self._open()
            with self._state:
                if self._closed:
                    transport.close()
                    raise LinkBroken("sensor closed")
                self._transport = transport
                self._reader = threading.Thread(target=self._read_loop, name=f"seedcam-reader {self.url}", daemon=True)
            self._reader.start()

    def close(self, error: SensorError | None = None) -> None:
        """Fail waiting calls, stop the reader thread and close the transport. Idempotent.

        Args:
            error: why the session ends (e.g. :class:`~seedcam.errors.DeviceMismatch`); waiting
                and later calls raise it. Default: ``LinkBroken("sensor closed")``.
        """
        transport = None
        with self._state:
            if not self._closed:
                self._closed = True
                self._fatal = error
                transport = self._transport
                self._fail_pending(error or LinkBroken("sensor closed"))
                self._state.notify_all()
        if transport is not None:
            transport.close()
        # Also when another thread closed the session first (the link check refusing a swapped board):
        # the reader may be reopening the port, and the port is free only once the reader has ended.
        reader = self._reader
        if reader is not None and threading.current_thread() is not reader:
            reader.join(timeout=2.0)

    def __enter__(self) -> Session:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Session {self.url!r} {'connected' if self.connected else 'disconnected'}>"

    @property
    def connected(self) -> bool:
        """True while the transport is open."""
        return self._transport is not None and not self._closed

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    @property
    def reconnects(self) -> int:
        """How many times the transport was reopened after a loss."""
        return self._reconnects

    @property
    def link_counters(self) -> LinkCounters:
        """A snapshot of this side's link counters: what it received plus what it sent."""
        return link_counters(self._decoder, self._encoder)

    def check_alive(self) -> None:
        """Raise when the session can carry nothing any more; return while it can (or will again).

        Raises:
            DeviceMismatch: the session ended because the link reached another device
                (or whatever error :meth:`close` was given).
            LinkBroken: the session was closed, or the link is down and will not
                come back (``reconnect`` is off).
        """
        if self._closed:
            raise self._fatal if self._fatal is not None else LinkBroken("sensor closed")
        if self._link_error is not None and not self.reconnect:
            raise self._link_error

    def wait_link(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the link to be up (and checked); False when it is not.

        Raises:
            DeviceMismatch: the session ended because the link reached another device
                (or whatever error :meth:`close` was given).
        """
        with self._state:
            self._state.wait_for(lambda: self._link_ready() or self._closed, timeout)
            if self._closed and self._fatal is not None:
                raise self._fatal
            return self._link_ready() and not self._closed

    def set_link_check(self, check: Callable[[], None] | None) -> None:
        """Check every reopened link before calls and sends go through it again.

        ``check()`` runs on a thread of its own after each reconnect (and after
        :meth:`recheck_link`); its own calls pass while others wait. When it returns,
        the link is up; ``SensorTimeout`` runs it again (the device may still be
        starting); ``LinkBroken`` leaves it to the next reconnect; any other
        :class:`~seedcam.errors.SensorError` ends the session with that error.
        """
        self._gate.check = check

    def recheck_link(self) -> None:
        """Hold calls and sends until the link check passes again (the device restarted behind an open port)."""
        with self._state:
            transport = self._transport
            if transport is not None and not self._closed:
                self._begin_check(transport)

    def wait_closed(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` s, ending early when the session closes; True when it is closed."""
        with self._state:
            return self._state.wait_for(lambda: self._closed, timeout)

    def reset_rx_sequence(self) -> None:
        """Forget the sequence numbers received so far: the device restarted and numbers from 0 again.

        Safe from any thread; the reader thread applies it before it handles the next bytes.
        """
        self._reset_sequence = True

    # ------------------------------------------------------------------ subscribers

    def subscribe(self, channel: Channel, callback: Callable[[Frame], None]) -> Callable[[], None]:
        """Call ``callback(frame)`` on the reader thread for every frame of ``channel`` that no call waits for.

        Returns:
            A function that unsubscribes (calling it twice is harmless).
        """
        return self._subscribers[channel].add(callback)

    def on_link_lost(self, callback: Callable[[LinkBroken], None]) -> Callable[[], None]:
        """Call ``callback(error)`` on the reader thread when the transport breaks; returns the unregister function.

        Waiting calls have already failed when it runs; it does not run for :meth:`close`.
        """
        return self._lost_listeners.add(callback)

    def on_link_restored(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` on the reader thread once a broken transport is open again.

        Returns:
            The unregister function.
        """
        return self._restored_listeners.add(lambda _: callback())

    # ------------------------------------------------------------------ sending

    def send(
        self,
        channel: Channel,
        payload: bytes,
        timeout: float | None = None,
        *,
        before_send: Callable[[int], None] | None = None,
    ) -> int:
        """Send one frame on ``channel`` now; returns its sequence number.

        Args:
            channel: the channel.
            payload: the frame's payload (one protobuf message, serialised).
            timeout: seconds the transport may take to accept the bytes (default: :attr:`timeout`).
            before_send: called with the sequence number before the bytes go out,
                so a caller can expect the answer before it can arrive.

        Raises:
            LinkBroken: the link is down, or a reopened link is still being checked.
            SensorTimeout: the frame did not go out in time (the wait for another
                thread's frame counts).
            DeviceMismatch: the session ended because the link reached another device.
        """
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        self._check_ready()
        self._acquire_write_lock(deadline, f"{self.url} did not take a {channel.name} frame within {timeout} s")
        try:
            self._check_ready()
            seq = self._encoder.next_seq(channel)
            if before_send is not None:
                before_send(seq)
            self._write(self._encoder.encode(channel, payload, seq=seq), _left(deadline))
        finally:
            self._write_lock.release()
        return seq

    def call(
        self,
        channel: Channel,
        payload: bytes,
        timeout: float | None = None,
        *,
        what: str = "request",
        on_response: Callable[[Frame], None] | None = None,
    ) -> Frame:
        """Send a request frame and wait for the response frame with its sequence number.

        While the link is down and reconnecting, the call first waits for it to
        come back; the whole call, wait included, is bounded by ``timeout``.

        Args:
            channel: the channel of the request (its response comes back on it).
            payload: the request's payload.
            timeout: seconds for the whole call (default: :attr:`timeout`).
            what: names the request in the timeout's message.
            on_response: called with the response frame on the reader thread, in the link's
                order: before the frames that came after the response (keep it quick; what
                it raises is logged). Not called for a response that comes after the timeout.

        Returns:
            The response frame; decoding its payload is the caller's business.

        Raises:
            SensorTimeout: no response within ``timeout``.
            LinkBroken: the link broke before the response arrived, or the session closed.
            DeviceMismatch: the session ended because the link reached another device.
        """
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        pending = _PendingCall(on_response)
        with self._state:  # wait for the link before queueing for the write lock: others may be waiting too
            self._state.wait_for(
                lambda: self._link_ready() or self._closed or (self._transport is None and not self.reconnect),
                timeout,
            )
            self.check_alive()
            if self._transport is not None and not self._link_ready():
                raise SensorTimeout(f"no answer to {what} from {self.url} within {timeout} s: link not checked yet")
        self._acquire_write_lock(deadline, f"no answer to {what} from {self.url} within {timeout} s")
        try:
            with self._state:
                self.check_alive()
                if not self._link_ready():
                    raise LinkBroken(f"link to {self.url} is down")
                seq = self._encoder.next_seq(channel)
                key = (channel, seq)
                self._pending[key] = pending
            try:
                self._write(self._encoder.encode(channel, payload, seq=seq), _left(deadline))
            except SensorError:
                with self._state:
                    self._pending.pop(key, None)
                raise
        finally:
            self._write_lock.release()
        if not pending.event.wait(_left(deadline)):
            with self._state:
                self._pending.pop(key, None)
            raise SensorTimeout(f"no answer to {what} from {self.url} within {timeout} s")
        if pending.error is not None:
            raise pending.error
        assert pending.frame is not None
        return pending.frame

    def _acquire_write_lock(self, deadline: float, timed_out: str) -> None:
        """Take the write lock, waiting no longer than the deadline (another frame may be going out).

        Raises:
            SensorTimeout: ``timed_out`` (the message), when the lock stayed taken until the deadline.
        """
        if not self._write_lock.acquire(timeout=_left(deadline)):
            raise SensorTimeout(f"{timed_out}: the link was busy")

    def _write(self, data: bytes, timeout: float) -> None:
        transport = self._transport
        if transport is None:
            raise LinkBroken(f"link to {self.url} is down")
        transport.write(data, timeout)

    def _link_ready(self) -> bool:
        """The link is up and checked, or this is the thread checking it."""
        return self._transport is not None and self._gate.passes()

    def _check_ready(self) -> None:
        """Raise unless a frame may go out now (sends do not wait for the link)."""
        self.check_alive()
        if self._transport is None:
            raise LinkBroken(f"link to {self.url} is down")
        if not self._link_ready():
            raise LinkBroken(f"link to {self.url} is being checked after a reconnect")

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
                if self._decoder.peer_version is not None:
                    self._refuse_peer_version(self._decoder.peer_version)
                    return

    def _refuse_peer_version(self, version: int) -> None:
        """The device speaks another protocol: nothing it sends can be read, so the session ends."""
        error = ProtocolVersionMismatch(version, PROTOCOL_VERSION)
        log.error("%s: %s", self.url, error)
        self.close(error)

    def _dispatch(self, frame: Frame) -> None:
        if frame.flags & Flag.RESPONSE:
            with self._state:
                pending = self._pending.pop((frame.channel, frame.seq), None)
            if pending is not None:
                if pending.on_response is not None:
                    try:
                        pending.on_response(frame)
                    except Exception:
                        log.exception("response hook of %s request %d failed", frame.channel.name, frame.seq)
                pending.frame = frame
                pending.event.set()
                return
        self._subscribers[frame.channel](frame)

    def _on_link_lost(self, transport: Transport, error: LinkBroken) -> None:
        transport.close()
        with self._state:
            if self._closed:
                return
            self._transport = None
            self._link_error = error
            self._fail_pending(error)
            self._state.notify_all()
        log.warning("link to %s lost: %s", self.url, error)
        self._lost_listeners(error)

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
        fresh = Decoder(self._decoder.max_frame_size, replay_window=self._decoder.replay_window)
        fresh.counters = self._decoder.counters
        with self._state:
            if self._closed:
                transport.close()
                return False
            self._decoder = fresh
            self._transport = transport
            self._link_error = None
            self._reconnects += 1
            self._begin_check(transport)
            self._state.notify_all()  # calls waiting for the link
        self._restored_listeners(None)
        return True

    def _begin_check(self, transport: Transport) -> None:
        """Hold the link until its check passes (called with ``_state`` held)."""
        self._gate.hold(
            still_current=lambda: not self._closed and self._transport is transport,
            fail=self.close,
            pause=lambda: self.wait_closed(self.reconnect_interval),
        )

    def _fail_pending(self, error: SensorError) -> None:
        for pending in self._pending.values():
            pending.error = error
            pending.event.set()
        self._pending.clear()

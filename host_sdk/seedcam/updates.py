"""Model and firmware updates over the link: push a bundle, list, activate, roll back, delete slots, flash.

::

    import seedcam
    from seedcam import updates

    with seedcam.open() as sensor:
        done = updates.push_bundle(sensor, "lane-1.1.0.scb")
        assert done.activated

A push sends the bundle's header (the device checks signature, target,
security counter and free space before it takes any data), then the payload in
chunks addressed by offset; the device answers each with the next offset it
expects, so a lost, damaged or repeated chunk only costs a resend. When the link
breaks or the sensor restarts mid-push, the push waits for the link and begins
again: the device's journal says how much of the payload it already holds
intact, and only the rest is sent. Results keep streaming during a push.

Speed: the chunk size and the bytes in flight adapt to the link: both start
small and follow the measured acknowledged rate and the smallest round trip,
so a 115200-baud UART is kept busy with a few kilobytes in flight while a USB
or pty link moves tens of kilobytes per chunk.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from seedcam._proto import seedcam_pb2 as pb
from seedcam.bundle import BundleHeader, read_bundle
from seedcam.errors import LinkBroken, ProtocolError, SensorTimeout, UpdateRefused
from seedcam.protocol import codec
from seedcam.protocol.framing import Channel, Frame
from seedcam.sensor import Sensor

__all__ = [
    "FlashResult",
    "InstallResult",
    "PushProgress",
    "PushResult",
    "SlotGroup",
    "SlotInfo",
    "activate_slot",
    "delete_slot",
    "flash",
    "list_slots",
    "push_bundle",
    "rollback",
]

_MIN_CHUNK = 1024
_START_CHUNK = 4096
_CHUNK_TIME_S = 0.25  # aim for chunks of about this much line time (few frames' overhead, quick retries)
_RATE_WINDOW_S = 0.5


@dataclass(frozen=True)
class PushProgress:
    """Progress of a push, reported after every acknowledgement.

    Attributes:
        acked: payload bytes the device holds (verified).
        total: payload size.
        resumed_from: where this push started (> 0 after a resume).
        rate_bps: recent acknowledged rate, bytes per second.
    """

    acked: int
    total: int
    resumed_from: int
    rate_bps: float


@dataclass(frozen=True)
class InstallResult:
    """What the device did with an installed bundle or a slot request."""

    name: str  #: task name or "firmware"
    slot: str
    bundle_id: str
    activated: bool
    selftest_max_error: float
    previous_slot: str
    restart_pending: bool


@dataclass(frozen=True)
class PushResult:
    """The outcome of :func:`push_bundle`.

    Attributes:
        install: what the device installed.
        resumed_from: payload offset the first begin answered (0: from scratch).
        bytes_sent: payload bytes sent, resends included.
        data_seconds: time from the first chunk to the last acknowledgement.
        seconds: the whole push, self-test and activation included.
        attempts: begins sent (1 + resumes after a broken link).
        chunk_size: the chunk size at the end (after adapting).
        begin_offsets: what each begin answered: where each attempt started.
    """

    install: InstallResult
    resumed_from: int
    bytes_sent: int
    payload_size: int
    data_seconds: float
    seconds: float
    attempts: int
    chunk_size: int
    begin_offsets: tuple[int, ...] = ()

    @property
    def activated(self) -> bool:
        return self.install.activated

    @property
    def data_rate_bps(self) -> float:
        """Payload bytes per second of the data phase (bytes the device needed ÷ time)."""
        needed = self.payload_size - self.resumed_from
        return needed / self.data_seconds if self.data_seconds > 0 else 0.0


@dataclass(frozen=True)
class SlotInfo:
    """One slot of a group on the device."""

    slot: str
    bundle_id: str
    version: str
    sha256: str
    security_counter: int
    active: bool
    previous: bool
    state: str  #: installed | trial | empty


@dataclass(frozen=True)
class SlotGroup:
    """The A/B slots of one task (or of the firmware)."""

    name: str
    slots: tuple[SlotInfo, ...]
    security_counter: int  #: lowest counter the device still accepts
    running: str  #: firmware: the version running now

    @property
    def active(self) -> SlotInfo | None:
        return next((s for s in self.slots if s.active), None)


@dataclass(frozen=True)
class FlashResult:
    """The outcome of :func:`flash`: the new firmware runs and confirmed its health."""

    push: PushResult
    version: str
    slot: str


# ---------------------------------------------------------------- the update channel


class _Channel:
    """Requests and chunk acknowledgements on the TRANSFER channel of one sensor."""

    def __init__(self, sensor: Sensor) -> None:
        self.sensor = sensor
        self._lock = threading.Lock()
        self._waiting: dict[int, tuple[threading.Event, list[pb.UpdateResponse]]] = {}
        self.acks: queue.Queue[tuple[int, pb.UpdateResponse]] = queue.Queue()
        self._chunk_seqs: set[int] = set()
        self._unregister = sensor._register(sensor._transfer_callbacks, self._on_frame)

    def close(self) -> None:
        self._unregister()

    def _on_frame(self, frame: Frame) -> None:
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
        event, box = threading.Event(), []

        def expect(seq: int) -> None:
            with self._lock:
                self._waiting[seq] = (event, box)

        seq = self.sensor._send_frame(Channel.TRANSFER, request.SerializeToString(), timeout, expect)
        if not event.wait(timeout):
            with self._lock:
                self._waiting.pop(seq, None)
            what = request.WhichOneof("body")
            raise SensorTimeout(f"no answer to update request {what} within {timeout} s")
        response = box[0]
        _raise_for(response)
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

        return self.sensor._send_frame(Channel.TRANSFER, request.SerializeToString(), timeout, expect)

    def drain(self) -> None:
        """Forget acknowledgements of an earlier attempt."""
        with self._lock:
            self._chunk_seqs.clear()
        while not self.acks.empty():
            self.acks.get_nowait()


def _raise_for(response: pb.UpdateResponse) -> None:
    if response.status != pb.STATUS_OK:
        raise UpdateRefused(response.reason or "refused", codec.status_name(response.status), response.message)


def _install(report: pb.InstallReport) -> InstallResult:
    return InstallResult(
        name=report.name,
        slot=report.slot,
        bundle_id=report.bundle_id,
        activated=report.activated,
        selftest_max_error=report.selftest_max_error,
        previous_slot=report.previous_slot,
        restart_pending=report.restart_pending,
    )


# ---------------------------------------------------------------- pushing


class _Pacer:
    """Chunk size and bytes in flight from the acknowledged rate and the smallest round trip."""

    def __init__(self, max_chunk: int, chunk: int | None, window: int | None) -> None:
        self.max_chunk = max_chunk
        self.fixed_chunk = chunk
        self.fixed_window = window
        self.chunk = min(chunk or _START_CHUNK, max_chunk)
        self.window = window or 4 * self.chunk
        self.min_rtt = float("inf")
        self._acks: list[tuple[float, int]] = []  # (time, bytes newly acknowledged)

    def on_ack(self, now: float, newly_acked: int, rtt: float | None) -> float:
        """Record an acknowledgement; returns the recent rate (bytes/s)."""
        if rtt is not None:
            self.min_rtt = min(self.min_rtt, rtt)
        self._acks.append((now, newly_acked))
        while len(self._acks) > 2 and now - self._acks[0][0] > _RATE_WINDOW_S:
            self._acks.pop(0)
        span = now - self._acks[0][0]
        if len(self._acks) < 3 or span <= 0:
            return 0.0
        rate = sum(n for _, n in self._acks[1:]) / span
        if self.fixed_chunk is None:
            target = int(rate * _CHUNK_TIME_S) // 512 * 512
            self.chunk = max(_MIN_CHUNK, min(self.max_chunk, target, self.chunk * 2))
        if self.fixed_window is None:
            bdp = rate * (self.min_rtt if self.min_rtt != float("inf") else _CHUNK_TIME_S)
            self.window = int(max(3 * self.chunk, 2 * bdp))
        return rate

    def on_loss(self) -> None:
        if self.fixed_window is None:
            self.window = max(2 * self.chunk, self.window // 2)


def push_bundle(
    sensor: Sensor,
    path: str | Path,
    *,
    activate: bool = True,
    progress: Callable[[PushProgress], None] | None = None,
    timeout: float = 10.0,
    install_timeout: float = 120.0,
    resume_timeout: float = 60.0,
    chunk_size: int | None = None,
    window: int | None = None,
    max_bytes: int | None = None,
    check_file: bool = True,
) -> PushResult:
    """Send a bundle to the sensor, verify it there, self-test it and (by default) activate it.

    An interrupted push (link broken, sensor restarted) resumes by itself within
    ``resume_timeout``; calling it again later resumes from the device's journal too.

    Args:
        sensor: an open sensor.
        path: the bundle file.
        activate: make the model active once its self-test passes.
        progress: called with a :class:`PushProgress` after each acknowledgement.
        timeout: seconds without any acknowledgement before the chunks are resent,
            and the limit for each request.
        install_timeout: seconds the device may take to check, self-test and activate.
        resume_timeout: how long to wait for a broken link to come back (0: do not resume).
        chunk_size: fixed chunk size in bytes (default: adaptive).
        window: fixed bytes in flight (default: adaptive).
        max_bytes: stop after this many payload bytes are acknowledged and return
            without ending the transfer (benchmarks; the next push resumes).
        check_file: check the file's payload hashes before sending (off only to
            test the device's own checks).

    Raises:
        BundleError: the file is not a valid bundle (truncated, tampered...).
        UpdateRefused: the device refused the bundle; ``reason`` says why.
        SensorTimeout, LinkBroken: the link did not come back in time.
    """
    bundle = read_bundle(path, check=check_file)  # refuses a truncated or tampered file before anything is sent
    header = bundle.header
    channel = _Channel(sensor)
    start = time.monotonic()
    deadline = start + resume_timeout
    attempts, resumed_from, stats = 0, -1, {"sent": 0, "data_s": 0.0, "chunk": 0, "begins": []}
    ended = False  # an end was sent: the device may have installed the bundle and lost its answer
    try:
        while True:
            attempts += 1
            try:
                signature = bundle.signature.to_bytes() if bundle.signature else b""
                begin = pb.UpdateRequest(begin=pb.TransferBegin(header=header.raw, signature=signature))
                state = channel.call_repeating(begin, timeout, 3 * timeout).state
                stats["begins"].append(int(state.next_offset))
                if resumed_from < 0:
                    resumed_from = int(state.next_offset)
                done = _send_payload(channel, header, bundle.payload, state, progress, resumed_from, timeout, stats,
                                     chunk_size, window, max_bytes)
                if not done:
                    return _result(InstallResult(header.task, "", header.id, False, 0.0, "", False),
                                   resumed_from, stats, header, start, attempts)
                end = pb.UpdateRequest(
                    end=pb.TransferEnd(transfer_tag=state.transfer_tag, sha256=header.sha256, activate=activate)
                )
                ended = True
                report = channel.call_repeating(end, timeout, install_timeout).installed
                return _result(_install(report), resumed_from, stats, header, start, attempts)
            except (LinkBroken, SensorTimeout):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not sensor._wait_link(remaining):
                    raise
                deadline = time.monotonic() + resume_timeout  # progress was made: a fresh allowance
            except UpdateRefused as exc:
                if exc.reason != "no_transfer" or attempts > 3:
                    raise
                installed = _installed_after_lost_answer(sensor, header, activate, timeout) if ended else None
                if installed is not None:  # e.g. a firmware that restarted into its trial right after answering
                    return _result(installed, resumed_from, stats, header, start, attempts)
    finally:
        channel.close()


def _installed_after_lost_answer(
    sensor: Sensor, header: BundleHeader, activate: bool, timeout: float
) -> InstallResult | None:
    """The install of ``header`` found in the device's slots, when the answer to its end was lost.

    A device that forgot the transfer after an end (it restarted: a firmware update
    restarts into its trial right after answering) either installed the bundle —
    a firmware slot on trial or active, a model slot active (or installed when
    ``activate`` is False) with the header's sha256 — or must be sent it again.
    """
    name = "firmware" if header.kind == "firmware" else header.task
    try:
        group = next((g for g in list_slots(sensor, timeout) if g.name == name), None)
    except (LinkBroken, SensorTimeout):
        return None  # the caller begins again, and waits for the link there
    for info in group.slots if group is not None else ():
        if info.sha256 != header.sha256 or info.bundle_id != header.id:
            continue
        if header.kind == "firmware" and (info.state == "trial" or info.active):
            return InstallResult(name, info.slot, info.bundle_id, info.active, 0.0, "", info.state == "trial")
        if header.kind != "firmware" and (info.active or not activate):
            return InstallResult(name, info.slot, info.bundle_id, info.active, 0.0, "", False)
    return None


def _result(install: InstallResult, resumed_from: int, stats: dict, header: BundleHeader, start: float,
            attempts: int) -> PushResult:
    return PushResult(
        install=install,
        resumed_from=max(resumed_from, 0),
        bytes_sent=int(stats["sent"]),
        payload_size=header.size,
        data_seconds=float(stats["data_s"]),
        seconds=time.monotonic() - start,
        attempts=attempts,
        chunk_size=int(stats["chunk"]),
        begin_offsets=tuple(stats["begins"]),
    )


def _send_payload(
    channel: _Channel,
    header: BundleHeader,
    payload: bytes,
    state: pb.TransferState,
    progress: Callable[[PushProgress], None] | None,
    resumed_from: int,
    timeout: float,
    stats: dict,
    chunk_size: int | None,
    window: int | None,
    max_bytes: int | None,
) -> bool:
    """Send the payload from ``state.next_offset`` until the device holds all of it (go-back-N).

    Returns:
        False when ``max_bytes`` stopped it early.

    Raises:
        SensorTimeout: nothing acknowledged for ``timeout`` s twice in a row.
        UpdateRefused: the device refused a chunk (the transfer is gone).
    """
    size, tag = header.size, state.transfer_tag
    acked = send_at = int(state.next_offset)
    pacer = _Pacer(int(state.max_chunk) or _START_CHUNK, chunk_size, window)
    inflight: dict[int, tuple[int, int, float, int]] = {}  # seq -> (offset, length, sent at, epoch)
    epoch = 0
    channel.drain()
    first = time.monotonic()
    last_progress = first
    stalls = 0
    while acked < size:
        if max_bytes is not None and acked - resumed_from >= max_bytes:
            stats["data_s"] += time.monotonic() - first
            return False
        while send_at < size and send_at - acked < pacer.window:
            n = min(pacer.chunk, size - send_at)
            seq = channel.send_chunk(tag, send_at, payload[send_at : send_at + n], timeout)
            inflight[seq] = (send_at, n, time.monotonic(), epoch)
            send_at += n
            stats["sent"] += n
        try:
            wait = max(0.05, min(timeout, last_progress + timeout - time.monotonic()))
            seq, response = channel.acks.get(timeout=wait)
        except queue.Empty:
            stalls += 1
            if stalls >= 2:
                raise SensorTimeout(f"the sensor acknowledged nothing for {2 * timeout} s") from None
            send_at, epoch = acked, epoch + 1  # resend everything not acknowledged
            inflight.clear()
            pacer.on_loss()
            last_progress = time.monotonic()
            continue
        _raise_for(response)
        now = time.monotonic()
        sent = inflight.pop(seq, None)
        next_offset = int(response.state.next_offset)
        if next_offset > acked:
            rtt = now - sent[2] if sent is not None and sent[0] + sent[1] <= next_offset else None
            rate = pacer.on_ack(now, next_offset - acked, rtt)
            acked, last_progress, stalls = next_offset, now, 0
            if progress is not None:
                progress(PushProgress(acked, size, resumed_from, rate))
        rejected = sent is not None and sent[0] + sent[1] > next_offset
        if rejected and sent[3] == epoch and send_at > next_offset:
            # a chunk after a gap (a lost or damaged chunk), or a block that failed its hash: go back
            send_at, epoch = next_offset, epoch + 1
            pacer.on_loss()
    stats["data_s"] += time.monotonic() - first
    stats["chunk"] = pacer.chunk
    return True


# ---------------------------------------------------------------- slots


def _slot_groups(message: pb.SlotList) -> tuple[SlotGroup, ...]:
    return tuple(
        SlotGroup(
            name=g.name,
            slots=tuple(
                SlotInfo(s.slot, s.bundle_id, s.version, s.sha256, s.security_counter, s.active, s.previous, s.state)
                for s in g.slots
            ),
            security_counter=g.security_counter,
            running=g.running,
        )
        for g in message.groups
    )


def _simple(sensor: Sensor, request: pb.UpdateRequest, timeout: float) -> pb.UpdateResponse:
    channel = _Channel(sensor)
    try:
        return channel.call(request, timeout)
    finally:
        channel.close()


def list_slots(sensor: Sensor, timeout: float = 10.0) -> tuple[SlotGroup, ...]:
    """The A/B slots on the device, per task (and for the firmware).

    Raises:
        UpdateRefused: updates are disabled on the device (``reason == "disabled"``).
        SensorTimeout, LinkBroken: no answer.
    """
    return _slot_groups(_simple(sensor, pb.UpdateRequest(list_slots=pb.ListSlotsRequest()), timeout).slots)


def activate_slot(sensor: Sensor, name: str, slot: str, timeout: float = 120.0) -> InstallResult:
    """Self-test the bundle in ``name``'s ``slot`` ("a"/"b") and make it active.

    Raises:
        UpdateRefused: empty slot, failed self-test, unknown group.
    """
    request = pb.UpdateRequest(activate=pb.SlotRequest(name=name, slot=slot))
    return _install(_simple(sensor, request, timeout).installed)


def rollback(sensor: Sensor, name: str, timeout: float = 120.0) -> InstallResult:
    """Make ``name``'s previous slot active again (the current one becomes the rollback target).

    Raises:
        UpdateRefused: ``no_previous`` when there is nothing to roll back to.
    """
    request = pb.UpdateRequest(rollback=pb.SlotRequest(name=name))
    return _install(_simple(sensor, request, timeout).installed)


def delete_slot(sensor: Sensor, name: str, slot: str, timeout: float = 30.0) -> tuple[SlotGroup, ...]:
    """Empty an inactive slot; returns the slots afterwards.

    Raises:
        UpdateRefused: ``active`` when the slot is the active one.
    """
    request = pb.UpdateRequest(delete=pb.SlotRequest(name=name, slot=slot))
    return _slot_groups(_simple(sensor, request, timeout).slots)


# ---------------------------------------------------------------- firmware


def flash(
    sensor: Sensor,
    path: str | Path,
    *,
    progress: Callable[[PushProgress], None] | None = None,
    confirm_timeout: float = 90.0,
    timeout: float = 10.0,
    install_timeout: float = 120.0,
    resume_timeout: float = 60.0,
    chunk_size: int | None = None,
    window: int | None = None,
) -> FlashResult:
    """Install a firmware bundle: the sensor restarts into it on trial and must confirm its health.

    The sensor must run under ``seedcam-firmware supervise`` (the part that boots
    the trial slot and reverts a firmware that does not confirm); otherwise it
    refuses the bundle at once (``reason == "unsupervised"``).

    Args:
        sensor: an open sensor (it reconnects by itself across the restart).
        path: a firmware bundle (``seedcam-tools bundle firmware``).
        progress: as for :func:`push_bundle`.
        confirm_timeout: seconds to wait for the new firmware to confirm, or to be reverted.
        timeout, install_timeout, resume_timeout, chunk_size, window: as for :func:`push_bundle`.

    Raises:
        UpdateRefused: refused, or ``reason == "reverted"`` when the new firmware
            did not confirm its health and the previous one came back.
        SensorTimeout: neither happened within ``confirm_timeout``.
    """
    bundle_header = read_bundle(path, check=False).header
    if bundle_header.kind != "firmware":
        raise ValueError(f"{path} is a {bundle_header.kind} bundle, not a firmware bundle")
    result = push_bundle(
        sensor, path, progress=progress, timeout=timeout, install_timeout=install_timeout,
        resume_timeout=resume_timeout, chunk_size=chunk_size, window=window,
    )
    slot, version = result.install.slot, bundle_header.version
    deadline = time.monotonic() + confirm_timeout
    while time.monotonic() < deadline:
        try:
            groups = list_slots(sensor, timeout=5.0)
        except (LinkBroken, SensorTimeout):  # the sensor is restarting
            sensor._wait_link(max(0.0, deadline - time.monotonic()))
            continue
        group = next((g for g in groups if g.name == "firmware"), None)
        info = next((s for s in group.slots if s.slot == slot), None) if group else None
        if group is not None and info is not None:
            if group.running == version and info.active and info.state == "installed":
                return FlashResult(result, version, slot)
            if group.running != version and info.state != "trial":
                raise UpdateRefused(
                    "reverted", "OK", f"firmware {version} did not confirm its health; {group.running} runs again"
                )
        with sensor._state:  # a short pause between polls; ends early when the sensor closes
            sensor._state.wait_for(lambda: sensor._closed, 0.2)
    raise SensorTimeout(f"firmware {version} neither confirmed nor was reverted within {confirm_timeout} s")

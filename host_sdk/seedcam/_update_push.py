"""Pushing a bundle: begin, chunks paced to the link (go-back-N), end; resumed after a broken link.

A device that already holds the bundle (the same payload sha256 in one of its slots) answers the
begin with ``already_installed`` and an install report instead of a transfer state: nothing is
sent and no slot changes (with ``activate``, a slot that is not active is then activated in
place). This is also how a push whose end's answer was lost finishes when it begins again.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from seedcam._proto import seedcam_pb2 as pb
from seedcam._update_channel import UpdateChannel, raise_for
from seedcam._update_slots import activate_on, installed_after_lost_answer
from seedcam.bundle import Bundle, BundleHeader, read_bundle
from seedcam.errors import LinkBroken, SensorTimeout, UpdateRefused
from seedcam.protocol import codec
from seedcam.sensor import Sensor
from seedcam.update_types import InstallResult

__all__ = ["PushProgress", "PushResult", "push_bundle"]

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
        already_installed: the device already held the bundle: nothing was sent and no
            slot changed (but for activating it, when ``activate`` asked for that).
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
    already_installed: bool = False

    @property
    def activated(self) -> bool:
        return self.install.activated

    @property
    def data_rate_bps(self) -> float:
        """Payload bytes per second of the data phase (bytes the device needed ÷ time)."""
        needed = self.payload_size - self.resumed_from
        return needed / self.data_seconds if self.data_seconds > 0 else 0.0


@dataclass
class _Tally:
    """What a push did so far, over all its attempts."""

    sent: int = 0  #: payload bytes sent, resends included
    data_s: float = 0.0
    chunk: int = 0  #: chunk size at the end of the last data phase
    begins: list[int] = field(default_factory=list)  #: what each begin answered


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
    path: str | Path | Bundle,
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
    A bundle the device already holds is not sent again (:attr:`PushResult.already_installed`);
    with ``activate`` its slot is activated when it is not the active one already.

    Args:
        sensor: an open sensor.
        path: the bundle file, or a :class:`~seedcam.bundle.Bundle` read and checked already
            (sent as it is: neither read nor checked again).
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
            test the device's own checks); a ``Bundle`` given is not checked again.

    Raises:
        BundleError: the file is not a valid bundle (truncated, tampered...).
        UpdateRefused: the device refused the bundle; ``reason`` says why.
        SensorTimeout, LinkBroken: the link did not come back in time.
    """
    if isinstance(path, Bundle):
        bundle = path
    else:
        bundle = read_bundle(path, check=check_file)  # refuses a truncated or tampered file before anything is sent
    header = bundle.header
    start = time.monotonic()
    deadline = start + resume_timeout
    attempts, resumed_from, tally = 0, -1, _Tally()
    ended = False  # an end was sent: the device may have installed the bundle and lost its answer
    with UpdateChannel(sensor) as channel:
        while True:
            attempts += 1
            try:
                signature = bundle.signature.to_bytes() if bundle.signature else b""
                begin = pb.UpdateRequest(begin=pb.TransferBegin(header=header.raw, signature=signature))
                answer = channel.call_repeating(begin, timeout, 3 * timeout)
                if answer.HasField("installed"):  # the device holds it already: nothing to send
                    install = codec.install_result_from_pb(answer.installed)
                    if activate and not install.activated and not install.restart_pending:
                        install = activate_on(channel, install.name, install.slot, install_timeout)
                    resumed_from = header.size
                    return _result(install, resumed_from, tally, header, start, attempts, already_installed=True)
                state = answer.state
                tally.begins.append(int(state.next_offset))
                if resumed_from < 0:
                    resumed_from = int(state.next_offset)
                done = _send_payload(
                    channel,
                    header,
                    bundle.payload,
                    state,
                    progress,
                    resumed_from,
                    timeout,
                    tally,
                    chunk_size,
                    window,
                    max_bytes,
                )
                if not done:
                    stopped = InstallResult(header.task, "", header.id, False, 0.0, "", False)
                    return _result(stopped, resumed_from, tally, header, start, attempts)
                end = pb.UpdateRequest(
                    end=pb.TransferEnd(transfer_tag=state.transfer_tag, sha256=header.sha256, activate=activate)
                )
                ended = True
                report = channel.call_repeating(end, timeout, install_timeout).installed
                return _result(codec.install_result_from_pb(report), resumed_from, tally, header, start, attempts)
            except (LinkBroken, SensorTimeout):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not channel.session.wait_link(remaining):
                    raise
                deadline = time.monotonic() + resume_timeout  # progress was made: a fresh allowance
            except UpdateRefused as exc:
                if exc.reason != "no_transfer" or attempts > 3:
                    raise
                installed = installed_after_lost_answer(sensor, header, activate, timeout) if ended else None
                if installed is not None:  # e.g. a firmware that restarted into its trial right after answering
                    return _result(installed, resumed_from, tally, header, start, attempts)


def _result(
    install: InstallResult,
    resumed_from: int,
    tally: _Tally,
    header: BundleHeader,
    start: float,
    attempts: int,
    *,
    already_installed: bool = False,
) -> PushResult:
    return PushResult(
        install=install,
        resumed_from=max(resumed_from, 0),
        bytes_sent=tally.sent,
        payload_size=header.size,
        data_seconds=tally.data_s,
        seconds=time.monotonic() - start,
        attempts=attempts,
        chunk_size=tally.chunk,
        begin_offsets=tuple(tally.begins),
        already_installed=already_installed,
    )


def _send_payload(
    channel: UpdateChannel,
    header: BundleHeader,
    payload: bytes,
    state: pb.TransferState,
    progress: Callable[[PushProgress], None] | None,
    resumed_from: int,
    timeout: float,
    tally: _Tally,
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
            tally.data_s += time.monotonic() - first
            return False
        while send_at < size and send_at - acked < pacer.window:
            n = min(pacer.chunk, size - send_at)
            seq = channel.send_chunk(tag, send_at, payload[send_at : send_at + n], timeout)
            inflight[seq] = (send_at, n, time.monotonic(), epoch)
            send_at += n
            tally.sent += n
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
        raise_for(response)
        now = time.monotonic()
        sent = inflight.pop(seq, None)
        next_offset = int(response.state.next_offset)
        if next_offset > acked:
            rtt = now - sent[2] if sent is not None and sent[0] + sent[1] <= next_offset else None
            rate = pacer.on_ack(now, next_offset - acked, rtt)
            acked, last_progress, stalls = next_offset, now, 0
            if progress is not None:
                progress(PushProgress(acked, size, resumed_from, rate))
        rejected = sent is not None and sent[0] + sent[1] > next_offset and sent[3] == epoch
        if rejected and send_at > next_offset:
            # a chunk after a gap (a lost or damaged chunk), or a block that failed its hash: go back
            send_at, epoch = next_offset, epoch + 1
            pacer.on_loss()
    tally.data_s += time.monotonic() - first
    tally.chunk = pacer.chunk
    return True

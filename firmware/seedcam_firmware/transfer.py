"""The device end of updates: bundle transfers on the TRANSFER channel, slots, activation, rollback.

One push, as the device sees it::

    begin(header, signature)  checks BEFORE any data: the header's schema and bounds
                              (a u32 security counter, plain file names), signature
                              (when keys are provisioned), target board, task,
                              security counter, firmware version; a bundle a slot
                              already holds is answered "already_installed" (no
                              transfer, no slot change); free space; opens or
                              resumes the journal
    chunk(offset, data) ...   stored at its offset; answered with the next offset
                              expected (a duplicate or out-of-order chunk changes
                              nothing, so retries are idempotent); every block is
                              checked against its hash as it completes
    end(sha256)               sha256 of what was stored → unpack and self-test in
                              staging → only if it passed: move into the inactive
                              slot → activate (atomic pointer flip; the old slot
                              stays as the rollback target) → swap the running
                              task's model (see :mod:`seedcam_firmware.install`)

Chunks are handled on the link's reader thread: each is a bounded amount of
work (one write of at most a frame, the hash of what it adds, and an fsync of
the part file every 256 KiB). A begin (which may rehash a whole part file to
find the resume point) and the end of a push (sha256, unpack, self-test,
activation) run on a worker thread, so the link keeps answering meanwhile
(other update requests are answered ``busy``), and results keep streaming
throughout.

``SEEDCAM_FW_CRASH_AT=<step>`` makes the process kill itself with SIGKILL at a
named step (see :mod:`seedcam_firmware.crash_points` for the list): the tests use
it to cut power at each step deterministically.
"""

from __future__ import annotations

import logging
import os
import shutil
import struct
import threading
from collections.abc import Callable, Hashable
from dataclasses import replace
from pathlib import Path

import seedcam_firmware
from seedcam._proto import seedcam_pb2 as pb
from seedcam.bundle import BundleHeader, Signature, SignatureError, verify_signature
from seedcam.errors import BundleError, ProtocolError
from seedcam.protocol import codec
from seedcam_firmware.config import FirmwareConfig, UpdatesConfig, config_set
from seedcam_firmware.crash_points import CRASH_ENV, crash_point
from seedcam_firmware.errors import UpdateRefusal
from seedcam_firmware.install import FIRMWARE, SUPERVISED_ENV, Installer, UpdateHost
from seedcam_firmware.storage import SlotStore, TransferJournal
from seedcam_firmware.task_catalog import KNOWN_TASKS

__all__ = ["CRASH_ENV", "FIRMWARE", "SUPERVISED_ENV", "TRIAL_ENV", "UpdateHost", "UpdateService", "transfer_tag"]

log = logging.getLogger(__name__)

TRIAL_ENV = "SEEDCAM_FW_TRIAL"  #: set by the supervisor: the firmware slot booted on trial
_CHUNK_OVERHEAD = 64  # protobuf fields around a chunk's data
_CONFIRM_FRAMES = 3  # frames a firmware on trial must process before it confirms
_MAX_BLOCK_FAILURES = 3  # a block that fails its hash this often is not a transmission error


def transfer_tag(sha256_hex: str) -> int:
    """The 32-bit tag that names a transfer in every chunk: the payload sha256's first 4 bytes."""
    return int(struct.unpack("<I", bytes.fromhex(sha256_hex[:8]))[0])


class UpdateService:
    """Serves ``UpdateRequest`` messages for one daemon.

    Args:
        config: the ``[updates]`` section; an empty ``dir`` disables updates.
        host: the daemon.
        max_frame_size: the link's payload limit (bounds the chunk size).
        num_threads: interpreter threads for self-tests.
    """

    def __init__(self, config: UpdatesConfig, host: UpdateHost, *, max_frame_size: int, num_threads: int = 1) -> None:
        self.config = config
        self._host = host
        self._max_chunk = max_frame_size - _CHUNK_OVERHEAD
        self._num_threads = num_threads
        self._keys = [bytes.fromhex(k) for k in config.public_keys]
        self._lock = threading.Lock()
        self._busy = False
        self._mid_reported = False
        self._bad_blocks: dict[int, int] = {}  # block offset -> hash failures in this transfer
        self._ending: Hashable | None = None  # what the worker runs: a transfer tag (an end) or a begin
        self._end_replies: list[Callable[[bytes], None]] = []
        self._last_end: tuple[int, pb.UpdateResponse] | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.enabled = bool(config.dir)
        if self.enabled:
            root = Path(config.dir)
            self.store = SlotStore(root / "slots", at_step=crash_point)
            self.journal = TransferJournal(root / "staging")
            self.installer = Installer(
                self.store, host, reserve_bytes=int(config.reserve_mb * 1_000_000), num_threads=num_threads
            )

    # ------------------------------------------------------------------ boot

    def effective_config(self, cfg: FirmwareConfig) -> FirmwareConfig:
        """``cfg`` with every task that has an intact active slot pointed at that slot's model."""
        if not self.enabled:
            return cfg
        for task in KNOWN_TASKS:
            state = self.store.state(task)
            for slot in (state.active, state.previous):
                if slot is None:
                    continue
                try:
                    header = self.store.verify(task, slot)
                except BundleError as exc:
                    log.error("%s slot %s is damaged (%s); trying the next candidate", task, slot, exc)
                    continue
                if slot != state.active:
                    log.error("%s: falling back to its previous slot %s", task, slot)
                manifest = self.store.slot_dir(task, slot) / "manifest.json"
                cfg = config_set(cfg, f"models.{task}", str(manifest.resolve()), source="updates")
                precision = header.fields.get("precision", "int8")
                cfg = config_set(cfg, f"models.{task}_precision", precision, source="updates")
                break
        return cfg

    def start(self) -> None:
        """Start confirming a firmware trial, when this boot is one."""
        slot = os.environ.get(TRIAL_ENV)
        if self.enabled and slot:
            thread = threading.Thread(target=self._confirm_trial, args=(slot,), name="seedcam-trial", daemon=True)
            self._threads.append(thread)
            thread.start()

    def close(self) -> None:
        """Stop background work."""
        self._stop.set()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=5.0)

    def _confirm_trial(self, slot: str) -> None:
        here = Path(seedcam_firmware.__file__).resolve()
        if not here.is_relative_to(self.store.slot_dir(FIRMWARE, slot).resolve()):
            # not the slot's code (its tree is gone and Python found another copy): never confirm
            log.error("on trial for slot %s but running %s; not confirming", slot, here)
            return
        while not self._stop.wait(0.2):
            if self._host.health().frames_processed >= _CONFIRM_FRAMES:
                state = self.store.state(FIRMWARE)
                if state.trial != slot:
                    return
                crash_point("firmware_trial")
                header = self.store.header(FIRMWARE, slot)
                counter = max(state.counter, header.security_counter if header else 0)
                self.store.write_state(
                    FIRMWARE,
                    replace(
                        state, active=slot, previous=state.active, trial=None, trial_started=False, counter=counter
                    ),
                    flip=True,
                )
                log.warning("firmware %s in slot %s confirmed its health", header.version if header else "?", slot)
                return

    # ------------------------------------------------------------------ dispatch

    def handle(self, payload: bytes, reply: Callable[[bytes], None]) -> None:
        """Answer one ``UpdateRequest`` (``reply`` sends the response); never raises."""
        try:
            request = codec.parse(pb.UpdateRequest, payload)
        except ProtocolError as exc:
            reply(_refusal(pb.STATUS_INVALID_ARGUMENT, "undecodable", str(exc)))
            return
        kind = request.WhichOneof("body")
        if not self.enabled:
            reply(_refusal(pb.STATUS_UNAVAILABLE, "disabled", "updates are disabled: set updates.dir"))
            return
        try:
            if kind == "chunk":
                reply(self._on_chunk(request.chunk).SerializeToString())
            elif kind == "begin":  # a resume rehashes the part file: not on the reader thread
                # a repeated begin (the host resends one whose answer is slow to come) joins the running one
                self._in_worker(reply, lambda: self._on_begin(request.begin), tag=("begin", request.begin.header))
            elif kind == "end":
                self._on_end(request.end, reply)
            elif kind == "abort":
                with self._lock:
                    self._check_idle()
                    self.journal.clear()
                reply(pb.UpdateResponse().SerializeToString())
            elif kind == "list_slots":
                reply(pb.UpdateResponse(slots=self._slot_list()).SerializeToString())
            elif kind in ("activate", "rollback", "delete"):
                self._in_worker(reply, lambda: self._on_slot_request(kind, getattr(request, kind)))
            else:
                reply(_refusal(pb.STATUS_UNSUPPORTED, "unsupported", f"update request {kind or '(empty)'}"))
        except UpdateRefusal as exc:
            reply(_refusal(exc.status, exc.reason, str(exc)))
        except Exception as exc:  # a bug answers INTERNAL instead of killing the link
            log.exception("update request %s failed", kind)
            reply(_refusal(pb.STATUS_INTERNAL, "internal", f"{type(exc).__name__}: {exc}"))

    def _check_idle(self) -> None:
        if self._busy:
            raise UpdateRefusal("busy", "an installation is running; try again when it has finished", pb.STATUS_BUSY)

    def _in_worker(
        self, reply: Callable[[bytes], None], work: Callable[[], pb.UpdateResponse], tag: Hashable | None = None
    ) -> None:
        """Run ``work`` on a worker thread and answer with its response.

        ``tag`` names the work so that a repeated request joins it: an end-of-transfer
        (an int transfer tag: a repeated end, its answer lost, joins the running
        installation or gets the finished one's answer again) or a begin.
        """
        with self._lock:
            if tag is not None and self._busy and self._ending == tag:
                self._end_replies.append(reply)
                return
            self._check_idle()
            self._busy = True
            self._ending = tag
            self._end_replies = [reply]

        def run() -> None:
            try:
                response = work()
            except UpdateRefusal as exc:
                response = pb.UpdateResponse(status=exc.status, reason=exc.reason, message=str(exc))
            except Exception as exc:
                log.exception("update work failed")
                response = pb.UpdateResponse(status=pb.STATUS_INTERNAL, reason="internal", message=str(exc))
            finally:
                with self._lock:
                    self._busy = False
                    replies, self._end_replies = self._end_replies, []
                    if isinstance(tag, int):
                        self._last_end = (tag, response)
            if isinstance(tag, int) and response.HasField("installed"):
                crash_point("before_end_reply")  # installed, but the answer dies with the firmware
            for answer in replies:
                answer(response.SerializeToString())
            if response.installed.restart_pending:
                self._host.request_restart()

        thread = threading.Thread(target=run, name="seedcam-update", daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    # ------------------------------------------------------------------ transfer

    def _on_begin(self, begin: pb.TransferBegin) -> pb.UpdateResponse:
        try:
            header = BundleHeader.parse(begin.header)
            signature = Signature.from_bytes(begin.signature)
        except BundleError as exc:
            raise UpdateRefusal("header", str(exc)) from exc
        group = self._check_header(header, signature)
        installed = self.installer.installed(header)
        if installed is not None:  # a re-push (its end's answer lost?): nothing to send, no slot to change
            if self.journal.matches(header):
                self.journal.clear()
            where = f"{group} slot {installed.slot}" + (" (active)" if installed.activated else "")
            log.info("%s is already installed in %s", header.id, where)
            message = f"{header.id} is already installed in {where}"
            return pb.UpdateResponse(installed=installed, reason="already_installed", message=message)
        if header.kind == "firmware":
            self.installer.check_firmware_bootable()
        # on the worker, with the service marked busy: chunks, ends and aborts are refused meanwhile, so
        # the journal is ours without holding the lock through a resume's rehash (the reader needs the lock)
        have = self.journal.next_offset if self.journal.matches(header) else 0
        self._check_space(header.size * 2 - have)
        resumed = self.journal.start(header, begin.signature)
        with self._lock:
            self._mid_reported = False
            self._bad_blocks.clear()
        crash_point("after_begin")
        log.info(
            "receiving %s for %s: %d bytes%s",
            header.id,
            group,
            header.size,
            f", resuming at {self.journal.next_offset}" if resumed else "",
        )
        return pb.UpdateResponse(state=self._state(resumed))

    def _check_header(self, header: BundleHeader, signature: Signature | None) -> str:
        """All checks that need no data; returns the slot group.

        Raises:
            UpdateRefusal: see the reasons in the module docstring.
        """
        if self._keys:
            try:
                verify_signature(header, signature, self._keys)
            except SignatureError as exc:
                raise UpdateRefusal(exc.reason, str(exc)) from exc
        if header.target not in ("any", self.config.target):
            raise UpdateRefusal("target", f"bundle is for board {header.target!r}, this is {self.config.target!r}")
        if header.kind == "model":
            group = header.task
            if group not in KNOWN_TASKS:
                known = ", ".join(KNOWN_TASKS)
                raise UpdateRefusal("task", f"bundle is for task {group!r}, the firmware knows {known}")
        else:
            group = FIRMWARE
            if header.file("wheel") is None:
                raise UpdateRefusal("header", "a firmware bundle must carry a wheel")
        floor = self.store.state(group).counter
        if header.security_counter < floor:
            raise UpdateRefusal(
                "counter", f"security counter {header.security_counter} is below the device's {floor} for {group}"
            )
        if _version(header.min_firmware_version) > _version(self._host.firmware_version):
            raise UpdateRefusal(
                "firmware_version",
                f"bundle needs firmware >= {header.min_firmware_version}, running {self._host.firmware_version}",
            )
        return group

    def _check_space(self, needed: int) -> None:
        free = shutil.disk_usage(self.journal.folder).free
        reserve = int(self.config.reserve_mb * 1_000_000)
        if free - needed < reserve:
            raise UpdateRefusal("no_space", f"needs {needed} bytes plus a {reserve}-byte reserve; {free} free")

    def _state(self, resumed: bool = False) -> pb.TransferState:
        header = self.journal.header
        assert header is not None
        return pb.TransferState(
            transfer_tag=transfer_tag(header.sha256),
            next_offset=self.journal.next_offset,
            size=header.size,
            resumed=resumed,
            max_chunk=self._max_chunk,
        )

    def _on_chunk(self, chunk: pb.TransferChunk) -> pb.UpdateResponse:
        with self._lock:
            header = self.journal.header
            if header is None or transfer_tag(header.sha256) != chunk.transfer_tag or self._busy:
                raise UpdateRefusal(
                    "no_transfer", "no transfer of this bundle is open; send begin", pb.STATUS_FAILED_PRECONDITION
                )
            was_complete = self.journal.complete
            ok = self.journal.write(chunk.offset, chunk.data)
            response = pb.UpdateResponse(state=self._state())
            if not ok:
                failures = self._bad_blocks.get(self.journal.next_offset, 0) + 1
                self._bad_blocks[self.journal.next_offset] = failures
                if failures >= _MAX_BLOCK_FAILURES:  # the same block, resent and still wrong: the bundle is
                    self.journal.clear()  # not what its signed header says
                    raise UpdateRefusal(
                        "tampered",
                        f"tampered: the block at {response.state.next_offset} failed its hash {failures} times",
                        pb.STATUS_FAILED_PRECONDITION,
                    )
                response.reason = "block_hash"
                response.message = f"a block failed its hash; resend from {self.journal.next_offset}"
                log.warning("transfer: %s", response.message)
            if not self._mid_reported and self.journal.next_offset * 2 >= header.size:
                self._mid_reported = True
                crash_point("mid_chunks")
            if self.journal.complete and not was_complete:
                crash_point("after_last_chunk")
        return response

    def _on_end(self, end: pb.TransferEnd, reply: Callable[[bytes], None]) -> None:
        with self._lock:
            if self._busy and self._ending == end.transfer_tag:
                self._end_replies.append(reply)  # the host repeats an end whose answer it lost
                return
            if self.journal.header is None and self._last_end is not None and self._last_end[0] == end.transfer_tag:
                reply(self._last_end[1].SerializeToString())
                return
            self._check_idle()  # a begin may be rewriting the journal
            header = self.journal.header
            if header is None or transfer_tag(header.sha256) != end.transfer_tag:
                raise UpdateRefusal(
                    "no_transfer", "no transfer of this bundle is open; send begin", pb.STATUS_FAILED_PRECONDITION
                )
            if not self.journal.complete:
                raise UpdateRefusal(
                    "truncated",
                    f"truncated: {self.journal.next_offset} of {header.size} bytes received",
                    pb.STATUS_FAILED_PRECONDITION,
                )
            if end.sha256 and end.sha256 != header.sha256:
                raise UpdateRefusal("sha256", "the host's sha256 differs from the bundle header's")
        self._in_worker(reply, lambda: self._install(header, end.activate), tag=end.transfer_tag)

    # ------------------------------------------------------------------ install

    def _install(self, header: BundleHeader, activate: bool) -> pb.UpdateResponse:
        stored = self.journal.payload_sha256()
        if stored != header.sha256:
            self.journal.clear()
            raise UpdateRefusal("sha256", f"stored payload sha256 {stored[:12]}... differs from the header's")
        self.journal.mark_stored()
        try:
            report = self.installer.install(header, self.journal, activate)
        except UpdateRefusal:
            self.journal.clear()  # refused: a push again starts over (and is refused again)
            raise
        self.journal.clear()
        return pb.UpdateResponse(installed=report)

    # ------------------------------------------------------------------ slots

    def _on_slot_request(self, kind: str, request: pb.SlotRequest) -> pb.UpdateResponse:
        group = request.name
        if group not in (*KNOWN_TASKS, FIRMWARE):
            raise UpdateRefusal("not_found", f"no slot group {group!r}", pb.STATUS_NOT_FOUND)
        state = self.store.state(group)
        slot = request.slot or (state.previous if kind == "rollback" else "")
        if not slot:
            raise UpdateRefusal(
                "no_previous", f"{group} has no previous slot to roll back to", pb.STATUS_FAILED_PRECONDITION
            )
        if slot not in ("a", "b"):
            raise UpdateRefusal("not_found", f"no slot {slot!r}; slots are a and b", pb.STATUS_NOT_FOUND)
        if state.trial == slot:
            raise UpdateRefusal("trial", f"slot {group}/{slot} is on trial; wait for its outcome", pb.STATUS_BUSY)
        if kind == "delete":
            if state.active == slot:
                raise UpdateRefusal(
                    "active",
                    f"slot {group}/{slot} is active; activate the other one first",
                    pb.STATUS_FAILED_PRECONDITION,
                )
            self.store.delete(group, slot)
            return pb.UpdateResponse(slots=self._slot_list())
        return pb.UpdateResponse(installed=self.installer.activate_slot(group, slot))

    def _slot_list(self) -> pb.SlotList:
        out = pb.SlotList()
        for group in self.store.groups():
            state = self.store.state(group)
            item = out.groups.add(name=group, security_counter=state.counter)
            if group == FIRMWARE:
                item.running = self._host.firmware_version
            for slot in ("a", "b"):
                header = self.store.header(group, slot)
                info = item.slots.add(slot=slot, state="empty")
                if header is None:
                    continue
                info.bundle_id, info.version, info.sha256 = header.id, header.version, header.sha256
                info.security_counter = header.security_counter
                info.active = state.active == slot
                info.previous = state.previous == slot
                info.state = "trial" if state.trial == slot else "installed"
        return out


def _refusal(status: pb.StatusCode, reason: str, message: str) -> bytes:
    return pb.UpdateResponse(status=status, reason=reason, message=message).SerializeToString()


def _version(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in text.split("."))
    except ValueError as exc:
        raise UpdateRefusal("header", f"bad version {text!r}") from exc

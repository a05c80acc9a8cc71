"""The device end of updates: bundle transfers on the TRANSFER channel, slots, activation, rollback.

One push, as the device sees it::

    begin(header, signature)  checks BEFORE any data: signature (when keys are
                              provisioned), target board, task, security counter,
                              firmware version, free space; opens or resumes the journal
    chunk(offset, data) ...   stored at its offset; answered with the next offset
                              expected (a duplicate or out-of-order chunk changes
                              nothing, so retries are idempotent); every block is
                              checked against its hash as it completes
    end(sha256)               sha256 of what was stored → unpack into the inactive
                              slot → self-test (golden input → golden output) →
                              activate (atomic pointer flip; the old slot stays as
                              the rollback target) → swap the running task's model

Chunks are handled on the link's reader thread: each is a bounded amount of
work (one write of at most a frame, the hash of what it adds, and an fsync of
the part file every 256 KiB). A begin (which may rehash a whole part file to
find the resume point) and the end of a push (sha256, unpack, self-test,
activation) run on a worker thread, so the link keeps answering meanwhile
(other update requests are answered ``busy``), and results keep streaming
throughout.

``SEEDCAM_FW_CRASH_AT=<step>`` makes the process kill itself with SIGKILL at a
named step (``after_begin``, ``mid_chunks``, ``after_last_chunk``,
``during_selftest``, ``during_activate``, ``before_end_reply``, ``firmware_trial``): the tests use it
to cut power at each step deterministically.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import struct
import threading
import zipfile
from collections.abc import Callable, Hashable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from seedcam._proto import seedcam_pb2 as pb
from seedcam.bundle import BundleHeader, Signature, SignatureError, verify_signature
from seedcam.errors import BundleError, ProtocolError, SensorError
from seedcam.protocol import codec
from seedcam.types import Health
from seedcam_firmware.config_schema import KNOWN_TASKS
from seedcam_firmware.errors import UpdateRefused
from seedcam_firmware.selftest import selftest_firmware, selftest_model
from seedcam_firmware.storage import SlotStore, TransferJournal

if TYPE_CHECKING:
    from seedcam_firmware.config import FirmwareConfig, UpdatesConfig

__all__ = ["CRASH_ENV", "SUPERVISED_ENV", "TRIAL_ENV", "UpdateHost", "UpdateService", "transfer_tag"]

log = logging.getLogger(__name__)

CRASH_ENV = "SEEDCAM_FW_CRASH_AT"
TRIAL_ENV = "SEEDCAM_FW_TRIAL"  #: set by the supervisor: the firmware slot booted on trial
SUPERVISED_ENV = "SEEDCAM_FW_SUPERVISED"  #: set by the supervisor: only then can a firmware update boot
FIRMWARE = "firmware"
_CHUNK_OVERHEAD = 64  # protobuf fields around a chunk's data
_CONFIRM_FRAMES = 3  # frames a firmware on trial must process before it confirms
_MAX_BLOCK_FAILURES = 3  # a block that fails its hash this often is not a transmission error


def transfer_tag(sha256_hex: str) -> int:
    """The 32-bit tag that names a transfer in every chunk: the payload sha256's first 4 bytes."""
    return int(struct.unpack("<I", bytes.fromhex(sha256_hex[:8]))[0])


def crash_point(step: str) -> None:
    """kill -9 this process when ``$SEEDCAM_FW_CRASH_AT`` names ``step`` (a test hook)."""
    if os.environ.get(CRASH_ENV) == step:
        log.warning("crash point %s: killing the firmware", step)
        os.kill(os.getpid(), signal.SIGKILL)


class UpdateHost(Protocol):
    """What the update service needs from the daemon."""

    firmware_version: str

    def load_task(self, task: str, manifest: Path, precision: str) -> Any:
        """Load ``task`` with the model in ``manifest`` (not yet running); raises SensorError."""
        ...

    def swap_task(self, task: Any) -> None:
        """Make a task from :meth:`load_task` the running one."""
        ...

    def request_restart(self) -> None:
        """Stop the firmware with the restart exit code (the supervisor boots the trial slot)."""
        ...

    def health(self) -> Health:
        """The current health report."""
        ...


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
            self.store = SlotStore(root / "slots", before_pointer_flip=lambda: crash_point("during_activate"))
            self.journal = TransferJournal(root / "staging")

    # ------------------------------------------------------------------ boot

    def effective_config(self, cfg: FirmwareConfig) -> FirmwareConfig:
        """``cfg`` with every task that has an intact active slot pointed at that slot's model."""
        if not self.enabled:
            return cfg
        from seedcam_firmware.config import config_set

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
        import seedcam_firmware

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
        except UpdateRefused as exc:
            reply(_refusal(exc.status, exc.reason, str(exc)))
        except Exception as exc:  # a bug answers INTERNAL instead of killing the link
            log.exception("update request %s failed", kind)
            reply(_refusal(pb.STATUS_INTERNAL, "internal", f"{type(exc).__name__}: {exc}"))

    def _check_idle(self) -> None:
        if self._busy:
            raise UpdateRefused("busy", "an installation is running; try again when it has finished", pb.STATUS_BUSY)

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
            except UpdateRefused as exc:
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
            raise UpdateRefused("header", str(exc)) from exc
        group = self._check_header(header, signature)
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
            "receiving %s for %s: %d bytes%s", header.id, group, header.size,
            f", resuming at {self.journal.next_offset}" if resumed else "",
        )
        return pb.UpdateResponse(state=self._state(resumed))

    def _check_header(self, header: BundleHeader, signature: Signature | None) -> str:
        """All checks that need no data; returns the slot group.

        Raises:
            UpdateRefused: see the reasons in the module docstring.
        """
        if self._keys:
            try:
                verify_signature(header, signature, self._keys)
            except SignatureError as exc:
                raise UpdateRefused(exc.reason, str(exc)) from exc
        if header.target not in ("any", self.config.target):
            raise UpdateRefused("target", f"bundle is for board {header.target!r}, this is {self.config.target!r}")
        if header.kind == "model":
            group = header.task
            if group not in KNOWN_TASKS:
                known = ", ".join(KNOWN_TASKS)
                raise UpdateRefused("task", f"bundle is for task {group!r}, the firmware knows {known}")
        else:
            group = FIRMWARE
            if header.file("wheel") is None:
                raise UpdateRefused("header", "a firmware bundle must carry a wheel")
            self._check_firmware_bootable()
        floor = self.store.state(group).counter
        if header.security_counter < floor:
            raise UpdateRefused(
                "counter", f"security counter {header.security_counter} is below the device's {floor} for {group}"
            )
        if _version(header.min_firmware_version) > _version(self._host.firmware_version):
            raise UpdateRefused(
                "firmware_version", f"bundle needs firmware >= {header.min_firmware_version}, "
                f"running {self._host.firmware_version}",
            )
        return group

    def _check_firmware_bootable(self) -> None:
        """A new firmware needs the supervisor to boot it, and no other firmware on trial.

        Raises:
            UpdateRefused: ``unsupervised`` (nothing would boot it: the host would wait in
                vain and a trial would stay armed) or ``trial`` (a trial is in progress).
        """
        if not os.environ.get(SUPERVISED_ENV):
            raise UpdateRefused(
                "unsupervised", "firmware updates need the boot loader: run seedcam-firmware supervise -- ...",
                pb.STATUS_FAILED_PRECONDITION,
            )
        trial = self.store.state(FIRMWARE).trial
        if trial is not None:
            raise UpdateRefused("trial", f"firmware slot {trial} is on trial; try again when it has confirmed",
                                pb.STATUS_BUSY)

    def _check_space(self, needed: int) -> None:
        free = shutil.disk_usage(self.journal.folder).free
        reserve = int(self.config.reserve_mb * 1_000_000)
        if free - needed < reserve:
            raise UpdateRefused("no_space", f"needs {needed} bytes plus a {reserve}-byte reserve; {free} free")

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
                raise UpdateRefused(
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
                    raise UpdateRefused(
                        "tampered", f"tampered: the block at {response.state.next_offset} failed its hash "
                        f"{failures} times", pb.STATUS_FAILED_PRECONDITION,
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
                raise UpdateRefused(
                    "no_transfer", "no transfer of this bundle is open; send begin", pb.STATUS_FAILED_PRECONDITION
                )
            if not self.journal.complete:
                raise UpdateRefused(
                    "truncated", f"truncated: {self.journal.next_offset} of {header.size} bytes received",
                    pb.STATUS_FAILED_PRECONDITION,
                )
            if end.sha256 and end.sha256 != header.sha256:
                raise UpdateRefused("sha256", "the host's sha256 differs from the bundle header's")
        self._in_worker(reply, lambda: self._install(header, end.activate), tag=end.transfer_tag)

    # ------------------------------------------------------------------ install

    def _install(self, header: BundleHeader, activate: bool) -> pb.UpdateResponse:
        stored = self.journal.payload_sha256()
        if stored != header.sha256:
            self.journal.clear()
            raise UpdateRefused("sha256", f"stored payload sha256 {stored[:12]}... differs from the header's")
        self.journal.mark_stored()
        group = header.task if header.kind == "model" else FIRMWARE
        slot = self.store.inactive_slot(group)
        staged = self.store.prepare(group, slot)
        for entry in header.files:
            (staged / entry.name).write_bytes(self.journal.read(entry.offset, entry.size))
        if header.kind == "firmware":
            free = shutil.disk_usage(staged).free - int(self.config.reserve_mb * 1_000_000)
            wheel = header.file("wheel")
            assert wheel is not None  # checked at begin
            _unpack_wheel(staged / wheel.name, staged, max_bytes=free)
        slot_dir = self.store.commit(group, slot, staged, header.raw, self.journal.signature)
        try:
            report = (
                self._install_firmware(header, slot, slot_dir)
                if header.kind == "firmware"
                else self._install_model(header, group, slot, slot_dir, activate)
            )
        except UpdateRefused:
            self.store.delete(group, slot)  # a bundle that failed its self-test can never be activated
            self.journal.clear()
            raise
        self.journal.clear()
        return pb.UpdateResponse(installed=report)

    def _install_model(
        self, header: BundleHeader, task: str, slot: str, slot_dir: Path, activate: bool
    ) -> pb.InstallReport:
        crash_point("during_selftest")
        _, error = selftest_model(slot_dir, header, num_threads=self._num_threads)
        log.info("%s passed its self-test in %s/%s (max error %.3g)", header.id, task, slot, error)
        report = pb.InstallReport(name=task, slot=slot, bundle_id=header.id, selftest_max_error=error)
        if activate:
            report.previous_slot = self._activate_model(task, slot, header) or ""
            report.activated = True
        return report

    def _activate_model(self, task: str, slot: str, header: BundleHeader) -> str | None:
        """Load the slot's model as the task, flip the pointer, swap the running task; returns the old slot."""
        try:
            loaded = self._host.load_task(
                task, self.store.slot_dir(task, slot) / "manifest.json", header.fields.get("precision", "int8")
            )
        except SensorError as exc:
            raise UpdateRefused("model", f"the {task} task cannot use the model: {exc}") from exc
        state = self.store.activate(task, slot)
        self._host.swap_task(loaded)
        log.info("%s is now the active %s model (slot %s)", header.id, task, slot)
        return state.previous

    def _install_firmware(self, header: BundleHeader, slot: str, slot_dir: Path) -> pb.InstallReport:
        crash_point("during_selftest")
        selftest_firmware(slot_dir, header)
        state = self.store.state(FIRMWARE)
        self.store.write_state(FIRMWARE, replace(state, trial=slot, trial_started=False), flip=True)
        log.warning("firmware %s installed in slot %s; restarting into it on trial", header.version, slot)
        return pb.InstallReport(name=FIRMWARE, slot=slot, bundle_id=header.id, restart_pending=True)

    # ------------------------------------------------------------------ slots

    def _on_slot_request(self, kind: str, request: pb.SlotRequest) -> pb.UpdateResponse:
        group = request.name
        if group not in (*KNOWN_TASKS, FIRMWARE):
            raise UpdateRefused("not_found", f"no slot group {group!r}", pb.STATUS_NOT_FOUND)
        state = self.store.state(group)
        slot = request.slot or (state.previous if kind == "rollback" else "")
        if not slot:
            raise UpdateRefused(
                "no_previous", f"{group} has no previous slot to roll back to", pb.STATUS_FAILED_PRECONDITION
            )
        if slot not in ("a", "b"):
            raise UpdateRefused("not_found", f"no slot {slot!r}; slots are a and b", pb.STATUS_NOT_FOUND)
        if state.trial == slot:
            raise UpdateRefused("trial", f"slot {group}/{slot} is on trial; wait for its outcome", pb.STATUS_BUSY)
        if kind == "delete":
            if state.active == slot:
                raise UpdateRefused(
                    "active", f"slot {group}/{slot} is active; activate the other one first",
                    pb.STATUS_FAILED_PRECONDITION,
                )
            self.store.delete(group, slot)
            return pb.UpdateResponse(slots=self._slot_list())
        try:
            header = self.store.verify(group, slot)
        except BundleError as exc:
            raise UpdateRefused("empty_slot", str(exc), pb.STATUS_FAILED_PRECONDITION) from exc
        if header.security_counter < state.counter:  # no way back below the floor, not even by rollback
            raise UpdateRefused(
                "counter", f"slot {group}/{slot} has security counter {header.security_counter}, below the "
                f"device's {state.counter} for {group}", pb.STATUS_FAILED_PRECONDITION,
            )
        if group == FIRMWARE:
            self._check_firmware_bootable()
            self.store.write_state(FIRMWARE, replace(state, trial=slot, trial_started=False), flip=True)
            return pb.UpdateResponse(
                installed=pb.InstallReport(name=group, slot=slot, bundle_id=header.id, restart_pending=True)
            )
        _, error = selftest_model(self.store.slot_dir(group, slot), header, num_threads=self._num_threads)
        previous = self._activate_model(group, slot, header)
        return pb.UpdateResponse(
            installed=pb.InstallReport(
                name=group, slot=slot, bundle_id=header.id, activated=True,
                selftest_max_error=error, previous_slot=previous or "",
            )
        )

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


def _refusal(status: int, reason: str, message: str) -> bytes:
    return pb.UpdateResponse(status=status, reason=reason, message=message).SerializeToString()


def _version(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in text.split("."))
    except ValueError as exc:
        raise UpdateRefused("header", f"bad version {text!r}") from exc


def _unpack_wheel(wheel: Path, folder: Path, *, max_bytes: int) -> None:
    """Extract a pure-Python wheel into ``folder`` (what installing it into a slot means).

    Args:
        wheel: the wheel file.
        folder: the slot's staging folder.
        max_bytes: the most the unpacked files may take (free space less the reserve).

    Raises:
        UpdateRefused: ``firmware`` for a file that is not a zip or a member with an
            absolute path, a ``..`` component or landing outside the folder;
            ``no_space`` when the unpacked size (from the zip's directory, checked
            before anything is written) exceeds ``max_bytes``.
    """
    root = folder.resolve()
    try:
        with zipfile.ZipFile(wheel) as zf:
            members = zf.infolist()
            for info in members:
                name = info.filename
                parts = name.replace("\\", "/").split("/")
                if name.startswith(("/", "\\")) or ".." in parts or (len(name) > 1 and name[1] == ":"):
                    raise UpdateRefused("firmware", f"wheel member {name!r} has an absolute path or '..'")
                if not (folder / name).resolve().is_relative_to(root):
                    raise UpdateRefused("firmware", f"wheel member {name!r} would land outside the slot")
            unpacked = sum(info.file_size for info in members)
            if unpacked > max_bytes:
                raise UpdateRefused(
                    "no_space", f"the firmware wheel unpacks to {unpacked} bytes; {max(max_bytes, 0)} can be spared"
                )
            zf.extractall(folder)
    except zipfile.BadZipFile as exc:
        raise UpdateRefused("firmware", f"the firmware wheel is not a zip: {exc}") from exc

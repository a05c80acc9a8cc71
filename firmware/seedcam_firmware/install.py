"""Installing a received bundle: unpack and self-test it in staging, then move it into a slot.

A bundle is never unpacked over a slot. Its files go into the group's staging
folder (:meth:`SlotStore.stage`) and are checked there: for a model, the
manifest's identity against the header's, the self-test (golden input → golden
output) and that the task can load it; for a firmware, the wheel's identity and
a fresh import. Only a bundle that passed becomes the inactive slot, in one
rename (:meth:`SlotStore.commit`), and only then may the pointer flip to it. A
refused bundle leaves both slots and the pointer as they were: the rollback
target is never the price of a bad bundle.

What a slot already holds intact (the same payload sha256) is not installed
again: :meth:`Installer.installed` answers for it, with no transfer and no slot
change, so a host that lost the answer to its end and pushes again keeps the
rollback target.

Storage steps and their crash points (see :mod:`seedcam_firmware.crash_points`):
``during_staging``, ``during_selftest``, then ``after_selftest`` or
``after_refusal``, ``during_commit``, ``during_activate``.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from seedcam._proto import seedcam_pb2 as pb
from seedcam.bundle import HEADER_FILE, SIGNATURE_FILE, BundleHeader
from seedcam.errors import BundleError, SensorError
from seedcam.types import Health
from seedcam_firmware.crash_points import crash_point
from seedcam_firmware.errors import UpdateRefusal
from seedcam_firmware.selftest import selftest_firmware, selftest_model
from seedcam_firmware.storage import SLOTS, SlotStore, TransferJournal
from seedcam_firmware.wheel import check_wheel_identity, unpack_wheel

__all__ = ["FIRMWARE", "SUPERVISED_ENV", "Installer", "UpdateHost", "group_of"]

log = logging.getLogger(__name__)

FIRMWARE = "firmware"
SUPERVISED_ENV = "SEEDCAM_FW_SUPERVISED"  #: set by the supervisor: only then can a firmware update boot


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


def group_of(header: BundleHeader) -> str:
    """The slot group a bundle installs into: its task, or ``firmware``."""
    return header.task if header.kind == "model" else FIRMWARE


class Installer:
    """Puts received bundles into slots and activates slots.

    Args:
        store: the slots.
        host: the daemon (loads and swaps tasks).
        reserve_bytes: free space to keep after unpacking a firmware wheel.
        num_threads: interpreter threads for self-tests.
    """

    def __init__(self, store: SlotStore, host: UpdateHost, *, reserve_bytes: int, num_threads: int = 1) -> None:
        self.store = store
        self._host = host
        self._reserve = reserve_bytes
        self._num_threads = num_threads

    def installed(self, header: BundleHeader) -> pb.InstallReport | None:
        """The slot that already holds ``header``'s payload intact, as a report; None when none does."""
        group = group_of(header)
        state = self.store.state(group)
        for slot in SLOTS:
            held = self.store.header(group, slot)
            if held is None or held.sha256 != header.sha256 or held.kind != header.kind:
                continue
            try:
                self.store.verify(group, slot)
            except BundleError as exc:  # damaged: it is installed again (into the inactive slot)
                log.warning("%s/%s holds %s but is damaged (%s)", group, slot, held.id, exc)
                continue
            active = state.active == slot
            return pb.InstallReport(
                name=group,
                slot=slot,
                bundle_id=held.id,
                activated=active,
                previous_slot=(state.previous or "") if active else "",
                restart_pending=state.trial == slot,
            )
        return None

    def install(self, header: BundleHeader, journal: TransferJournal, activate: bool) -> pb.InstallReport:
        """Unpack the journal's payload in staging, check it, move it into the inactive slot, activate it.

        Raises:
            UpdateRefusal: the bundle failed a check (``identity``, ``selftest_*``,
                ``model``, ``firmware``, ``no_space``...): no slot has changed. (Only
                when the task, having taken the staged model, fails to load the slot's
                copy does the bundle stay installed, not active.)
        """
        group = group_of(header)
        try:
            slot = self.store.inactive_slot(group)
        except ValueError as exc:  # a firmware on trial holds the other slot
            raise UpdateRefusal("trial", str(exc), pb.STATUS_BUSY) from exc
        staged = self.store.stage(group)
        try:
            error = self._stage_and_check(header, journal, staged)
        except UpdateRefusal:
            crash_point("after_refusal")
            self.store.discard(staged)
            raise
        crash_point("after_selftest")
        slot_dir = self.store.commit(group, slot, staged, header.raw, journal.signature)
        if header.kind == "firmware":
            return self._arm_trial(slot, header)
        log.info("%s passed its self-test and is installed in %s", header.id, slot_dir)
        report = pb.InstallReport(name=group, slot=slot, bundle_id=header.id, selftest_max_error=error)
        if activate:
            report.previous_slot = self.activate_model(group, slot, header) or ""
            report.activated = True
        return report

    def _stage_and_check(self, header: BundleHeader, journal: TransferJournal, staged: Path) -> float:
        """Write the bundle's files into ``staged`` and run every check there; returns the self-test's error."""
        try:
            for index, entry in enumerate(header.files):
                (staged / entry.name).write_bytes(journal.read(entry.offset, entry.size))
                if index == 0:
                    crash_point("during_staging")
            if header.kind == "firmware":
                wheel = header.file("wheel")
                assert wheel is not None  # checked at begin
                check_wheel_identity(staged / wheel.name, header)
                free = shutil.disk_usage(staged).free - self._reserve
                names = (*(f.name for f in header.files), HEADER_FILE, SIGNATURE_FILE)
                unpack_wheel(staged / wheel.name, staged, max_bytes=free, keep=names)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise UpdateRefusal("no_space", "the storage filled up while unpacking the bundle") from exc
            raise
        crash_point("during_selftest")
        if header.kind == "firmware":
            selftest_firmware(staged, header)
            return 0.0
        _, error = selftest_model(staged, header, num_threads=self._num_threads)
        self._load(header.task, staged, header)  # the task must take it, before it costs a slot
        return error

    def _load(self, task: str, folder: Path, header: BundleHeader) -> Any:
        try:
            return self._host.load_task(task, folder / "manifest.json", header.fields.get("precision", "int8"))
        except SensorError as exc:
            raise UpdateRefusal("model", f"the {task} task cannot use the model: {exc}") from exc

    def activate_model(self, task: str, slot: str, header: BundleHeader) -> str | None:
        """Load the slot's model as the task, flip the pointer, swap the running task; returns the old slot.

        Raises:
            UpdateRefusal: ``model`` when the task cannot load it (nothing changed).
        """
        loaded = self._load(task, self.store.slot_dir(task, slot), header)
        state = self.store.activate(task, slot)
        self._host.swap_task(loaded)
        log.info("%s is now the active %s model (slot %s)", header.id, task, slot)
        return state.previous

    def activate_slot(self, group: str, slot: str) -> pb.InstallReport:
        """Check an installed slot again and make it active (a firmware slot: boot it on trial).

        Raises:
            UpdateRefusal: ``empty_slot`` (empty or damaged), ``counter`` (below the
                group's floor: no way back, not even by rollback), ``unsupervised`` or
                ``trial`` (a firmware), a self-test reason or ``model`` (a model).
        """
        state = self.store.state(group)
        try:
            header = self.store.verify(group, slot)
        except BundleError as exc:
            raise UpdateRefusal("empty_slot", str(exc), pb.STATUS_FAILED_PRECONDITION) from exc
        if header.security_counter < state.counter:
            raise UpdateRefusal(
                "counter",
                f"slot {group}/{slot} has security counter {header.security_counter}, below the "
                f"device's {state.counter} for {group}",
                pb.STATUS_FAILED_PRECONDITION,
            )
        if group == FIRMWARE:
            self.check_firmware_bootable()
            return self._arm_trial(slot, header)
        _, error = selftest_model(self.store.slot_dir(group, slot), header, num_threads=self._num_threads)
        previous = self.activate_model(group, slot, header)
        return pb.InstallReport(
            name=group,
            slot=slot,
            bundle_id=header.id,
            activated=True,
            selftest_max_error=error,
            previous_slot=previous or "",
        )

    def _arm_trial(self, slot: str, header: BundleHeader) -> pb.InstallReport:
        """Mark a firmware slot for a trial boot (the pointer flip); the firmware then restarts into it."""
        state = self.store.state(FIRMWARE)
        self.store.write_state(FIRMWARE, replace(state, trial=slot, trial_started=False), flip=True)
        log.warning("firmware %s is in slot %s; restarting into it on trial", header.version, slot)
        return pb.InstallReport(name=FIRMWARE, slot=slot, bundle_id=header.id, restart_pending=True)

    def check_firmware_bootable(self) -> None:
        """A new firmware needs the supervisor to boot it, and no other firmware on trial.

        Raises:
            UpdateRefusal: ``unsupervised`` (nothing would boot it: the host would wait in
                vain and a trial would stay armed) or ``trial`` (a trial is in progress).
        """
        if not os.environ.get(SUPERVISED_ENV):
            raise UpdateRefusal(
                "unsupervised",
                "firmware updates need the boot loader: run seedcam-firmware supervise -- ...",
                pb.STATUS_FAILED_PRECONDITION,
            )
        trial = self.store.state(FIRMWARE).trial
        if trial is not None:
            raise UpdateRefusal(
                "trial", f"firmware slot {trial} is on trial; try again when it has confirmed", pb.STATUS_BUSY
            )

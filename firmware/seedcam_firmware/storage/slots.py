"""A/B slots per group (one group per task, and ``firmware``) with an atomically flipped pointer.

Layout under the store's root::

    <group>/state.json   {"active": "a", "previous": "b", "counter": 3, ...}   (atomic writes only)
    <group>/a/           an installed bundle: its files + bundle.header (+ bundle.sig)
    <group>/b/
    <group>/.tmp-stage/  a bundle being unpacked and self-tested (removed at boot)

A new bundle is unpacked and self-tested in the group's staging folder
(:meth:`SlotStore.stage`), never over a slot; only one that passed becomes the
slot that is not active, in one rename (:meth:`SlotStore.commit`). Just before
that rename the pointer stops naming the slot as the rollback target, so a
rollback never reaches a half-replaced slot, and a refused bundle costs nothing.
The pointer flips to a slot only after the slot is complete and durable, so a
power cut at any point leaves the old slot active.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from seedcam.bundle import HEADER_FILE, SIGNATURE_FILE, BundleHeader
from seedcam.errors import BundleError
from seedcam_firmware.storage.atomic import TEMP_PREFIX, cleanup_temp, replace_dir, write_json_atomically

__all__ = ["SLOTS", "GroupState", "SlotStore"]

log = logging.getLogger(__name__)

SLOTS = ("a", "b")
STAGE = f"{TEMP_PREFIX}stage"


@dataclass(frozen=True)
class GroupState:
    """The pointer file of one group.

    Attributes:
        active: the slot in use, or None (the built-in model / factory firmware).
        previous: the rollback target, or None.
        counter: the highest security counter installed; lower ones are refused.
        trial: firmware only: a slot booted on trial, not yet confirmed.
        trial_started: the trial boot was attempted (a reboot now means: revert).
    """

    active: str | None = None
    previous: str | None = None
    counter: int = 0
    trial: str | None = None
    trial_started: bool = False


class SlotStore:
    """The slots of every group under ``root``.

    Args:
        root: the storage folder (created if missing).
        at_step: test hook called with the name of a storage step at its most fragile
            moment: ``during_activate`` just before a pointer flips (its rename),
            ``during_commit`` while a slot is being replaced (old one moved aside).
    """

    def __init__(self, root: Path, *, at_step: Callable[[str], None] | None = None) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._at_step = at_step
        for group in self.groups():
            cleanup_temp(self.root / group)  # unfinished stagings and slot replacements of a power cut

    def _hook(self, step: str) -> Callable[[], None] | None:
        at_step = self._at_step
        return None if at_step is None else lambda: at_step(step)

    def groups(self) -> list[str]:
        """Names of the groups that have a folder."""
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))

    def slot_dir(self, group: str, slot: str) -> Path:
        """The folder of one slot.

        Raises:
            ValueError: an unknown slot name or a bad group name.
        """
        if slot not in SLOTS:
            raise ValueError(f"slot must be one of {SLOTS}, got {slot!r}")
        return self._group_dir(group) / slot

    def _group_dir(self, group: str) -> Path:
        if not group or "/" in group or group.startswith("."):
            raise ValueError(f"bad slot group name {group!r}")
        return self.root / group

    # ------------------------------------------------------------------ the pointer

    def state(self, group: str) -> GroupState:
        """The group's pointer (defaults when it has none)."""
        path = self.root / group / "state.json"
        try:
            raw = json.loads(path.read_text())
            return GroupState(**{k: raw[k] for k in GroupState.__dataclass_fields__ if k in raw})
        except FileNotFoundError:
            return GroupState()
        except (OSError, ValueError, TypeError) as exc:
            log.error("slot pointer %s unreadable (%s); treating the group as empty", path, exc)
            return GroupState()

    def write_state(self, group: str, state: GroupState, *, flip: bool = False) -> None:
        """Write the pointer atomically; ``flip`` marks an activation (the test hook runs)."""
        hook = self._hook("during_activate") if flip else None
        write_json_atomically(self.root / group / "state.json", asdict(state), before_rename=hook)

    def inactive_slot(self, group: str) -> str:
        """The slot a new bundle goes into: the one that is not active (``a`` when none is).

        Raises:
            ValueError: that slot is on trial (a firmware booted but not yet confirmed).
        """
        state = self.state(group)
        slot = "b" if state.active == "a" else "a"
        if state.trial == slot:
            raise ValueError(f"slot {group}/{slot} is on trial; no slot is free until it confirms or reverts")
        return slot

    # ------------------------------------------------------------------ slots

    def header(self, group: str, slot: str) -> BundleHeader | None:
        """The header of the bundle installed in a slot, or None when the slot is empty or broken."""
        path = self.slot_dir(group, slot) / HEADER_FILE
        try:
            return BundleHeader.parse(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, BundleError) as exc:
            log.warning("slot %s/%s has an unreadable header: %s", group, slot, exc)
            return None

    def stage(self, group: str) -> Path:
        """An empty staging folder for a new bundle of ``group``; the slots and the pointer stay as they are.

        It lies beside the slots (same disk), so that :meth:`commit` moves it into a slot
        in one rename; a staging left by a power cut is removed at the next start.
        """
        staged = self._group_dir(group) / STAGE
        if staged.exists():
            shutil.rmtree(staged)
        staged.mkdir(parents=True)
        return staged

    def discard(self, staged: Path) -> None:
        """Remove a staging folder (a bundle that was refused)."""
        shutil.rmtree(staged, ignore_errors=True)

    def commit(self, group: str, slot: str, staged: Path, header: bytes, signature: bytes) -> Path:
        """Store the header next to the files in ``staged`` and make it ``slot`` (atomically).

        The pointer stops naming ``slot`` as the rollback target first (durably): a power
        cut during the replacement leaves the active slot as it was and no target that is
        half replaced. Call it only for a bundle that passed its self-test.

        Raises:
            ValueError: ``slot`` is the active slot or on trial.
        """
        state = self.state(group)
        if state.active == slot or state.trial == slot:
            raise ValueError(f"slot {group}/{slot} is active or on trial; install into the other slot")
        (staged / HEADER_FILE).write_bytes(header)
        if signature:
            (staged / SIGNATURE_FILE).write_bytes(signature)
        if state.previous == slot:
            self.write_state(group, replace(state, previous=None))
        target = self.slot_dir(group, slot)
        replace_dir(staged, target, before_swap=self._hook("during_commit"))
        return target

    def verify(self, group: str, slot: str) -> BundleHeader:
        """Check that every file of a slot is present with its sha256.

        Raises:
            BundleError: empty slot, or a missing or changed file.
        """
        header = self.header(group, slot)
        if header is None:
            raise BundleError(f"slot {group}/{slot} is empty")
        folder = self.slot_dir(group, slot)
        for entry in header.files:
            try:
                data = (folder / entry.name).read_bytes()
            except OSError as exc:
                raise BundleError(f"slot {group}/{slot}: {entry.name} unreadable: {exc}") from exc
            if hashlib.sha256(data).hexdigest() != entry.sha256:
                raise BundleError(f"slot {group}/{slot}: {entry.name} does not match its sha256")
        return header

    def activate(self, group: str, slot: str) -> GroupState:
        """Flip the pointer to ``slot``; the slot active before becomes the rollback target.

        Raises:
            BundleError: the slot is empty, or its security counter is below the group's.
        """
        header = self.header(group, slot)
        if header is None:
            raise BundleError(f"slot {group}/{slot} is empty")
        state = self.state(group)
        _check_counter(group, slot, header, state)
        previous = state.active if state.active != slot else state.previous
        new = replace(state, active=slot, previous=previous, counter=max(state.counter, header.security_counter))
        self.write_state(group, new, flip=True)
        return new

    def rollback(self, group: str) -> GroupState:
        """Make the rollback target active again (and the current slot the new target).

        Raises:
            BundleError: there is no rollback target, or its security counter is below the group's.
        """
        state = self.state(group)
        header = None if state.previous is None else self.header(group, state.previous)
        if state.previous is None or header is None:
            raise BundleError(f"{group} has no previous slot to roll back to")
        _check_counter(group, state.previous, header, state)
        new = replace(state, active=state.previous, previous=state.active)
        self.write_state(group, new, flip=True)
        return new

    def delete(self, group: str, slot: str) -> None:
        """Empty a slot that is not active.

        Raises:
            ValueError: the slot is active or on trial.
        """
        state = self.state(group)
        if state.active == slot or state.trial == slot:
            raise ValueError(f"slot {group}/{slot} is active or on trial; activate or roll back to the other first")
        if state.previous == slot:
            self.write_state(group, replace(state, previous=None))
        folder = self.slot_dir(group, slot)
        if folder.exists():
            staged = folder.parent / f"{TEMP_PREFIX}del-{slot}"
            folder.rename(staged)
            shutil.rmtree(staged, ignore_errors=True)


def _check_counter(group: str, slot: str, header: BundleHeader, state: GroupState) -> None:
    """Refuse to make a slot active whose security counter is below the group's floor."""
    if header.security_counter < state.counter:
        raise BundleError(
            f"counter: slot {group}/{slot} has security counter {header.security_counter}, "
            f"below the device's {state.counter} for {group}"
        )

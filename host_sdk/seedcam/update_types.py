"""The typed values of updates: what a sensor installed, and its A/B slots.

:mod:`seedcam.updates` hands these out; :mod:`seedcam.protocol.codec` maps them
to and from the wire.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["InstallResult", "SlotInfo", "SlotGroup"]


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

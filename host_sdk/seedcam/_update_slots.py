"""The device's A/B slots: list, activate, roll back, delete, and find an install whose answer was lost."""

from __future__ import annotations

from seedcam._proto import seedcam_pb2 as pb
from seedcam._update_channel import UpdateChannel
from seedcam.bundle import BundleHeader
from seedcam.errors import LinkBroken, SensorTimeout
from seedcam.protocol import codec
from seedcam.sensor import Sensor
from seedcam.update_types import InstallResult, SlotGroup

__all__ = ["activate_on", "activate_slot", "delete_slot", "installed_after_lost_answer", "list_slots", "rollback"]


def _simple(sensor: Sensor, request: pb.UpdateRequest, timeout: float) -> pb.UpdateResponse:
    with UpdateChannel(sensor) as channel:
        return channel.call(request, timeout)


def list_slots(sensor: Sensor, timeout: float = 10.0) -> tuple[SlotGroup, ...]:
    """The A/B slots on the device, per task (and for the firmware).

    Raises:
        UpdateRefused: updates are disabled on the device (``reason == "disabled"``).
        SensorTimeout, LinkBroken: no answer.
    """
    return codec.slot_groups_from_pb(_simple(sensor, pb.UpdateRequest(list_slots=pb.ListSlotsRequest()), timeout).slots)


def activate_slot(sensor: Sensor, name: str, slot: str, timeout: float = 120.0) -> InstallResult:
    """Self-test the bundle in ``name``'s ``slot`` ("a"/"b") and make it active.

    Raises:
        UpdateRefused: empty slot, failed self-test, unknown group.
    """
    with UpdateChannel(sensor) as channel:
        return activate_on(channel, name, slot, timeout)


def activate_on(channel: UpdateChannel, name: str, slot: str, timeout: float) -> InstallResult:
    """:func:`activate_slot` over an open update channel.

    Raises:
        UpdateRefused: empty slot, failed self-test, unknown group, a slot on trial.
        SensorTimeout, LinkBroken: no answer.
    """
    request = pb.UpdateRequest(activate=pb.SlotRequest(name=name, slot=slot))
    return codec.install_result_from_pb(channel.call(request, timeout).installed)


def rollback(sensor: Sensor, name: str, timeout: float = 120.0) -> InstallResult:
    """Make ``name``'s previous slot active again (the current one becomes the rollback target).

    Raises:
        UpdateRefused: ``no_previous`` when there is nothing to roll back to.
    """
    request = pb.UpdateRequest(rollback=pb.SlotRequest(name=name))
    return codec.install_result_from_pb(_simple(sensor, request, timeout).installed)


def delete_slot(sensor: Sensor, name: str, slot: str, timeout: float = 30.0) -> tuple[SlotGroup, ...]:
    """Empty an inactive slot; returns the slots afterwards.

    Raises:
        UpdateRefused: ``active`` when the slot is the active one.
    """
    request = pb.UpdateRequest(delete=pb.SlotRequest(name=name, slot=slot))
    return codec.slot_groups_from_pb(_simple(sensor, request, timeout).slots)


def installed_after_lost_answer(
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

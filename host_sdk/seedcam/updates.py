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
intact, and only the rest is sent. A bundle the device already holds in a slot
(the same payload sha256) is not sent at all: the push returns with
:attr:`PushResult.already_installed` and no slot changed (with ``activate``, a
slot that is not the active one is activated in place). Results keep streaming
during a push.

Speed: the chunk size and the bytes in flight adapt to the link: both start
small and follow the measured acknowledged rate and the smallest round trip,
so a 115200-baud UART is kept busy with a few kilobytes in flight while a USB
or pty link moves tens of kilobytes per chunk.

Everything here works through the sensor's public :class:`~seedcam.session.Session`
(:attr:`seedcam.Sensor.session`): the update protocol is frames on the TRANSFER
channel. The pieces: :mod:`seedcam._update_channel` (requests and acknowledgements),
:mod:`seedcam._update_push` (the push), :mod:`seedcam._update_slots` (the slots);
this module adds firmware flashing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from seedcam._update_channel import UpdateChannel
from seedcam._update_push import PushProgress, PushResult, push_bundle
from seedcam._update_slots import activate_slot, delete_slot, list_slots, rollback
from seedcam.bundle import read_bundle
from seedcam.errors import LinkBroken, SensorTimeout, UpdateRefused
from seedcam.sensor import Sensor
from seedcam.update_types import InstallResult, SlotGroup, SlotInfo

__all__ = [
    "FlashResult",
    "InstallResult",
    "PushProgress",
    "PushResult",
    "SlotGroup",
    "SlotInfo",
    "UpdateRefused",
    "activate_slot",
    "delete_slot",
    "flash",
    "list_slots",
    "push_bundle",
    "rollback",
]

_Channel = UpdateChannel  # the raw update channel, for tests that speak the update protocol directly


@dataclass(frozen=True)
class FlashResult:
    """The outcome of :func:`flash`: the new firmware runs and confirmed its health."""

    push: PushResult
    version: str
    slot: str


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
        sensor,
        path,
        progress=progress,
        timeout=timeout,
        install_timeout=install_timeout,
        resume_timeout=resume_timeout,
        chunk_size=chunk_size,
        window=window,
    )
    slot, version = result.install.slot, bundle_header.version
    session = sensor.session
    deadline = time.monotonic() + confirm_timeout
    while time.monotonic() < deadline:
        try:
            groups = list_slots(sensor, timeout=5.0)
        except (LinkBroken, SensorTimeout):  # the sensor is restarting
            session.wait_link(max(0.0, deadline - time.monotonic()))
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
        session.wait_closed(0.2)  # a short pause between polls; ends early when the sensor closes
    raise SensorTimeout(f"firmware {version} neither confirmed nor was reverted within {confirm_timeout} s")

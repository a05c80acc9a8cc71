"""Telling a device reboot from a link glitch, and the same device from another one.

The boot id tells a reboot (a new id) from a glitch (the same one); the serial
number and board, remembered from the first device seen, tell the same device from
another board that took over the port (:class:`~seedcam.errors.DeviceMismatch`).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from seedcam.errors import DeviceMismatch
from seedcam.types import DeviceInfo, Health

__all__ = ["BootWatch", "ReconnectEvent"]


@dataclass(frozen=True)
class ReconnectEvent:
    """The link came back after a loss.

    Attributes:
        device_rebooted: True when the boot id changed (the firmware restarted),
            False when the same firmware instance is back (a cable or port glitch).
        old_boot_id: boot id before the loss.
        new_boot_id: boot id after it.
        downtime_s: time without a link.
    """

    device_rebooted: bool
    old_boot_id: str
    new_boot_id: str
    downtime_s: float


def _differ(expected: str, found: str) -> bool:
    return bool(expected) and bool(found) and expected != found  # "": the device does not say


class BootWatch:
    """The latest device info, and what changed since the link (or the device) went away.

    Thread-safe: the reader thread and calls' threads report to it.

    Args:
        url: the port, named in a :class:`~seedcam.errors.DeviceMismatch`.
    """

    def __init__(self, url: str = "") -> None:
        self._lock = threading.Lock()
        self._url = url
        self.first: DeviceInfo | None = None  #: the first device seen: the one this session belongs to
        self.device_info: DeviceInfo | None = None  #: the latest, from a handshake or a Hello
        self._lost_at: float | None = None
        self._boot_id_before_loss = ""

    def link_lost(self) -> None:
        """The transport broke: remember when, and which boot was there."""
        with self._lock:
            self._lost_at = time.monotonic()
            self._boot_id_before_loss = self.device_info.boot_id if self.device_info else ""

    def health_shows_reboot(self, health: Health) -> bool:
        """True (once) when a health report names another boot than the known one.

        The firmware restarted behind a port that never went away (a real UART);
        the caller should ask the device who it is.
        """
        with self._lock:
            known = self.device_info
            if known is None or not health.boot_id or health.boot_id == known.boot_id or self._lost_at is not None:
                return False
            self._lost_at = time.monotonic()
            self._boot_id_before_loss = known.boot_id
            return True

    def observe(self, info: DeviceInfo) -> ReconnectEvent | None:
        """Record the device's info; returns the reconnect it completes, if any.

        Raises:
            DeviceMismatch: ``info`` names another serial number or board than the first device seen
                (nothing is recorded then).
        """
        with self._lock:
            first = self.first
            if first is None:
                self.first = info
            elif _differ(first.serial_number, info.serial_number) or _differ(first.board, info.board):
                raise DeviceMismatch(self._url, first.serial_number, first.board, info.serial_number, info.board)
            previous = self.device_info
            self.device_info = info
            lost_at, self._lost_at = self._lost_at, None
            old_boot = self._boot_id_before_loss or (previous.boot_id if previous else "")
            self._boot_id_before_loss = ""  # consumed: a later reboot must not report this stale id
        if lost_at is None and (previous is None or previous.boot_id == info.boot_id):
            return None
        return ReconnectEvent(
            device_rebooted=bool(old_boot) and old_boot != info.boot_id,
            old_boot_id=old_boot,
            new_boot_id=info.boot_id,
            downtime_s=time.monotonic() - lost_at if lost_at is not None else 0.0,
        )

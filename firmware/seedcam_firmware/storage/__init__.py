"""Crash-safe device storage: atomic writes, A/B slots with an atomic active pointer, the transfer journal."""

from __future__ import annotations

from seedcam_firmware.storage.atomic import fsync_dir, replace_dir, write_atomically, write_json_atomically
from seedcam_firmware.storage.journal import TransferJournal
from seedcam_firmware.storage.slots import SLOTS, GroupState, SlotStore

__all__ = [
    "SLOTS",
    "GroupState",
    "SlotStore",
    "TransferJournal",
    "fsync_dir",
    "replace_dir",
    "write_atomically",
    "write_json_atomically",
]

"""``seedcam-firmware supervise``: the boot loader of the emulated board — A/B firmware slots with a trial boot.

The supervisor runs the firmware (``seedcam-firmware run ...``) as a child
process, from the active firmware slot (a wheel unpacked into
``<updates.dir>/slots/firmware/<a|b>``, put first on ``PYTHONPATH``) or, with
no slot active, from the installed package. When an update has marked a slot
for trial, the next start boots it with ``SEEDCAM_FW_TRIAL=<slot>``; the new
firmware must confirm its health (it flips the firmware pointer itself once it
processes frames) within ``updates.confirm_timeout_s``. If it does not — it
hangs, crashes or cannot start — the supervisor kills it and boots the
previous firmware again. The trial is recorded (``trial_started``) before the
trial boot, so a power cut during the trial also ends in the old firmware.

Before a slot boots, its unpacked files are checked against the RECORD hashes
of its wheel (itself checked against the bundle header): a slot whose tree is
missing or damaged never boots — Python would otherwise quietly import the
installed package instead. A trial slot that fails the check is reverted; an
active one falls back to the previous slot, then to the installed package.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import zipfile
from dataclasses import replace
from pathlib import Path

from seedcam.errors import BundleError
from seedcam_firmware.storage import SlotStore
from seedcam_firmware.transfer import FIRMWARE, SUPERVISED_ENV, TRIAL_ENV

__all__ = ["EXIT_RESTART", "SUPERVISED_ENV", "check_firmware_slot", "next_boot", "supervise"]

log = logging.getLogger(__name__)

EXIT_RESTART = 3  #: the firmware's exit code for "restart me" (into a new slot on trial)
_POLL_S = 0.2


def supervise(run_args: list[str], updates_dir: Path, confirm_timeout_s: float) -> int:
    """Run the firmware until it exits for good; returns its exit code.

    Args:
        run_args: the arguments of ``seedcam-firmware run``.
        updates_dir: ``updates.dir`` (where the firmware slots are).
        confirm_timeout_s: how long a firmware on trial has to confirm its health.
    """
    store = SlotStore(updates_dir / "slots")
    stopping = threading.Event()
    child: subprocess.Popen[bytes] | None = None

    def on_signal(signum: int, _frame: object) -> None:
        stopping.set()
        if child is not None and child.poll() is None:
            child.send_signal(signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    while not stopping.is_set():
        slot, on_trial = next_boot(store)
        trial = slot if on_trial else None
        env = {k: v for k, v in os.environ.items() if k != TRIAL_ENV}
        env[SUPERVISED_ENV] = "1"
        if trial is not None:
            env[TRIAL_ENV] = trial
        if slot is not None:
            paths = [str(store.slot_dir(FIRMWARE, slot)), env.get("PYTHONPATH")]
            env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        log.info(
            "starting firmware from %s%s",
            f"slot {slot}" if slot else "the installed package",
            " on trial" if trial else "",
        )
        child = subprocess.Popen([sys.executable, "-m", "seedcam_firmware.cli", "run", *run_args], env=env)
        if trial is not None and not _await_confirmation(store, trial, child, confirm_timeout_s, stopping):
            if child.poll() is None:
                child.kill()
            child.wait()
            now = store.state(FIRMWARE)
            store.write_state(FIRMWARE, replace(now, trial=None, trial_started=False))
            log.error("firmware slot %s did not confirm its health in %.0f s; reverted", trial, confirm_timeout_s)
            continue
        code = child.wait()
        if code != EXIT_RESTART or stopping.is_set():
            return code
    return 0


def next_boot(store: SlotStore) -> tuple[str | None, bool]:
    """Choose the firmware to boot: ``(slot or None for the installed package, on trial)``.

    A trial that already started (its boot never confirmed: a power cut) or whose
    slot fails :func:`check_firmware_slot` is reverted; otherwise its start is
    recorded before it boots. An active slot that fails the check falls back to
    the previous slot, then to the installed package.
    """
    state = store.state(FIRMWARE)
    if state.trial is not None:
        problem = (
            "it never confirmed its trial boot" if state.trial_started else check_firmware_slot(store, state.trial)
        )
        if problem is None:
            store.write_state(FIRMWARE, replace(state, trial_started=True))
            return state.trial, True
        log.error("firmware slot %s: %s; reverting", state.trial, problem)
        store.write_state(FIRMWARE, replace(state, trial=None, trial_started=False))
        state = store.state(FIRMWARE)
    if state.active is None:
        return None, False
    for slot in (state.active, state.previous):
        if slot is None:
            continue
        problem = check_firmware_slot(store, slot)
        if problem is None:
            if slot != state.active:
                log.error("falling back to the previous firmware slot %s", slot)
            return slot, False
        log.error("firmware slot %s cannot boot: %s", slot, problem)
    log.error("no firmware slot can boot; starting the installed package")
    return None, False


def check_firmware_slot(store: SlotStore, slot: str) -> str | None:
    """Why a firmware slot cannot boot, or None when it can.

    The slot's wheel must match its bundle header, and every file the wheel's
    ``RECORD`` lists (read from the verified wheel, not from the unpacked copy)
    must be unpacked in the slot with that sha256.
    """
    try:
        header = store.verify(FIRMWARE, slot)
    except BundleError as exc:
        return str(exc)
    folder = store.slot_dir(FIRMWARE, slot)
    wheel = header.file("wheel")
    if wheel is None:
        return f"slot {slot} holds no wheel"
    try:
        with zipfile.ZipFile(folder / wheel.name) as zf:
            (record_name,) = [n for n in zf.namelist() if n.endswith(".dist-info/RECORD")]
            rows = list(csv.reader(io.StringIO(zf.read(record_name).decode("utf-8"))))
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        return f"slot {slot}: the wheel's RECORD is unreadable: {exc}"
    root = folder.resolve()
    listed = 0
    for row in rows:
        if len(row) < 2 or not row[1]:
            continue  # the RECORD itself (and blank lines) carry no hash
        algorithm, _, digest = row[1].partition("=")
        path = (folder / row[0]).resolve()
        if algorithm != "sha256" or not path.is_relative_to(root):
            return f"slot {slot}: RECORD entry {row[0]!r} is not a sha256 of a file in the slot"
        try:
            data = path.read_bytes()
        except OSError as exc:
            return f"slot {slot}: {row[0]} is missing: {exc.strerror or exc}"
        if base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode() != digest:
            return f"slot {slot}: {row[0]} does not match the wheel's RECORD"
        listed += 1
    if not (folder / "seedcam_firmware" / "__init__.py").is_file() or not listed:
        return f"slot {slot}: no seedcam_firmware package unpacked"
    return None


def _await_confirmation(
    store: SlotStore, slot: str, child: subprocess.Popen[bytes], timeout: float, stopping: threading.Event
) -> bool:
    """Wait until the trial firmware confirms (the pointer names it active); False when it exits or times out.

    True too when the supervisor is being stopped: the caller then waits for the child.
    """
    deadline = time.monotonic() + timeout
    while not stopping.is_set():
        state = store.state(FIRMWARE)
        if state.trial is None and state.active == slot:
            return True
        if child.poll() is not None or time.monotonic() >= deadline:
            return False
        stopping.wait(_POLL_S)  # the pointer file is the only channel from the child: look again shortly
    return True

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
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

from seedcam_firmware.storage import SlotStore
from seedcam_firmware.transfer import FIRMWARE, TRIAL_ENV

__all__ = ["EXIT_RESTART", "SUPERVISED_ENV", "supervise"]

log = logging.getLogger(__name__)

EXIT_RESTART = 3  #: the firmware's exit code for "restart me" (into a new slot on trial)
SUPERVISED_ENV = "SEEDCAM_FW_SUPERVISED"
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
        state = store.state(FIRMWARE)
        env = {k: v for k, v in os.environ.items() if k != TRIAL_ENV}
        env[SUPERVISED_ENV] = "1"
        trial = state.trial
        if trial is not None:
            if state.trial_started:  # the trial boot happened and never confirmed (a power cut): revert
                log.error("firmware slot %s did not confirm its trial boot; reverting", trial)
                store.write_state(FIRMWARE, replace(state, trial=None, trial_started=False))
                continue
            store.write_state(FIRMWARE, replace(state, trial_started=True))
            env[TRIAL_ENV] = trial
        slot = trial or state.active
        if slot is not None:
            paths = [str(store.slot_dir(FIRMWARE, slot)), env.get("PYTHONPATH")]
            env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        log.info("starting firmware from %s%s", f"slot {slot}" if slot else "the installed package",
                 " on trial" if trial else "")
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

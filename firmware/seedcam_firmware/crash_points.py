"""Power cuts on demand: ``SEEDCAM_FW_CRASH_AT=<step>`` kills the firmware (SIGKILL) at a named storage step.

The tests use it to cut the power at each step of an update deterministically:
nothing runs after the kill (no ``finally``, no clean-up), as after a real power
cut. The steps of a push, in order:

========================  ==========================================================
``after_begin``           the journal of a new transfer is written
``mid_chunks``            half the payload is stored
``after_last_chunk``      the whole payload is stored, no end yet
``during_staging``        the first file is written into the staging folder
``during_selftest``       the bundle is unpacked in staging, not yet self-tested
``after_selftest``        it passed; no slot has changed yet
``after_refusal``         it was refused; the staging folder is still there
``during_commit``         the old inactive slot is moved aside, the new one not yet in
``during_activate``       just before a pointer flips (also a slot request, a trial)
``before_end_reply``      installed, but the answer dies with the firmware
``firmware_trial``        a firmware on trial, just before it confirms its health
========================  ==========================================================
"""

from __future__ import annotations

import logging
import os
import signal

__all__ = ["CRASH_ENV", "STEPS", "crash_point"]

log = logging.getLogger(__name__)

CRASH_ENV = "SEEDCAM_FW_CRASH_AT"
STEPS = (
    "after_begin",
    "mid_chunks",
    "after_last_chunk",
    "during_staging",
    "during_selftest",
    "after_selftest",
    "after_refusal",
    "during_commit",
    "during_activate",
    "before_end_reply",
    "firmware_trial",
)


def crash_point(step: str) -> None:
    """kill -9 this process when ``$SEEDCAM_FW_CRASH_AT`` names ``step`` (one of :data:`STEPS`)."""
    if os.environ.get(CRASH_ENV) == step:
        log.warning("crash point %s: killing the firmware", step)
        os.kill(os.getpid(), signal.SIGKILL)

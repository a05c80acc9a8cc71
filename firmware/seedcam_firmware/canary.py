"""The in-service canary: a freshly activated model whose outputs turn NaN or infinite is rolled back.

A bundle's self-test runs the model on its golden input only; a model can pass
it and still give NaN or infinite numbers on real frames. The task runner drops
such findings and counts them (:attr:`TaskRunner.invalid_outputs`); it calls
:meth:`Canary.on_invalid`, and when the task's model was activated over the
link less than ``updates.canary_window_s`` ago, the canary makes the task's
rollback target (the slot's ``previous``) active again, self-testing and
loading it as an ``activate`` request does.

One rollback is tried per activation: a model that was rolled back to, or a
model activated longer ago than the window, keeps running with its invalid
findings dropped (Health shows them). The window counts from the activation in
this boot; a model installed before a restart is not the canary's any more.
"""

from __future__ import annotations

import logging
import threading
import time

from seedcam_firmware.transfer import UpdateService

__all__ = ["Canary"]

log = logging.getLogger(__name__)

_JOIN_S = 30.0  # a rollback self-tests the old model: seconds on a busy 2-core board


class Canary:
    """Watches the models activated over the link during their first ``window_s`` seconds.

    Args:
        window_s: how long after its activation a model is rolled back on invalid outputs; 0 = never.
        updates: the update service whose slots hold the rollback targets (None or disabled: never).
    """

    def __init__(self, window_s: float, updates: UpdateService | None) -> None:
        self._window_s = window_s
        self._updates = updates
        self._lock = threading.Lock()
        self._activated: dict[str, float] = {}  # task -> time.monotonic() of its activation
        self._rolling_back: set[str] = set()
        self._threads: list[threading.Thread] = []
        self._rollbacks = 0

    @property
    def rollbacks(self) -> int:
        """Models rolled back since start."""
        return self._rollbacks

    def activated(self, task: str) -> None:
        """A new model for ``task`` runs from now on (the canary's own rollbacks do not count)."""
        with self._lock:
            if task not in self._rolling_back:
                self._activated[task] = time.monotonic()

    def on_invalid(self, task: str) -> None:
        """``task``'s outputs on a frame were NaN or infinite: roll it back when its model is new."""
        with self._lock:
            since = self._activated.get(task)
            if since is None or task in self._rolling_back or self._window_s <= 0:
                return
            if time.monotonic() - since > self._window_s:
                del self._activated[task]
                return
            self._rolling_back.add(task)
            thread = threading.Thread(target=self._roll_back, args=(task,), name=f"seedcam-canary-{task}", daemon=True)
            self._threads.append(thread)
        thread.start()  # off the inference thread: the rollback self-tests and loads a model

    def _roll_back(self, task: str) -> None:
        try:
            updates = self._updates
            if updates is None or not updates.enabled:
                log.error(
                    "canary: the %s model gives invalid outputs; updates are disabled, nothing to roll back", task
                )
                return
            state = updates.store.state(task)
            if state.previous is None:
                log.error("canary: the %s model gives invalid outputs and has no rollback target", task)
                return
            log.error(
                "canary: the %s model in slot %s gives NaN or infinite outputs; rolling back to slot %s",
                task,
                state.active,
                state.previous,
            )
            report = updates.installer.activate_slot(task, state.previous)
            with self._lock:
                self._rollbacks += 1
            log.warning("canary: %s rolled back to %s (slot %s)", task, report.bundle_id, report.slot)
        except Exception:  # a failed rollback must not stop the sensor; the invalid findings stay dropped
            log.exception("canary: rolling back %s failed", task)
        finally:
            with self._lock:
                self._activated.pop(task, None)  # one try per activation
                self._rolling_back.discard(task)

    def close(self) -> None:
        """Wait for a rollback in progress (bounded)."""
        for thread in self._threads:
            thread.join(timeout=_JOIN_S)

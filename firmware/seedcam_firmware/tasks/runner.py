"""The runner that turns a frame into one Result: the enabled tasks in dependency order.

The runner wraps each frame in one :class:`~seedcam_firmware.inference.prepared.PreparedFrame`
and hands it to every task, so the model inputs are made once per frame.

It merges what the tasks found into the frame's Result field by field: every
finding of :class:`~seedcam_firmware.tasks.base.TaskOutput` is the Result field
of the same name, a tuple field concatenated over the tasks in run order, a
single value (``lane``) taken from the last task that reported one.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from seedcam.types import ModelInfo, Result
from seedcam_firmware.camera.base import Frame
from seedcam_firmware.errors import ConfigError, TaskUnavailable
from seedcam_firmware.inference.prepared import PreparedFrame
from seedcam_firmware.tasks.base import FINDINGS, Task, TaskOutput, elapsed_us

if TYPE_CHECKING:
    from seedcam_firmware.config import FirmwareConfig

__all__ = ["InvalidOutputHook", "TaskRunner", "all_finite", "merge_findings"]

#: called with a task's name when its output on a frame was not finite (NaN or infinite)
InvalidOutputHook = Callable[[str], None]

log = logging.getLogger(__name__)


def all_finite(value: object) -> bool:
    """True when every float in ``value`` (a finding: dataclasses, tuples, numbers) is finite."""
    if isinstance(value, (float, np.floating)):
        return math.isfinite(value)
    if isinstance(value, (tuple, list)):
        return all(all_finite(item) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return all(all_finite(getattr(value, f.name)) for f in dataclasses.fields(value))
    return True


def merge_findings(outputs: Iterable[TaskOutput]) -> dict[str, Any]:
    """The findings of ``outputs`` (in run order) as Result fields.

    A tuple finding is concatenated over the outputs; any other is the last one
    that is not None. Timings and model ids are the runner's to merge.
    """
    merged: dict[str, Any] = {}
    for output in outputs:
        for name in FINDINGS:
            value = getattr(output, name)
            if isinstance(value, tuple):
                merged[name] = merged.get(name, ()) + value
            elif value is not None:
                merged[name] = value
    return merged


class TaskRunner:
    """Holds the loaded tasks and which of them are enabled (switchable at run time).

    Enabled tasks run in the order chosen, except that a task runs after the
    enabled tasks it ``requires``. A task that raises on a frame loses its part
    of that frame's Result; the others still report (the first failure of a
    run of failures is logged).

    The in-service canary: a task whose findings on a frame hold a NaN or an
    infinite number loses its part of that frame's Result too (the findings are
    invalid, and a task requiring it does not see them); it is counted per task
    (:attr:`invalid_outputs`) and ``on_invalid`` is called with its name.

    Args:
        tasks: the loaded tasks.
        enabled: names to enable (each must be loaded).
        unavailable: task name -> why its model did not load; asking for one of
            them raises :class:`TaskUnavailable` with that reason.
        on_invalid: called (on the inference thread) with a task's name for each
            frame on which its outputs were not finite.

    Raises:
        ConfigError: see :meth:`select`.
    """

    def __init__(
        self,
        tasks: Iterable[Task],
        enabled: Iterable[str],
        *,
        unavailable: Mapping[str, str] | None = None,
        on_invalid: InvalidOutputHook | None = None,
    ) -> None:
        self._tasks = {task.name: task for task in tasks}
        self._unavailable = dict(unavailable or {})
        self._on_invalid = on_invalid
        self._invalid: dict[str, int] = {}
        self._invalid_run: set[str] = set()
        self._lock = threading.Lock()
        self._enabled: tuple[str, ...] = ()
        self._order: tuple[Task, ...] = ()
        self._failing: set[str] = set()
        self.select(enabled)

    @property
    def available(self) -> tuple[str, ...]:
        """The loaded tasks (those that can be enabled)."""
        return tuple(self._tasks)

    @property
    def tasks(self) -> Mapping[str, Task]:
        """The loaded tasks by name (read-only)."""
        return MappingProxyType(self._tasks)

    @property
    def unavailable(self) -> dict[str, str]:
        """Tasks whose model did not load -> the reason."""
        return dict(self._unavailable)

    @property
    def enabled(self) -> tuple[str, ...]:
        return self._enabled

    @property
    def invalid_outputs(self) -> dict[str, int]:
        """Task name -> frames since start whose outputs were NaN or infinite (their findings dropped)."""
        with self._lock:
            return dict(self._invalid)

    @property
    def models(self) -> tuple[ModelInfo, ...]:
        """The models of the loaded tasks, ``active`` when their task is enabled."""
        return tuple(replace(t.model, active=t.name in self._enabled) for t in self._tasks.values())

    def select(self, names: Iterable[str]) -> tuple[str, ...]:
        """Enable exactly ``names`` (in the order given, duplicates removed).

        Raises:
            TaskUnavailable: a name is a task whose model did not load (the message says why).
            ConfigError: a name is not a known task.
        """
        chosen = tuple(dict.fromkeys(names))
        broken = [n for n in chosen if n in self._unavailable]
        if broken:
            raise TaskUnavailable(
                "; ".join(f"task {n} is unavailable: its model did not load: {self._unavailable[n]}" for n in broken)
            )
        unknown = [n for n in chosen if n not in self._tasks]
        if unknown:
            raise ConfigError(
                f"unknown or unloaded task(s) {', '.join(unknown)}; available: {', '.join(self._tasks) or 'none'}"
            )
        order = self._run_order(chosen)
        with self._lock:
            self._enabled = chosen
            self._order = order
        return chosen

    def _run_order(self, chosen: tuple[str, ...]) -> tuple[Task, ...]:
        """``chosen`` with every task placed after the chosen tasks it requires."""
        order: list[str] = []
        visiting: set[str] = set()

        def visit(name: str) -> None:
            if name in order or name in visiting:
                return  # done, or a cycle: keep the order given
            visiting.add(name)
            for needed in self._tasks[name].requires:
                if needed in chosen:
                    visit(needed)
            visiting.discard(name)
            order.append(name)

        for name in chosen:
            visit(name)
        return tuple(self._tasks[name] for name in order)

    def replace(self, task: Task) -> Task | None:
        """Swap in a loaded task (a new model for it) from the next frame on; returns the one it replaces.

        The replaced task is not closed: a frame in flight may still be using it.
        """
        with self._lock:
            old = self._tasks.get(task.name)
            self._tasks[task.name] = task
            self._unavailable.pop(task.name, None)
            self._order = self._run_order(self._enabled)
        return old

    def configure(self, config: FirmwareConfig, *, previous: FirmwareConfig | None = None) -> None:
        """Hand the live keys of ``config`` to every loaded task.

        Args:
            config: the new configuration.
            previous: the configuration in force; when a task refuses ``config``,
                the tasks already changed are given this one back.

        Raises:
            ConfigError: a task cannot use a value (the message names the key).
        """
        done: list[Callable[[FirmwareConfig], None]] = []
        for task in self._tasks.values():
            try:
                task.configure(config)
            except ConfigError:
                if previous is not None:
                    for undo in done:
                        undo(previous)
                raise
            done.append(task.configure)

    def process(self, frame: Frame) -> Result:
        """Run every enabled task on ``frame``; an empty Result when none is enabled.

        The tasks share one :class:`~seedcam_firmware.inference.prepared.PreparedFrame`
        of the frame: a model input is made by the first task that needs it (its
        ``<task>:preprocess`` timing pays for it) and reused by the others. The
        Result's timings start with the stages the camera timed (``camera:render``),
        which came before the capture timestamp and are not in ``capture_to_result``.
        """
        order = self._order
        timings: dict[str, int] = dict(frame.timings_us)
        outputs: dict[str, TaskOutput] = {}
        model_ids: dict[str, None] = {}
        prepared = PreparedFrame(frame.image)
        for task in order:
            start = time.perf_counter()
            output = self._run_one(task, frame, prepared, outputs)
            timings[f"task:{task.name}"] = elapsed_us(start)
            if output is None:
                continue
            outputs[task.name] = output
            model_ids[task.model.id] = None
            model_ids.update(dict.fromkeys(output.model_ids))
            timings.update(output.timings_us)
        height, width = frame.image.shape[:2]
        timings["capture_to_result"] = max(0, time.monotonic_ns() // 1000 - frame.timestamp_us)
        return Result(
            frame_id=frame.frame_id,
            capture_timestamp_us=frame.timestamp_us,
            timings_us=timings,
            model_ids=tuple(model_ids),
            frame_width=width,
            frame_height=height,
            **merge_findings(outputs.values()),
        )

    def _run_one(
        self, task: Task, frame: Frame, prepared: PreparedFrame, outputs: Mapping[str, TaskOutput]
    ) -> TaskOutput | None:
        """One task on one frame; None (logged once per run of failures) when it raises."""
        prior = MappingProxyType({name: outputs[name] for name in task.requires if name in outputs})
        try:
            output = task.run_prepared(prepared, prior)
        except Exception:  # one task's failure must not cost the other tasks their results
            if task.name not in self._failing:
                self._failing.add(task.name)
                log.exception(
                    "task %s failed on frame %d (not logged again until it recovers)", task.name, frame.frame_id
                )
            return None
        if task.name in self._failing:
            self._failing.discard(task.name)
            log.warning("task %s recovered on frame %d", task.name, frame.frame_id)
        if not all(all_finite(getattr(output, name)) for name in FINDINGS):
            self._count_invalid(task, frame)
            return None
        if task.name in self._invalid_run:
            self._invalid_run.discard(task.name)
            log.warning("task %s: outputs finite again on frame %d", task.name, frame.frame_id)
        return output

    def _count_invalid(self, task: Task, frame: Frame) -> None:
        with self._lock:
            self._invalid[task.name] = self._invalid.get(task.name, 0) + 1
        if task.name not in self._invalid_run:
            self._invalid_run.add(task.name)
            log.error(
                "task %s (model %s): NaN or infinite outputs on frame %d; its findings are dropped "
                "(not logged again until they are finite)",
                task.name,
                task.model.id,
                frame.frame_id,
            )
        if self._on_invalid is not None:
            self._on_invalid(task.name)

    def close(self) -> None:
        for task in self._tasks.values():
            task.close()

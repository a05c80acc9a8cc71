"""Loading the catalog's tasks from the config.

Loading never raises for a task whose model does not load: the task is
returned as unavailable, with the reason, and the caller (the daemon) decides
what that means for the tasks the config enables.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import cast

from seedcam.errors import SensorError
from seedcam_firmware.config import FirmwareConfig
from seedcam_firmware.task_catalog import TASKS, resolve
from seedcam_firmware.tasks.base import Task

__all__ = ["LoadedTasks", "TaskFactory", "load_tasks", "task_factory"]

log = logging.getLogger(__name__)

#: Builds a task from the config and the tasks loaded before it (a catalog line's ``loader``).
TaskFactory = Callable[[FirmwareConfig, Mapping[str, Task]], Task]


@dataclass(frozen=True)
class LoadedTasks:
    """The outcome of :func:`load_tasks`.

    Attributes:
        tasks: the tasks that loaded, in catalog order.
        unavailable: task name -> why it did not load.
    """

    tasks: tuple[Task, ...] = ()
    unavailable: dict[str, str] = field(default_factory=dict)


def task_factory(name: str) -> TaskFactory:
    """The loader of the catalog's task ``name``, imported.

    Raises:
        KeyError: the catalog has no such task.
        ImportError: its loader's module does not import or lacks the function.
        TypeError: the loader is not callable.
    """
    factory = resolve(TASKS[name].loader)
    if not callable(factory):
        raise TypeError(f"task {name}: loader {TASKS[name].loader} is not callable")
    return cast(TaskFactory, factory)


def load_tasks(config: FirmwareConfig) -> LoadedTasks:
    """Load every task of the catalog; those that fail are returned as unavailable, never raised.

    Tasks load in catalog order, each handed those loaded before it. A task that
    refuses one of its config values (an ``ocr.pattern`` that is not a regular
    expression) is unavailable too, the key named in its reason. A failure of a
    task the config does not enable is logged at INFO (a bundle not installed for
    a task nobody asked for is no news); the failures of enabled tasks are left
    to the caller to report.
    """
    loaded: dict[str, Task] = {}
    unavailable: dict[str, str] = {}
    for name in TASKS:
        try:
            loaded[name] = task_factory(name)(config, dict(loaded))
            continue
        except SensorError as exc:  # ModelError, BundleError, ConfigError: the message says what is wrong
            unavailable[name] = str(exc)
        except Exception as exc:  # a decoder choking on a malformed manifest must not stop the sensor either
            unavailable[name] = f"{type(exc).__name__}: {exc}"
            log.warning("task %s failed to load", name, exc_info=True)
        if name not in config.tasks.enabled:
            log.info("task %s not available: %s", name, unavailable[name])
    return LoadedTasks(tuple(loaded.values()), unavailable)

"""Which tasks exist, and loading them from the config.

Loading never raises for a task whose model does not load: the task is
returned as unavailable, with the reason, and the caller (the daemon) decides
what that means for the tasks the config enables.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from seedcam.errors import SensorError
from seedcam_firmware.config import FirmwareConfig
from seedcam_firmware.config_schema import KNOWN_TASKS
from seedcam_firmware.tasks.base import Task

__all__ = ["TASK_FACTORIES", "LoadedTasks", "load_tasks"]

log = logging.getLogger(__name__)

#: task name → "module:function(config, loaded) -> Task", imported lazily; loaded in this
#: order, so a task finds the tasks it builds on (ocr: detect) in ``loaded``
TASK_FACTORIES: dict[str, str] = {
    "lane": "seedcam_firmware.tasks.lane:load_lane_task",
    "detect": "seedcam_firmware.tasks.detect:load_detect_task",
    "ocr": "seedcam_firmware.tasks.ocr:load_ocr_task",
    "classify": "seedcam_firmware.tasks.classify:load_classify_task",
}

TaskFactory = Callable[[FirmwareConfig, Mapping[str, Task]], Task]


@dataclass(frozen=True)
class LoadedTasks:
    """The outcome of :func:`load_tasks`.

    Attributes:
        tasks: the tasks that loaded, in :data:`TASK_FACTORIES` order.
        unavailable: task name -> why it did not load.
    """

    tasks: tuple[Task, ...] = ()
    unavailable: dict[str, str] = field(default_factory=dict)


def _factory(name: str) -> TaskFactory:
    module, function = TASK_FACTORIES[name].split(":")
    factory: TaskFactory = getattr(importlib.import_module(module), function)
    return factory


def load_tasks(config: FirmwareConfig) -> LoadedTasks:
    """Load every known task; those that fail are returned as unavailable, never raised.

    A task that refuses one of its config values (an ``ocr.pattern`` that is not
    a regular expression) is unavailable too, the key named in its reason. A
    failure of a task the config does not enable is logged at INFO (a bundle not
    installed for a task nobody asked for is no news); the failures of enabled
    tasks are left to the caller to report.
    """
    loaded: dict[str, Task] = {}
    unavailable: dict[str, str] = {}
    for name in KNOWN_TASKS:
        if name not in TASK_FACTORIES:
            continue
        try:
            loaded[name] = _factory(name)(config, dict(loaded))
            continue
        except SensorError as exc:  # ModelError, BundleError, ConfigError: the message says what is wrong
            unavailable[name] = str(exc)
        except Exception as exc:  # a decoder choking on a malformed manifest must not stop the sensor either
            unavailable[name] = f"{type(exc).__name__}: {exc}"
            log.warning("task %s failed to load", name, exc_info=True)
        if name not in config.tasks.enabled:
            log.info("task %s not available: %s", name, unavailable[name])
    return LoadedTasks(tuple(loaded.values()), unavailable)

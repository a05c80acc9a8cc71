"""Which tasks exist, and loading them from the config."""

from __future__ import annotations

import importlib
import logging

from seedcam.errors import BundleError
from seedcam_firmware.config import FirmwareConfig
from seedcam_firmware.config_schema import KNOWN_TASKS
from seedcam_firmware.errors import FirmwareError
from seedcam_firmware.tasks.base import Task

__all__ = ["TASK_FACTORIES", "load_tasks"]

log = logging.getLogger(__name__)

#: task name → "module:function(config) -> Task", imported lazily
TASK_FACTORIES: dict[str, str] = {
    "lane": "seedcam_firmware.tasks.lane:load_lane_task",
}


def _factory(name: str):  # noqa: ANN202 - returns the factory callable
    module, function = TASK_FACTORIES[name].split(":")
    return getattr(importlib.import_module(module), function)


def load_tasks(config: FirmwareConfig) -> list[Task]:
    """Load every known task: enabled ones must load, others are skipped with a warning.

    Raises:
        ModelError / BundleError: an enabled task's model is missing or broken.
    """
    tasks: list[Task] = []
    for name in KNOWN_TASKS:
        if name not in TASK_FACTORIES:
            continue
        try:
            tasks.append(_factory(name)(config))
        except (FirmwareError, BundleError) as exc:
            if name in config.tasks.enabled:
                raise
            log.warning("task %s not available: %s", name, exc)
    return tasks

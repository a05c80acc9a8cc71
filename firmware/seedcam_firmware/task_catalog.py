"""The task catalog: every perception task the firmware knows, one line each.

A line (:class:`TaskSpec`) names the task, its loader (a ``"module:function"``
string, imported only when the task loads), its default model bundle and its
config section. Everything else reads the tasks from here: the configuration
(``tasks.enabled`` and its default, the ``models.<task>`` and
``models.<task>_precision`` keys, the ``[<task>]`` section), the task registry
that loads them and the update slots. Adding a task is its module, one line in
:data:`BUILTIN_TASKS` and its config section (docs/adding-a-task.md).

Tasks shipped apart from the firmware join through the entry point group
``seedcam_firmware.tasks`` (:data:`ENTRY_POINT_GROUP`): an entry point carries
the task's name and points at its :class:`TaskSpec` (``toy = "toy_task:TASK"``).
They come after the built-in tasks, in entry-point name order. A plugin that
does not import, names a task the catalog already has or is not a TaskSpec is
logged and left out; the sensor runs without it. The module an entry point names
is imported while the configuration is built, so it must not import
:mod:`seedcam_firmware.config` at import time (the loader's module, imported
later, may).

This module imports nothing of the firmware but the config key rules and the
built-in tasks' sections, so that the configuration can be built from it.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from seedcam_firmware.config_schema import Section
from seedcam_firmware.task_sections import ClassifyConfig, DetectConfig, OcrConfig

__all__ = [
    "BUILTIN_TASKS",
    "ENTRY_POINT_GROUP",
    "KNOWN_TASKS",
    "RESERVED_NAMES",
    "TASKS",
    "TaskSpec",
    "find_plugin_tasks",
    "resolve",
]

log = logging.getLogger(__name__)

#: The entry point group through which other distributions add tasks (each names a TaskSpec).
ENTRY_POINT_GROUP = "seedcam_firmware.tasks"
#: Names a task cannot take: the configuration's own sections and members, and ``models.dir``.
RESERVED_NAMES = frozenset(
    {"device", "camera", "link", "runtime", "tasks", "models", "pipeline", "updates", "blackbox", "dir", "section"}
)
_NAME_RE = re.compile(r"[a-z][a-z0-9]*")
_TARGET_RE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


@dataclass(frozen=True)
class TaskSpec:
    """One line of the catalog.

    Attributes:
        name: the task's name: lower-case letters and digits (it is also a config
            section and the ``SEEDCAM_FW_<NAME>_<KEY>`` prefix, so no ``_``).
        loader: ``"module:function"``; ``function(config, loaded)`` returns the
            :class:`~seedcam_firmware.tasks.base.Task` built from the
            :class:`~seedcam_firmware.config.FirmwareConfig`, ``loaded`` being the
            tasks loaded before it (a Task class taking those two arguments is a
            loader too). It raises a ``SensorError`` when the model does not load.
        bundle: the default ``models.<name>``: its bundle manifest, relative to ``models.dir``.
        what: what the task's model is, in a few words (documents its ``models`` keys).
        section: the ``[<name>]`` config section (a :class:`Section` whose
            ``section_name`` is ``name``), or None for a task without settings.
        enabled: in the default ``tasks.enabled``.
        precision: the default ``models.<name>_precision``.

    Raises:
        ValueError: a malformed name or loader, or a section of another name.
    """

    name: str
    loader: str
    bundle: str
    what: str
    section: type[Section] | None = None
    enabled: bool = False
    precision: str = "int8"

    def __post_init__(self) -> None:
        if not _NAME_RE.fullmatch(self.name) or self.name in RESERVED_NAMES:
            raise ValueError(
                f"task name {self.name!r} must be lower-case letters and digits and not one of "
                f"{', '.join(sorted(RESERVED_NAMES))}"
            )
        if not _TARGET_RE.fullmatch(self.loader):
            raise ValueError(f"task {self.name}: loader {self.loader!r} must be 'package.module:function'")
        section = self.section
        if section is not None and not (
            isinstance(section, type)
            and issubclass(section, Section)
            and dataclasses.is_dataclass(section)
            and getattr(section, "section_name", None) == self.name
        ):
            raise ValueError(f"task {self.name}: its config section must be a Section dataclass named {self.name!r}")


def resolve(target: str) -> object:
    """Import ``"package.module:attribute"`` and return the attribute (the firmware's one such resolver).

    Raises:
        ValueError: ``target`` is not of that form.
        ImportError: the module does not import or has no such attribute.
    """
    if not _TARGET_RE.fullmatch(target):
        raise ValueError(f"{target!r} is not 'package.module:attribute'")
    module_name, _, attribute = target.partition(":")
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise ImportError(f"cannot import {attribute!r} from {module_name!r}", name=module_name) from None


#: The firmware's own tasks, loaded in this order (a task finds those it builds on loaded: ocr after detect).
BUILTIN_TASKS: tuple[TaskSpec, ...] = (
    TaskSpec("lane", "seedcam_firmware.tasks.lane:load_lane_task", "lane/manifest.json", "lane", enabled=True),
    TaskSpec(
        "detect",
        "seedcam_firmware.tasks.detect:load_detect_task",
        "detect/manifest.json",
        "object detector",
        DetectConfig,
        enabled=True,
    ),
    TaskSpec(
        "ocr",
        "seedcam_firmware.tasks.ocr:load_ocr_task",
        "ocr/manifest.json",
        "plate reader (CTC OCR)",
        OcrConfig,
        enabled=True,
    ),
    TaskSpec(
        "classify",
        "seedcam_firmware.tasks.classify:load_classify_task",
        "road_scene/manifest.json",
        "scene classifier",
        ClassifyConfig,
    ),
)


def find_plugin_tasks(taken: Mapping[str, TaskSpec]) -> dict[str, TaskSpec]:
    """The catalog lines that installed distributions announce in :data:`ENTRY_POINT_GROUP`.

    Args:
        taken: the tasks already in the catalog; a plugin may not name one of them.

    Returns:
        Task name → its line, in entry-point name order. A plugin that does not
        import, is not a TaskSpec, is named unlike its TaskSpec or names a task
        already taken is logged and left out.
    """
    found: dict[str, TaskSpec] = {}
    entry_points = sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
    for entry_point in entry_points:
        try:
            spec = entry_point.load()
        except Exception:  # a broken plugin must not stop the sensor
            log.exception("task plugin %s = %s does not import; left out", entry_point.name, entry_point.value)
            continue
        if not isinstance(spec, TaskSpec):
            problem = f"it names a {type(spec).__name__}, not a TaskSpec"
        elif spec.name != entry_point.name:
            problem = f"its TaskSpec is named {spec.name!r}"
        elif spec.name in taken or spec.name in found:
            problem = f"the catalog already has a task {spec.name!r}"
        else:
            found[spec.name] = spec
            continue
        log.error("task plugin %s = %s left out: %s", entry_point.name, entry_point.value, problem)
    return found


def _catalog() -> Mapping[str, TaskSpec]:
    builtin = {spec.name: spec for spec in BUILTIN_TASKS}
    return MappingProxyType({**builtin, **find_plugin_tasks(builtin)})


#: Every task: the built-in ones, then those of plugins; by name, in load order.
TASKS: Mapping[str, TaskSpec] = _catalog()
#: The names of :data:`TASKS`; ``tasks.enabled`` may name only these.
KNOWN_TASKS: tuple[str, ...] = tuple(TASKS)

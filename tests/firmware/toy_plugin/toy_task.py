"""A toy perception task that joins the firmware through the task catalog alone.

It needs no model: it reports one class per frame, labelled by its own config
section (``toy.label``, live) and scored by the frame's mean brightness.
``tests/firmware/test_task_catalog.py`` adds it with one catalog line, the entry
point ``toy = toy_task:TASK`` of the group ``seedcam_firmware.tasks``.

This module is imported while the firmware builds its configuration, so it
imports nothing of ``seedcam_firmware.config`` at run time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from seedcam.types import Classification, ModelInfo
from seedcam_firmware.config_schema import Section, setting
from seedcam_firmware.task_catalog import TaskSpec
from seedcam_firmware.tasks.base import NO_PRIOR, Task, TaskOutput

if TYPE_CHECKING:
    from seedcam_firmware.config import FirmwareConfig

MODEL_ID = "toy-1.0"


@dataclass(frozen=True)
class ToyConfig(Section):
    """``[toy]``: what the toy reports."""

    section_name: ClassVar[str] = "toy"
    label: str = setting("toy", live=True, host="yes", doc="the label of the one class the toy reports")


class ToyTask(Task):
    """One class per frame: ``toy.label``, scored by the frame's mean brightness (0..1)."""

    name = "toy"

    def __init__(self, config: FirmwareConfig) -> None:
        self.model = ModelInfo(id=MODEL_ID, name="toy", version="1.0", task="toy", precision="int8")
        self.label = "toy"
        self.configure(config)

    def configure(self, config: FirmwareConfig) -> None:
        self.label = config.section(ToyConfig).label

    def run(self, image: np.ndarray, prior: Mapping[str, TaskOutput] = NO_PRIOR) -> TaskOutput:
        score = float(np.mean(image)) / 255.0
        return TaskOutput(classifications=(Classification(0, self.label, score),))


def load_toy_task(config: FirmwareConfig, loaded: Mapping[str, Task]) -> ToyTask:
    """The toy's loader: there is no bundle to read."""
    return ToyTask(config)


#: The toy's catalog line.
TASK = TaskSpec("toy", "toy_task:load_toy_task", "toy/manifest.json", "toy (no model)", ToyConfig)

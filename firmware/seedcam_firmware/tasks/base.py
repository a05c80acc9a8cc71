"""The task interface and the runner that turns a frame into one Result."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from seedcam.types import Classification, Detection, LaneState, ModelInfo, Result, TextLine
from seedcam_firmware.camera.base import Frame
from seedcam_firmware.errors import ConfigError

__all__ = ["TaskOutput", "Task", "TaskRunner"]


@dataclass(frozen=True)
class TaskOutput:
    """What one task found in a frame; the runner merges outputs into a Result."""

    lane: LaneState | None = None
    detections: tuple[Detection, ...] = ()
    text_lines: tuple[TextLine, ...] = ()
    classifications: tuple[Classification, ...] = ()
    timings_us: Mapping[str, int] = field(default_factory=dict)


class Task(Protocol):
    """A perception task: a model plus its pre- and post-processing."""

    name: str
    model: ModelInfo

    def run(self, image: np.ndarray) -> TaskOutput:
        """Process one BGR uint8 frame."""
        ...

    def close(self) -> None:
        """Release the interpreter."""
        ...


def elapsed_us(start: float) -> int:
    """Microseconds since a ``time.perf_counter()`` reading."""
    return int((time.perf_counter() - start) * 1e6)


class TaskRunner:
    """Holds the loaded tasks and which of them are enabled (switchable at run time)."""

    def __init__(self, tasks: Iterable[Task], enabled: Iterable[str]) -> None:
        self._tasks = {task.name: task for task in tasks}
        self._lock = threading.Lock()
        self._enabled: tuple[str, ...] = ()
        self.select(enabled)

    @property
    def available(self) -> tuple[str, ...]:
        return tuple(self._tasks)

    @property
    def enabled(self) -> tuple[str, ...]:
        return self._enabled

    @property
    def models(self) -> tuple[ModelInfo, ...]:
        """The models of the loaded tasks, ``active`` when their task is enabled."""
        return tuple(replace(t.model, active=t.name in self._enabled) for t in self._tasks.values())

    def select(self, names: Iterable[str]) -> tuple[str, ...]:
        """Enable exactly ``names`` (in the order given, duplicates removed).

        Raises:
            ConfigError: a name is not a loaded task.
        """
        chosen = tuple(dict.fromkeys(names))
        unknown = [n for n in chosen if n not in self._tasks]
        if unknown:
            raise ConfigError(
                f"unknown or unloaded task(s) {', '.join(unknown)}; available: {', '.join(self._tasks) or 'none'}"
            )
        with self._lock:
            self._enabled = chosen
        return chosen

    def process(self, frame: Frame) -> Result:
        """Run every enabled task on ``frame``; an empty Result when none is enabled."""
        enabled = [self._tasks[name] for name in self._enabled]
        timings: dict[str, int] = {}
        lane = None
        detections: list[Detection] = []
        text_lines: list[TextLine] = []
        classifications: list[Classification] = []
        for task in enabled:
            start = time.perf_counter()
            output = task.run(frame.image)
            timings[f"task:{task.name}"] = elapsed_us(start)
            timings.update(output.timings_us)
            lane = output.lane if output.lane is not None else lane
            detections.extend(output.detections)
            text_lines.extend(output.text_lines)
            classifications.extend(output.classifications)
        height, width = frame.image.shape[:2]
        timings["capture_to_result"] = max(0, time.monotonic_ns() // 1000 - frame.timestamp_us)
        return Result(
            frame_id=frame.frame_id,
            capture_timestamp_us=frame.timestamp_us,
            timings_us=timings,
            model_ids=tuple(task.model.id for task in enabled),
            lane=lane,
            detections=tuple(detections),
            text_lines=tuple(text_lines),
            classifications=tuple(classifications),
            frame_width=width,
            frame_height=height,
        )

    def close(self) -> None:
        for task in self._tasks.values():
            task.close()


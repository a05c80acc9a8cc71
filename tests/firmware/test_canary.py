"""The in-service canary (issue 14, finding 10): invalid (NaN/infinite) task outputs are dropped,
counted and reported; a model activated within the window is rolled back to its slot's target."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest
from update_helpers import lane_bundle, push, service, slot_versions

from seedcam.types import Box, Classification, Detection, LaneState, LaneStatus, ModelInfo
from seedcam_firmware.camera.base import Frame
from seedcam_firmware.canary import Canary
from seedcam_firmware.tasks.base import NO_PRIOR, Task, TaskOutput
from seedcam_firmware.tasks.runner import TaskRunner, all_finite

LANE = LaneState(LaneStatus.OK, 0.01, 0.02, 0.1, 0.9, 0.8, 0.7, 0.45)


class FixedTask(Task):
    def __init__(self, name: str, output: TaskOutput, requires: tuple[str, ...] = ()) -> None:
        self.name = name
        self.model = ModelInfo(f"{name}-f32", name, "1.0", name, "float32")
        self.output = output
        self.requires = requires
        self.priors: list[Mapping[str, TaskOutput]] = []

    def run(self, image: np.ndarray, prior: Mapping[str, TaskOutput] = NO_PRIOR) -> TaskOutput:
        self.priors.append(prior)
        return self.output


def frame(frame_id: int = 0) -> Frame:
    return Frame(frame_id, time.monotonic_ns() // 1000, np.zeros((24, 32, 3), np.uint8))


@pytest.mark.parametrize(
    "output",
    [
        TaskOutput(lane=LaneState(LaneStatus.OK, math.nan, 0.0, 0.0, 1.0, 1.0, 1.0, 0.45)),
        TaskOutput(lane=LaneState(LaneStatus.OK, 0.0, 0.0, math.inf, 1.0, 1.0, 1.0, 0.45)),
        TaskOutput(detections=(Detection(0, "x", 0.9, Box(0.1, np.float32("nan"), 0.5, 0.5)),)),
        TaskOutput(classifications=(Classification(1, "cat", -math.inf),)),
    ],
)
def test_a_task_with_non_finite_outputs_loses_its_findings_is_counted_and_reported(output: TaskOutput) -> None:
    reported: list[str] = []
    bad = FixedTask("bad", output)
    good = FixedTask("good", TaskOutput(lane=LANE))
    reader = FixedTask("reader", TaskOutput(), requires=("bad",))
    runner = TaskRunner([bad, good, reader], ["bad", "good", "reader"], on_invalid=reported.append)
    for i in range(3):
        result = runner.process(frame(i))
        assert all_finite((result.lane, result.detections, result.classifications))
        assert result.model_ids == ("good-f32", "reader-f32")  # the invalid task's model did not report
    assert result.lane == LANE
    assert runner.invalid_outputs == {"bad": 3}
    assert reported == ["bad"] * 3
    assert reader.priors == [{}, {}, {}]  # a task requiring it does not see the invalid findings


def test_finite_outputs_are_untouched() -> None:
    runner = TaskRunner([FixedTask("good", TaskOutput(lane=LANE))], ["good"], on_invalid=pytest.fail)
    assert runner.process(frame()).lane == LANE
    assert runner.invalid_outputs == {}


@pytest.fixture
def two_installed(tmp_path: Path):  # noqa: ANN201
    updates = service(tmp_path / "storage")
    assert push(updates, lane_bundle("1.1.0")).installed.activated
    assert push(updates, lane_bundle("1.2.0")).installed.activated
    assert slot_versions(updates) == {"active": "b", "previous": "a", "a": "1.1.0", "b": "1.2.0"}
    yield updates
    updates.close()


def test_a_freshly_activated_model_with_invalid_outputs_is_rolled_back_once(two_installed) -> None:  # noqa: ANN001
    canary = Canary(600.0, two_installed)
    canary.activated("lane")
    canary.on_invalid("lane")
    canary.on_invalid("lane")  # a rollback in progress is not started again
    canary.close()
    assert slot_versions(two_installed) == {"active": "a", "previous": "b", "a": "1.1.0", "b": "1.2.0"}
    assert canary.rollbacks == 1
    canary.on_invalid("lane")  # the model rolled back to is not rolled back again
    canary.close()
    assert canary.rollbacks == 1 and slot_versions(two_installed)["active"] == "a"


@pytest.mark.parametrize("window_s", [0.0, 1e-6])
def test_no_rollback_when_the_canary_is_off_or_the_model_is_older_than_the_window(
    two_installed, window_s: float
) -> None:  # noqa: ANN001
    canary = Canary(window_s, two_installed)
    canary.activated("lane")
    time.sleep(0.01)
    canary.on_invalid("lane")
    canary.close()
    assert canary.rollbacks == 0 and slot_versions(two_installed)["active"] == "b"


def test_a_model_that_was_not_activated_over_the_link_is_never_rolled_back(two_installed) -> None:  # noqa: ANN001
    canary = Canary(600.0, two_installed)
    canary.on_invalid("lane")
    canary.close()
    assert canary.rollbacks == 0 and slot_versions(two_installed)["active"] == "b"


def test_without_a_rollback_target_nothing_changes(tmp_path: Path) -> None:
    updates = service(tmp_path / "storage")
    try:
        assert push(updates, lane_bundle("1.1.0")).installed.activated
        canary = Canary(600.0, updates)
        canary.activated("lane")
        canary.on_invalid("lane")
        canary.close()
        assert canary.rollbacks == 0 and slot_versions(updates)["active"] == "a"
    finally:
        updates.close()

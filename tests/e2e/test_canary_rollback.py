"""The in-service canary, end to end (issue 14, finding 10): a model exact on its golden input and
NaN on real frames passes its self-test and is activated; the firmware must not stream its NaN lane
states, must say so in Health, and must roll it back to the slot it replaced.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from canary_models import LANE, nan_lane_bundle, write_nan_lane_model
from helpers import wait_until

import seedcam
from seedcam import updates
from seedcam.bundle import write_bundle
from seedcam_tools.bundles import build_model_bundle

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def nan_model(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return write_nan_lane_model(tmp_path_factory.mktemp("canary") / "nan_lane.tflite")


def lane_version(sensor: seedcam.Sensor) -> str:
    (model,) = [m for m in sensor.models() if m.task == "lane" and m.active]
    return model.version


def finite_lane(result: seedcam.Result) -> bool:
    lane = result.lane
    if lane is None:
        return True
    return all(math.isfinite(v) for v in (lane.offset_m, lane.heading_rad, lane.curvature_per_m, lane.lane_width_m))


def test_a_model_nan_on_real_frames_is_not_streamed_and_is_rolled_back(
    firmware_factory, tmp_path: Path, nan_model: bytes
) -> None:  # noqa: ANN001
    fw = firmware_factory("--fps", "15", "--tasks", "lane", "--set", f"updates.dir={tmp_path / 'storage'}")
    good = write_bundle(build_model_bundle(LANE, version="1.1.0", security_counter=1), tmp_path / "good.scb")
    bad = write_bundle(nan_lane_bundle(nan_model, "1.2.0", counter=1), tmp_path / "bad.scb")
    with seedcam.open(fw.link, timeout=10) as sensor:
        assert updates.push_bundle(sensor, good).activated
        results: list[seedcam.Result] = []
        stop = sensor.on_result(results.append)
        done = updates.push_bundle(sensor, bad)
        assert done.activated and done.install.previous_slot == "a"  # exact on its golden input: it passes
        wait_until(lambda: lane_version(sensor) == "1.1.0", 30, "the canary rolling the NaN model back", interval=0.2)
        wait_until(lambda: len(results) > 5 and results[-1].lane is not None, 10, "results of the old model")
        stop()
        assert all(finite_lane(r) for r in results), "NaN lane states reached the host"
        assert not any("lane-v3-float32" in r.model_ids and r.lane is not None for r in results)
        wait_until(lambda: (h := sensor.health) is not None and h.canary_rollbacks == 1, 5, "the rollback in Health")
        health = sensor.health
        assert health is not None and health.invalid_outputs.get("lane", 0) >= 1


def test_with_the_canary_off_invalid_outputs_are_dropped_and_counted_but_kept(
    firmware_factory, tmp_path: Path, nan_model: bytes
) -> None:  # noqa: ANN001
    storage = f"updates.dir={tmp_path / 'storage'}"
    fw = firmware_factory("--fps", "15", "--tasks", "lane", "--set", storage, "--set", "updates.canary_window_s=0")
    good = write_bundle(build_model_bundle(LANE, version="1.1.0", security_counter=1), tmp_path / "good.scb")
    bad = write_bundle(nan_lane_bundle(nan_model, "1.2.0", counter=1), tmp_path / "bad.scb")
    with seedcam.open(fw.link, timeout=10) as sensor:
        updates.push_bundle(sensor, good)
        assert updates.push_bundle(sensor, bad).activated
        wait_until(lambda: (h := sensor.health) is not None and h.invalid_outputs.get("lane", 0) >= 5, 10, "counts")
        results: list[seedcam.Result] = []
        stop = sensor.on_result(results.append)
        wait_until(lambda: len(results) >= 3, 10, "results")
        stop()
        assert all(r.lane is None and r.model_ids == () for r in results)  # the findings dropped
        assert lane_version(sensor) == "1.2.0"
        assert sensor.health.canary_rollbacks == 0  # type: ignore[union-attr]

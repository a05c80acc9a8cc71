"""End to end: a scripted scene with a stop sign and a plate, through the shipped models, the firmware and the SDK."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import MODELS
from scripted_scenes import STOP_AND_PLATE

import seedcam

pytestmark = pytest.mark.e2e

SCENE = STOP_AND_PLATE


def _start(firmware_factory, tmp_path: Path, tasks: list[str]):  # noqa: ANN001, ANN202
    scene = tmp_path / "scene.toml"
    scene.write_text(SCENE)
    config = tmp_path / "fw.toml"
    enabled = ", ".join(f'"{t}"' for t in tasks)
    config.write_text(
        f'[camera]\nsource = "synthetic"\nscene = "{scene}"\nfps = 10\n\n[tasks]\nenabled = [{enabled}]\n'
    )
    return firmware_factory("--config", str(config))


def _check_detections(result: seedcam.Result) -> None:
    labels = sorted(d.label for d in result.detections)
    assert labels == ["plate", "stop"], result.detections
    stop = next(d for d in result.detections if d.label == "stop")
    plate = next(d for d in result.detections if d.label == "plate")
    # the stop sign stands left of the lane (left half of the image), the plate to the right and nearer
    assert stop.box.x_max < 0.5 < plate.box.x_min
    assert plate.box.width > stop.box.width
    assert result.lane is not None and result.lane.status is seedcam.LaneStatus.OK


def test_stop_sign_and_plate_are_detected_through_the_sdk(firmware_factory, tmp_path: Path) -> None:
    fw = _start(firmware_factory, tmp_path, ["lane", "detect"])
    with seedcam.open(fw.link, timeout=10) as sensor:
        active = {m.task: m for m in sensor.models() if m.active}
        assert {"lane", "detect"} <= set(active)
        results = [sensor.recv(timeout=10) for _ in range(5)]
    assert all(r is not None for r in results)
    for result in results:
        assert active["detect"].id in result.model_ids
        _check_detections(result)


@pytest.mark.skipif(not (MODELS / "ocr" / "manifest.json").exists(), reason="the OCR bundle models/ocr is not shipped")
def test_stop_sign_and_plate_text_reach_the_host(firmware_factory, tmp_path: Path) -> None:
    fw = _start(firmware_factory, tmp_path, ["lane", "detect", "ocr"])
    with seedcam.open(fw.link, timeout=10) as sensor:
        active = {m.task: m for m in sensor.models() if m.active}
        assert {"lane", "detect", "ocr"} <= set(active)
        results = [sensor.recv(timeout=10) for _ in range(5)]
    assert all(r is not None for r in results)
    for result in results:
        assert active["detect"].id in result.model_ids and active["ocr"].id in result.model_ids
        _check_detections(result)
        plate = next(d for d in result.detections if d.label == "plate")
        assert [t.text for t in result.text_lines] == ["AGV-042"]
        line = result.text_lines[0]
        assert len(line.char_confidences) == 7 and line.confidence > 0.5
        assert line.box is not None and abs(line.box.x_min - plate.box.x_min) < 1e-6

"""The detection task: boxes mapped from the model input back to the camera frame, live thresholds."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import seedcam
from seedcam.types import Box
from seedcam_firmware.config import FirmwareConfig, config_from_dict, config_set
from seedcam_firmware.daemon import Daemon
from seedcam_firmware.inference.manifest import load_manifest
from seedcam_firmware.inference.preprocess import crop_rows
from seedcam_firmware.tasks.detect import DetectTask, box_to_frame, load_detect_task

WAIT_S = 10.0
LABELS = ["car", "plate"]
PLATE = (1, 0.9, (0.25, 0.5, 0.75, 1.0))
CAR = (0, 0.7, (0.0, 0.0, 0.5, 0.5))
CAR_ECHO = (0, 0.55, (0.0, 0.0, 0.5, 0.45))  # IoU 0.9 with CAR: NMS drops it at iou_threshold 0.45
CROP_BOTTOM = 0.35


def write_detector(out_dir: Path, detections: list, *, crop_bottom: float = CROP_BOTTOM, crop_top: float = 0.0) -> Path:
    """A yolov8-layout bundle whose model outputs ``detections``, labelled car / plate, seeing a row band."""
    from seedcam_tools.layout_models import make_layout_model

    path = make_layout_model("yolov8", out_dir, detections, num_classes=len(LABELS), input_size=(64, 48))
    manifest = json.loads(path.read_text())
    manifest["id"] = "test-detector"
    manifest["input"].update(crop_top=crop_top, crop_bottom=crop_bottom)
    manifest["decoder"]["labels"] = LABELS
    path.write_text(json.dumps(manifest))
    return path


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_detector(tmp_path_factory.mktemp("models") / "det", [PLATE, CAR, CAR_ECHO])


def frame(height: int = 240, width: int = 320) -> np.ndarray:
    return np.full((height, width, 3), 90, np.uint8)


def config_for(bundle: Path, **sections: dict) -> FirmwareConfig:
    data = {"models": {"dir": str(bundle.parent.parent), "detect": "det/manifest.json", "detect_precision": "float32"}}
    for section, table in sections.items():
        data.setdefault(section, {}).update(table)
    return config_from_dict(data)


def test_box_to_frame_maps_through_the_crop_rows() -> None:
    # the model saw rows 60..200 of a 240-row frame: its y = 0.5 is frame row 130
    assert box_to_frame((0.1, 0.5, 0.3, 1.0), (60, 200), 240) == Box(0.1, 130 / 240, 0.3, 200 / 240)
    assert box_to_frame((0.0, 0.0, 1.0, 1.0), (0, 240), 240) == Box(0.0, 0.0, 1.0, 1.0)
    # clipped to the frame; nothing left inside -> None
    assert box_to_frame((-0.2, -0.5, 1.3, 0.5), (60, 200), 240) == Box(0.0, 0.0, 1.0, 130 / 240)
    assert box_to_frame((1.1, 0.2, 1.4, 0.4), (0, 240), 240) is None


def test_detections_come_back_in_frame_coordinates_with_labels(bundle: Path) -> None:
    task = load_detect_task(config_for(bundle))
    assert task.model.task == "detect" and task.model.id == "test-detector-float32"
    assert crop_rows(240, task.manifest.input) == (0, 156)  # crop_bottom 0.35 of 240 rows: 84 cut
    out = task.run(frame())
    assert [(d.label, d.class_id) for d in out.detections] == [("plate", 1), ("car", 0)]  # best first, echo NMSed
    plate, car = out.detections
    assert plate.score == pytest.approx(0.9, abs=1e-6)
    # input y 0.5..1.0 of rows 0..156 -> frame rows 78..156 of 240
    got = (plate.box.x_min, plate.box.y_min, plate.box.x_max, plate.box.y_max)
    assert got == pytest.approx((0.25, 78 / 240, 0.75, 156 / 240), abs=1e-6)
    assert (car.box.y_min, car.box.y_max) == pytest.approx((0.0, 78 / 240), abs=1e-6)
    assert set(out.timings_us) == {"detect:preprocess", "detect:invoke", "detect:decode"}


def test_boxes_follow_the_frame_size_and_crop_top(tmp_path: Path) -> None:
    path = write_detector(tmp_path / "det", [PLATE], crop_top=0.25, crop_bottom=0.25)
    task = DetectTask(load_manifest(path, precision="float32"), num_threads=1)
    (plate,) = task.run(frame(height=200, width=100)).detections
    # rows 50..150 of 200: input y 0.5..1.0 is frame rows 100..150
    assert (plate.box.x_min, plate.box.x_max) == pytest.approx((0.25, 0.75), abs=1e-6)
    assert (plate.box.y_min, plate.box.y_max) == pytest.approx((100 / 200, 150 / 200), abs=1e-6)


def test_thresholds_come_from_the_config_and_change_on_the_next_frame(bundle: Path) -> None:
    cfg = config_for(bundle)
    task = load_detect_task(cfg)
    image = frame()
    assert len(task.run(image).detections) == 2
    task.configure(config_set(cfg, "detect.score_threshold", 0.8))
    assert [d.label for d in task.run(image).detections] == ["plate"]
    task.configure(config_set(cfg, "detect.iou_threshold", 0.95))  # the echo no longer overlaps "too much"
    assert [d.score for d in task.run(image).detections] == pytest.approx([0.9, 0.7, 0.55], abs=1e-6)
    task.configure(config_set(cfg, "detect.max_detections", 1))
    assert [d.label for d in task.run(image).detections] == ["plate"]


# ---- through the daemon and the public SDK ---------------------------------------------------------


@pytest.fixture
def sensor(bundle: Path) -> Iterator[seedcam.Sensor]:
    url = f"pair://detect-test-{uuid.uuid4().hex[:12]}"
    cfg = config_for(
        bundle,
        link={"url": url},
        camera={"source": "synthetic", "width": 320, "height": 240, "fps": 30.0},
        tasks={"enabled": ["detect"]},
    )
    daemon = Daemon(cfg)
    daemon.start()
    try:
        with seedcam.open(url, timeout=WAIT_S, reconnect=False) as s:
            yield s
    finally:
        daemon.stop()


def next_result_where(sensor: seedcam.Sensor, condition, what: str) -> seedcam.Result:  # noqa: ANN001
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        result = sensor.recv(timeout=max(0.0, deadline - time.monotonic()))
        if result is not None and condition(result):
            return result
    raise AssertionError(f"no result with {what} within {WAIT_S} s")


def test_config_set_changes_the_threshold_live(sensor: seedcam.Sensor) -> None:
    first = next_result_where(sensor, lambda r: r.detections, "detections")
    assert [d.label for d in first.detections] == ["plate", "car"]
    assert first.model_ids == ("test-detector-float32",)
    assert (first.frame_width, first.frame_height) == (320, 240)
    stored = sensor.config_set("detect.score_threshold", 0.8)
    assert stored.value == 0.8 and not stored.restart_required
    changed = next_result_where(sensor, lambda r: len(r.detections) == 1, "one detection")
    assert changed.detections[0].label == "plate"
    later = [sensor.recv(timeout=WAIT_S) for _ in range(3)]  # and it stays so
    assert all(r is not None and [d.label for d in r.detections] == ["plate"] for r in later)
    assert sensor.config_get("detect.score_threshold") == 0.8

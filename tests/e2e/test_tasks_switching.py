"""End to end: the firmware process with a broken model keeps running the other tasks; tasks switch live."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import MODELS

import seedcam
from seedcam.errors import RpcError
from seedcam_firmware.inference.manifest import sha256_file

pytestmark = pytest.mark.e2e

WAIT_S = 15.0


def write_detector(out_dir: Path) -> str:
    """A detector bundle (constant detections) seeing the upper 65 % of the frame; returns its model id."""
    from seedcam_tools.layout_models import make_layout_model

    path = make_layout_model("yolov8", out_dir, [(1, 0.9, (0.4, 0.3, 0.6, 0.5))], num_classes=2, input_size=(64, 48))
    manifest = json.loads(path.read_text())
    manifest.update(id="e2e-detector")
    manifest["input"]["crop_bottom"] = 0.35
    manifest["decoder"]["labels"] = ["car", "plate"]
    path.write_text(json.dumps(manifest))
    return "e2e-detector-float32"


def write_text_file_as_ocr_model(out_dir: Path) -> None:
    """An OCR bundle whose manifest is fine and whose ``.tflite`` is a text file (with the right sha256)."""
    out_dir.mkdir(parents=True)
    model = out_dir / "ocr.tflite"
    model.write_text("this is not a model\n")
    manifest = {
        "schema": 1,
        "id": "broken-ocr",
        "name": "a text file renamed .tflite",
        "version": "1.0.0",
        "task": "ocr",
        "min_firmware_version": "0.0.1",
        "files": {"float32": {"file": model.name, "sha256": sha256_file(model)}},
        "input": {"shape": [1, 32, 128, 3], "crop_top": 0.0},
        "outputs": {"probs": [1, 32, 38]},
        "decoder": {"type": "ctc", "alphabet": "0-9A-Z-", "blank_index": 37},
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest))


def next_result(sensor: seedcam.Sensor, condition: Callable[[seedcam.Result], bool], what: str) -> seedcam.Result:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        result = sensor.recv(timeout=max(0.0, deadline - time.monotonic()))
        if result is not None and condition(result):
            return result
    raise AssertionError(f"no result with {what} within {WAIT_S} s")


def test_broken_model_leaves_the_other_tasks_running_and_tasks_switch(
    firmware_factory,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,  # noqa: ANN001
) -> None:
    models = tmp_path / "models"
    detector_id = write_detector(models / "detect")
    write_text_file_as_ocr_model(models / "ocr")
    config = tmp_path / "fw.toml"
    config.write_text(
        '[camera]\nsource = "synthetic"\nfps = 15\n\n'
        '[tasks]\nenabled = ["lane", "detect", "ocr"]\n\n'
        f'[models]\ndir = "{models}"\nlane = "{MODELS / "lane" / "manifest.json"}"\n'
        'detect_precision = "float32"\nocr_precision = "float32"\n'
    )
    caplog.set_level(logging.INFO, logger="seedcam.sensor")
    fw = firmware_factory("--config", str(config))
    assert "tasks lane,detect; ocr not loaded)" in fw.ready_line  # the ready line names what runs

    with seedcam.open(fw.link, timeout=WAIT_S) as sensor:
        # the host is told, on the LOG channel, which enabled task is missing and why
        def device_errors() -> list[str]:
            return [r.getMessage() for r in caplog.records if r.name == "seedcam.sensor" and r.levelno >= logging.ERROR]

        deadline = time.monotonic() + WAIT_S
        while not any("task ocr" in m and "not a TFLite file" in m for m in device_errors()):
            assert time.monotonic() < deadline, f"no device error about the ocr model: {device_errors()}"
            sensor.ping()  # each round trip lets the reader thread deliver what came before it

        info = sensor.info()
        assert info.tasks_enabled == ("lane", "detect")
        assert sensor.config_get("tasks.enabled") == ["lane", "detect"]
        active = {m.task: m.id for m in sensor.models() if m.active}
        assert active == {"lane": active["lane"], "detect": detector_id}
        lane_id = active["lane"]

        both = next_result(sensor, lambda r: r.lane is not None and bool(r.detections), "lane and detections")
        assert both.model_ids == (lane_id, detector_id)
        (plate,) = both.detections
        assert plate.label == "plate"
        assert (plate.box.y_min, plate.box.y_max) == pytest.approx((0.3 * 0.65, 0.5 * 0.65), abs=2e-3)

        with pytest.raises(RpcError) as refused:
            sensor.select_tasks(["lane", "ocr"])
        assert refused.value.status == "UNAVAILABLE"
        assert "task ocr is unavailable" in refused.value.detail and "not a TFLite file" in refused.value.detail
        with pytest.raises(RpcError) as refused_too:
            sensor.config_set("tasks.enabled", ["ocr"])
        assert refused_too.value.status == "UNAVAILABLE"

        tasks = sensor.select_tasks(["lane"])
        assert tasks.enabled == ("lane",) and tasks.available == ("lane", "detect")
        lane_only = next_result(sensor, lambda r: r.model_ids == (lane_id,), "the lane model only")
        assert lane_only.lane is not None and lane_only.detections == ()

        assert sensor.select_tasks(["detect", "lane"]).enabled == ("detect", "lane")
        back = next_result(sensor, lambda r: r.model_ids == (detector_id, lane_id), "both models again")
        assert back.lane is not None and len(back.detections) == 1

        assert sensor.select_tasks([]).enabled == ()
        empty = next_result(sensor, lambda r: r.model_ids == (), "no model")
        assert empty.lane is None and empty.detections == ()
    assert fw.proc is not None and fw.proc.poll() is None  # still running

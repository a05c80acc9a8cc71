"""Bring your own model from PyTorch: files exported by litert-torch, bundled by ``from-tflite``, run by the sensor.

The two models in tests/tools/data are PyTorch modules converted by litert-torch
(data/make_torch_models.py says how; PyTorch is not installed by the suite): a
YOLOv8-layout detector and a small colour classifier trained in PyTorch. Nothing
of seedcam's own export code or TensorFlow's converter made them. The bundles
``from-tflite`` writes pass the install self-test, and the classifier runs as the
``classify`` task of the emulated board and names the colour of each frame.
"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from test_byo_model import BOX, SIZE, run_tools

import seedcam
from seedcam.bundle import read_bundle
from seedcam_firmware.selftest import selftest_model
from seedcam_firmware.tasks.detect import DetectTask

DATA = Path(__file__).resolve().parent / "data"
COLOURS = {"red": (0, 0, 255), "green": (0, 255, 0), "blue": (255, 0, 0)}  # BGR, as OpenCV writes them


def _install(scb: Path, slot: Path) -> tuple[object, float]:
    bundle = read_bundle(scb)
    slot.mkdir()
    for entry in bundle.header.files:
        (slot / entry.name).write_bytes(bundle.file_bytes(entry))
    return selftest_model(slot, bundle.header)


def test_the_files_were_exported_by_litert_torch() -> None:
    from ai_edge_litert.interpreter import Interpreter

    for name in ("torch_yolov8.tflite", "torch_colour.tflite"):
        interpreter = Interpreter(model_path=str(DATA / name))
        (signature,) = interpreter.get_signature_list().values()
        assert signature["inputs"] == ["args_0"], name  # torch.export's argument naming, not a Keras layer's


def test_a_pytorch_yolov8_detector_bundles_self_tests_and_detects(tmp_path: Path) -> None:
    (tmp_path / "labels.txt").write_text("car\nperson\n")
    out = tmp_path / "det"
    run_tools(
        "bundle", "from-tflite", str(DATA / "torch_yolov8.tflite"), "--task", "detect", "--layout", "yolov8",
        "--labels", "labels.txt", "--out", str(out), cwd=tmp_path,
    )  # fmt: skip
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["input"]["shape"] == [1, SIZE, SIZE, 3] and manifest["input"]["dtype"] == "float32"
    run_tools("bundle", "model", str(out), "-o", str(tmp_path / "det.scb"), cwd=tmp_path)
    installed, error = _install(tmp_path / "det.scb", tmp_path / "slot")
    assert error <= 1e-6
    (det,) = DetectTask(installed).run(np.zeros((240, 320, 3), np.uint8)).detections
    cx, cy, w, h = (v / SIZE for v in BOX)
    assert det.label == "person" and det.score > 0.9
    assert np.allclose([det.box.x_min, det.box.y_max], [cx - w / 2, cy + h / 2], atol=0.02)


@pytest.mark.timeout(240)
def test_a_pytorch_classifier_runs_as_the_classify_task_of_the_board(tmp_path: Path, firmware_factory: object) -> None:
    (tmp_path / "colours.txt").write_text("red\ngreen\nblue\n")
    models = tmp_path / "models"
    run_tools(
        "bundle", "from-tflite", str(DATA / "torch_colour.tflite"), "--task", "classify",
        "--labels", "colours.txt", "--out", str(models / "colour"), cwd=tmp_path,
    )  # fmt: skip
    frames = tmp_path / "frames"
    frames.mkdir()
    for i, (name, bgr) in enumerate(COLOURS.items()):
        image = np.full((240, 320, 3), 40, np.uint8)
        image[:] = np.array(bgr) * 0.7 + 40
        cv2.imwrite(str(frames / f"{i}-{name}.png"), image)

    assert callable(firmware_factory)
    board = firmware_factory(
        "--camera", "folder", "--camera-path", str(frames), "--fps", "10", "--tasks", "classify",
        "--set", f"models.dir={models}", "--set", "models.classify=colour/manifest.json",
        "--set", "models.classify_precision=float32",
    )  # fmt: skip
    names = list(COLOURS)  # the folder source plays the frames in this order, looping
    read: list[tuple[int, str, float]] = []
    with seedcam.open(board.link, timeout=30) as sensor:
        (model,) = sensor.models()
        assert model.task == "classify"
        for result in sensor.results(timeout=30):
            top = result.classifications[0]
            read.append((result.frame_id, top.label, top.score))
            if len(read) == 6:
                break
    assert [label for frame_id, label, _ in read] == [names[frame_id % 3] for frame_id, _, _ in read], read
    assert min(score for *_, score in read) > 0.9, read

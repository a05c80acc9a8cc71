"""``seedcam capture`` against the emulated board: class folders and the YOLO layout, read back by the tools."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from helpers import MODELS
from scripted_scenes import STOP_AND_PLATE

from seedcam.cli import main as seedcam_main
from seedcam_tools.classify.data import scan_image_folder
from seedcam_tools.cli import main as tools_main
from seedcam_tools.datasets import read_detection_folder

pytestmark = pytest.mark.e2e


def _start(firmware_factory, tmp_path: Path):  # noqa: ANN001, ANN202
    scene = tmp_path / "scene.toml"
    scene.write_text(STOP_AND_PLATE)
    config = tmp_path / "fw.toml"
    config.write_text(f'[camera]\nsource = "synthetic"\nscene = "{scene}"\nfps = 10\n\n[tasks]\nenabled = ["detect"]\n')
    return firmware_factory("--config", str(config))


def test_capture_yolo_then_class_folders_read_back_by_the_tools(
    firmware_factory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fw = _start(firmware_factory, tmp_path)
    yolo = tmp_path / "yolo"
    out = io.StringIO()
    assert seedcam_main(["--port", fw.link, "capture", "--layout", "yolo", "-n", "3", "-o", str(yolo), "-q"], out) == 0
    assert out.getvalue().startswith(f"wrote 3 frames to {yolo / 'images'} (yolo layout, ")

    folder = read_detection_folder(yolo)  # the tools' own reader of YOLO folders
    assert len(folder.items) == 3
    info = json.loads((yolo / "device_info.json").read_text())
    (device,) = info
    for item in folder.items:
        assert (item.width, item.height) == (device["frame_width"], device["frame_height"])  # full resolution
        assert "stop" in {o.label for o in item.objects}  # the board's own detection of that frame
    detector = json.loads((MODELS / "detect" / "manifest.json").read_text())["decoder"]["labels"]
    assert list(folder.names) == detector  # every class of the board's detector in id order, not only those seen
    assert (yolo / "data.yaml").read_text() == f"names: {json.dumps(detector)}\nnc: {len(detector)}\n"

    other = tmp_path / "other"
    other.mkdir()
    (other / "data.yaml").write_text('names: ["cone", "person"]\nnc: 2\n')  # another detector's dataset
    capsys.readouterr()
    assert seedcam_main(["--port", fw.link, "capture", "--layout", "yolo", "-n", "1", "-o", str(other), "-q"]) == 1
    err = capsys.readouterr().err
    assert "names class 0 'cone', the sensor's detector 'stop'" in err and err.count("\n") == 1, err
    assert not (other / "images").exists()

    assert tools_main(["eval-detector", "--data", str(yolo), "--model", str(MODELS / "detect")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["samples"] == 3 and report["objects"] == sum(len(i.objects) for i in folder.items)
    assert report["unknown_label_objects"] == 0 and report["map50"] > 0.9  # the board's boxes, found again offline

    classes = tmp_path / "classes"
    for label in ("stop_scene", "other_scene"):
        assert seedcam_main(["--port", fw.link, "capture", "--label", label, "-n", "2", "-o", str(classes), "-q"]) == 0
    scanned = scan_image_folder(classes, min_per_class=1)  # what train-classifier --data reads
    assert sorted(scanned.classes) == ["other_scene", "stop_scene"]
    assert [len(f) for f in scanned.files] == [2, 2]
    assert len(json.loads((classes / "device_info.json").read_text())) == 1  # the same board and boot once

    assert (
        seedcam_main(["--port", fw.link, "capture", "-n", "1", "-o", str(tmp_path / "x")]) == 1
    )  # classes needs --label
    assert "needs --label" in capsys.readouterr().err

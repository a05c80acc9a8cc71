"""``seedcam-tools`` commands, each run for real at toy size."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from seedcam_firmware.inference.manifest import load_manifest
from seedcam_firmware.scene import SceneSpec, render
from seedcam_firmware.tasks.lane import LaneTask
from seedcam_tools.cli import main
from seedcam_tools.detect import DETECT_VERSION
from seedcam_tools.lane import LANE_VERSION
from seedcam_tools.ocr import OCR_VERSION

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("family", "default"), [("lane", LANE_VERSION), ("detect", DETECT_VERSION), ("ocr", OCR_VERSION)]
)
def test_train_commands_default_to_the_shipped_bundles_version(family: str, default: str) -> None:
    # a re-bundle without --version must not name an older model than the one that ships
    assert default == load_manifest(REPO / "models" / family).version


def test_proto_check_passes_on_the_committed_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    assert main(["proto", "--check"]) == 0


def test_proto_outside_a_checkout_is_a_user_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    monkeypatch.chdir(tmp_path)
    assert main(["proto", "--check"]) == 1
    assert "not inside a seedcam checkout" in capsys.readouterr().err


def test_train_lane_smoke_writes_a_bundle_the_firmware_runs(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    out = tmp_path / "lane"
    code = main(
        [
            "train-lane",
            "--out",
            str(out),
            "--work",
            str(tmp_path / "work"),
            "--samples",
            "64",
            "--epochs",
            "1",
            "--eval-samples",
            "16",
            "-q",
        ]
    )
    assert code == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["heldout"]) >= {"float32", "int8"}
    assert metrics["export"]  # the float-vs-Keras conversion check ran
    for precision in ("int8", "float32"):
        manifest = load_manifest(out, precision=precision)  # also verifies the sha256
        task = LaneTask(manifest, num_threads=1)
        image, _ = render(SceneSpec(offset_m=0.05))
        lane = task.run(image).lane
        assert lane is not None and np.isfinite(lane.offset_m)
    assert "bundle written to" in capsys.readouterr().out


def test_eval_lane_on_the_shipped_bundle(monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # noqa: ANN001
    monkeypatch.chdir(REPO)
    assert main(["eval-lane", "--precision", "int8", "--seed", "2", "--samples", "40"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok_samples"] > 20
    assert report["offset_mae_m"] < 0.015 and report["heading_mae_deg"] < 1.5

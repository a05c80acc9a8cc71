"""Your own data: rendered frames written as YOLO / ocr.jsonl / lane.jsonl folders score the same through ``--data``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from seedcam_tools.cli import main
from seedcam_tools.detect.data import LABELS
from seedcam_tools.frame_eval import detector_on_frames, lane_on_frames, ocr_on_frames
from seedcam_tools.frames import heldout_frames, write_folders

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "models"


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Path], list]:
    scenes = list(heldout_frames("random", 7, 30))
    plates = list(heldout_frames("random", 7, 20, plate_focus=True))
    out = tmp_path_factory.mktemp("own-data")
    paths = write_folders(scenes + plates, out, LABELS)
    # folders list their images by name; INT8 scores tie often, and ties are ranked in frame order
    frames = sorted(scenes + plates, key=lambda f: f.name)
    return paths, frames


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)


def test_eval_detector_on_a_yolo_folder_reproduces_the_in_tool_figures(folders, capsys) -> None:  # noqa: ANN001
    paths, frames = folders
    assert (paths["detect"] / "data.yaml").is_file() and any((paths["detect"] / "labels").iterdir())
    direct = detector_on_frames(MODELS / "detect", frames)
    via_folder = _cli(["eval-detector", "--model", str(MODELS / "detect"), "--data", str(paths["detect"])], capsys)
    assert direct["objects"] > 20 and direct["difficult_objects"] > 0
    for key in ("map50", "objects", "difficult_objects"):
        assert via_folder[key] == pytest.approx(direct[key])
    assert via_folder["at_threshold"] == pytest.approx(direct["at_threshold"])
    assert via_folder["data"] == str(paths["detect"]) and "seed" not in via_folder  # no held-out block was drawn


def test_eval_detector_on_a_world_names_the_block_it_scored(capsys: pytest.CaptureFixture[str]) -> None:
    direct = detector_on_frames(MODELS / "detect", heldout_frames("random", 7, 30))
    via_world = _cli(
        ["eval-detector", "--model", str(MODELS / "detect"), "--world", "random", "--seed", "7", "--samples", "30"],
        capsys,
    )
    assert (via_world["world"], via_world["block"]) == ("random", 7) and "seed" not in via_world
    assert via_world["map50"] == pytest.approx(direct["map50"]) and via_world["objects"] == direct["objects"]


def test_eval_ocr_on_an_ocr_jsonl_folder_reproduces_the_in_tool_figures(folders, capsys) -> None:  # noqa: ANN001
    paths, frames = folders
    direct = ocr_on_frames(MODELS / "ocr", frames, detect_bundle=MODELS / "detect")
    via_folder = _cli(
        ["eval-ocr", "--model", str(MODELS / "ocr"), "--data", str(paths["ocr"]), "--detector", str(MODELS / "detect")],
        capsys,
    )
    assert direct["given_box"]["plates"] >= 10 and direct["two_stage"]["plates"] >= 20
    assert via_folder["given_box"].pop("errors") == direct["given_box"].pop("errors")
    assert via_folder["given_box"].pop("breakdown") == direct["given_box"].pop("breakdown")
    assert via_folder["given_box"] == pytest.approx(direct["given_box"])
    assert via_folder["two_stage"] == pytest.approx(direct["two_stage"])


def test_eval_lane_on_a_lane_jsonl_folder_reproduces_the_in_tool_figures(folders, capsys) -> None:  # noqa: ANN001
    paths, frames = folders
    direct = lane_on_frames(MODELS / "lane", frames)
    via_folder = _cli(["eval-lane", "--model", str(MODELS / "lane"), "--data", str(paths["lane"])], capsys)
    assert direct["samples"] == 50
    for key in ("samples", "ok_samples", "offset_mae_m", "heading_mae_deg", "status_accuracy"):
        assert via_folder[key] == pytest.approx(direct[key])


def test_a_lane_folder_from_another_camera_is_refused(folders, capsys, tmp_path: Path) -> None:  # noqa: ANN001
    paths, _ = folders
    other = Path(shutil.copytree(paths["lane"], tmp_path / "lane"))
    camera = json.loads((other / "camera.json").read_text())
    (other / "camera.json").write_text(json.dumps({**camera, "pitch_deg": camera["pitch_deg"] + 5}))
    assert main(["eval-lane", "--model", str(MODELS / "lane"), "--data", str(other)]) != 0
    err = capsys.readouterr().err
    assert "pitch_deg" in err and "Traceback" not in err

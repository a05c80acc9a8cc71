"""Leaving one factor out of the randomized world, and ``seedcam-tools ablate-world`` built on it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from seedcam_tools.cli import main as tools_main
from seedcam_tools.frame_eval import lane_on_frames
from seedcam_tools.frames import heldout_frames
from seedcam_tools.world import WORLD_FACTORS, WorldScene, render_world_scene
from seedcam_tools.world_ablation import ablate_world, format_ablation, task_factors

MODELS = Path(__file__).resolve().parents[2] / "models"
SEEDS = range(10_400_000, 10_400_012)
#: factors without which every labelled object keeps its box (roll and the camera move objects in and out of view)
SAME_BOXES = (
    "bends",
    "line_looks",
    "extra_lines",
    "floor_texture",
    "background",
    "distractors",
    "face_wear",
    "exposure",
    "blur",
    "sensor_noise",
    "jpeg",
)


def _objects(scene: WorldScene) -> list[tuple[str, str, tuple[float, float, float, float]]]:
    return [(o.label, o.text, o.box) for o in scene.objects]


@pytest.mark.parametrize("plate_focus", [False, True])
def test_a_factor_left_out_changes_the_frames_and_nothing_else_of_the_scene(plate_focus: bool) -> None:
    scenes = {seed: render_world_scene(seed, plate_focus=plate_focus) for seed in SEEDS}
    for factor in WORLD_FACTORS:
        if factor == "objects" and plate_focus:
            continue
        changed = 0
        for seed, full in scenes.items():
            ablated = render_world_scene(seed, plate_focus=plate_focus, without=[factor])
            changed += not np.array_equal(ablated.image, full.image)
            assert ablated.lane.offset_m == full.lane.offset_m and ablated.lane.heading_rad == full.lane.heading_rad
            if factor in SAME_BOXES:
                # the same draws after the factor: the same objects, the same plate texts, the same boxes
                assert _objects(ablated) == _objects(full), (factor, seed)
            if factor in SAME_BOXES and factor not in ("bends", "line_looks"):
                # the roll is the scene's last draw: the same line mask means every draw before it was made
                assert np.array_equal(ablated.mask, full.mask), (factor, seed)
        assert changed > 0, f"leaving out {factor} changed none of {len(SEEDS)} scenes"


def test_without_objects_a_lane_scene_has_no_labelled_object_and_without_distractors_all_are_labelled() -> None:
    with_objects = [s for s in SEEDS if render_world_scene(s).objects]
    assert with_objects
    for seed in with_objects:
        assert render_world_scene(seed, without=["objects"]).objects == ()
    assert all(o.label for s in SEEDS for o in render_world_scene(s, without=["distractors"]).objects)


def test_unknown_or_impossible_factors_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown world factor.*sky.*known: camera_jitter"):
        render_world_scene(1, without=["sky"])
    with pytest.raises(ValueError, match="plate_focus"):
        render_world_scene(1, plate_focus=True, without=["objects"])
    with pytest.raises(ValueError, match="only the random world"):
        heldout_frames("other", 0, 5, without=["roll"])
    with pytest.raises(ValueError, match="detect frames cannot leave out objects"):
        ablate_world(MODELS, "detect", frames=2, factors=["objects"])
    with pytest.raises(ValueError, match="knows the tasks"):
        task_factors("segment")
    assert "objects" in task_factors("lane") and "objects" not in task_factors("ocr")


def test_ablation_scores_the_same_seeds_with_and_without_each_factor() -> None:
    report = ablate_world(MODELS, "lane", frames=24, block=4, factors=["roll", "background"], add_one=True)
    assert report["model"].startswith("lane-v3 ") and report["frames"] == 24 and report["seed_block"] == 4
    full = lane_on_frames(MODELS / "lane", heldout_frames("random", 4, 24))
    assert report["all"]["offset_mae_m"] == pytest.approx(full["offset_mae_m"])
    assert report["all"]["status_accuracy"] == pytest.approx(full["status_accuracy"])
    no_roll = lane_on_frames(MODELS / "lane", heldout_frames("random", 4, 24, without=["roll"]))
    entry = report["without"]["roll"]
    assert entry["figures"]["heading_mae_deg"] == pytest.approx(no_roll["heading_mae_deg"])
    assert entry["change"]["heading_mae_deg"] == pytest.approx(no_roll["heading_mae_deg"] - full["heading_mae_deg"])
    table = format_ablation(report).splitlines()
    assert table[0].split()[:3] == ["frames", "offset", "MAE"]
    assert table[2].startswith("all factors")
    gains = [-report["without"][f]["change"]["offset_mae_m"] for f in ("roll", "background")]
    first = ("roll", "background")[int(np.argmax(gains))]
    assert table[3].startswith(f"without {first}"), table  # the factor that costs the model most comes first
    plain = lane_on_frames(MODELS / "lane", heldout_frames("random", 4, 24, without=["roll", "background"]))
    assert report["without_all"]["factors"] == ["roll", "background"]
    assert report["without_all"]["figures"]["offset_mae_m"] == pytest.approx(plain["offset_mae_m"])
    assert table[5].startswith("without all of them")
    only_roll = lane_on_frames(MODELS / "lane", heldout_frames("random", 4, 24, without=["background"]))
    assert report["only"]["roll"]["figures"]["status_accuracy"] == pytest.approx(only_roll["status_accuracy"])
    assert report["only"]["roll"]["change"]["offset_mae_m"] == pytest.approx(
        only_roll["offset_mae_m"] - plain["offset_mae_m"]
    )
    assert {line.split()[2] for line in table[6:8]} == {"roll", "background"}  # "none but <factor>"


def test_the_cli_writes_the_report_and_refuses_a_factor_with_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ablation.json"
    code = tools_main(
        ["ablate-world", "--task", "ocr", "--models", str(MODELS), "--frames", "12", "--factors", "face_wear"]
        + ["--json", str(out), "-q"]
    )
    assert code == 0
    report = json.loads(out.read_text())
    assert report["task"] == "ocr" and set(report["without"]) == {"face_wear"}
    assert 0.0 <= report["all"]["given_box_line_accuracy"] <= 1.0
    assert "plates read (true box)" in capsys.readouterr().out
    code = tools_main(["ablate-world", "--task", "detect", "--models", str(MODELS), "--factors", "objects,sky"])
    assert code == 1
    assert "cannot leave out objects, sky" in capsys.readouterr().err

"""The independent evaluation world: API, determinism, truth boxes, lane truth geometry and statistics."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from seedcam_tools.otherworld import OTHERWORLD_LABELS, OtherLane, OtherObject, OtherScene, render_scene
from seedcam_tools.otherworld.assets import assets_available
from seedcam_tools.otherworld.camera import sample_camera
from seedcam_tools.otherworld.markings import sample_lane_plan
from seedcam_tools.otherworld.plates import random_plate_text
from seedcam_tools.otherworld.truth import PLATE_ALPHABET, is_difficult, valid_plate_text

pytestmark = pytest.mark.skipif(
    not assets_available(), reason="evaluation-world assets missing: scripts/evalworld-assets.sh"
)

N_STATS = 200
W, H = 320, 240


@pytest.fixture(scope="module")
def scenes() -> list[OtherScene]:
    return [render_scene(s) for s in range(N_STATS)]


def test_api_names_and_types() -> None:
    assert OTHERWORLD_LABELS == ("stop", "speed_limit", "turn_left", "turn_right", "crossing", "parking", "plate")
    scene = render_scene(3)
    assert isinstance(scene, OtherScene) and isinstance(scene.lane, OtherLane) and scene.seed == 3
    assert scene.image.shape == (H, W, 3) and scene.image.dtype == np.uint8
    assert all(isinstance(o, OtherObject) for o in scene.objects)
    with pytest.raises(AttributeError):
        scene.lane.status = "ok"  # type: ignore[misc]


@pytest.mark.parametrize("bad", [-1, -100, 1.5, "3", None, True])
def test_nonsense_seeds_are_rejected(bad: object) -> None:
    with pytest.raises(ValueError, match="seed"):
        render_scene(bad)  # type: ignore[arg-type]


def test_same_seed_same_scene_and_seeds_differ() -> None:
    a, b = render_scene(11), render_scene(11)
    np.testing.assert_array_equal(a.image, b.image)
    assert a.objects == b.objects and a.lane == b.lane
    c = render_scene(12)
    assert not np.array_equal(a.image, c.image)
    assert render_scene(np.int64(11)).lane == a.lane


def test_plate_texts_follow_the_rules() -> None:
    rng = np.random.default_rng(0)
    texts = [random_plate_text(rng) for _ in range(500)]
    assert all(valid_plate_text(t) for t in texts)
    assert {len(t) for t in texts} >= {3, 5, 8}
    assert any("-" in t for t in texts)
    for bad in ("-AB1", "AB1-", "A--B", "AB", "ABCDEFGHI", "ab12", "A B1"):
        assert not valid_plate_text(bad)


def test_difficult_rule() -> None:
    assert is_difficult((0, 0, 7.5, 30), 1.0, 0.0)
    assert not is_difficult((0, 0, 8.5, 30), 1.0, 0.0)
    assert is_difficult((0, 0, 30, 30), 0.6, 0.0)
    assert is_difficult((0, 0, 30, 30), 1.0, 0.5)


def test_truth_records_are_well_formed(scenes: list[OtherScene]) -> None:
    labels: Counter[str] = Counter()
    for scene in scenes:
        assert scene.lane.status in ("ok", "one_line", "lost")
        assert abs(scene.lane.offset_m) <= 0.15 and abs(scene.lane.heading_rad) <= 0.30
        assert abs(scene.lane.curvature_per_m) <= 2.0
        assert len(scene.objects) <= 4
        for o in scene.objects:
            labels[o.label] += 1
            assert o.label in OTHERWORLD_LABELS
            x0, y0, x1, y1 = o.box
            assert 0 <= x0 < x1 <= W and 0 <= y0 < y1 <= H
            if min(x1 - x0, y1 - y0) < 8:
                assert o.difficult
            if o.label == "plate":
                assert valid_plate_text(o.text) and set(o.text) <= set(PLATE_ALPHABET)
            elif o.label == "speed_limit":
                assert o.text.isdigit() and 5 <= int(o.text) <= 120
            else:
                assert o.text == ""
    assert set(labels) == set(OTHERWORLD_LABELS), "every label should occur in 200 scenes"
    total = sum(labels.values())
    difficult = sum(o.difficult for s in scenes for o in s.objects)
    assert difficult < 0.4 * total, "most objects should be fair to judge"
    plates = [o.box[2] - o.box[0] for s in scenes for o in s.objects if o.label == "plate"]
    assert 0.2 < np.mean(np.array(plates) >= 44) < 0.9, "plates should often, not always, be readable"


def _colour_fraction(image: np.ndarray, box: tuple[float, float, float, float], kind: str) -> float:
    x0, y0, x1, y1 = (int(round(np.clip(v, 0, lim))) for v, lim in zip(box, (W, H, W, H), strict=True))
    patch = image[y0:y1, x0:x1].astype(np.int32)
    if patch.size == 0:
        return float("nan")
    b, g, r = patch[..., 0], patch[..., 1], patch[..., 2]
    if kind == "red":
        hit = (r > g + 35) & (r > b + 25)
    else:
        hit = (b > r + 35) & (b > g + 5)
    return float(hit.mean())


def test_boxes_hold_the_sign_colours(scenes: list[OtherScene]) -> None:
    red, blue, empty = [], [], []
    for scene in scenes:
        for o in scene.objects:
            w, h = o.box[2] - o.box[0], o.box[3] - o.box[1]
            if o.difficult or min(w, h) < 20:
                continue
            if o.label == "stop":
                red.append(_colour_fraction(scene.image, o.box, "red"))
                empty.append(_colour_fraction(scene.image, (o.box[0] - w, o.box[1] - h, o.box[0], o.box[1]), "red"))
            elif o.label in ("turn_left", "turn_right"):
                blue.append(_colour_fraction(scene.image, o.box, "blue"))
    assert len(red) >= 4 and len(blue) >= 4
    assert np.median(red) > 0.35, "a large stop sign's box should be mostly red"
    assert np.median(blue) > 0.3, "a large turn sign's box should be mostly blue"
    assert np.median(red) > np.nanmedian(empty) + 0.25, "the red should be inside the box, not beside it"


def _boundary_points(lane: OtherLane, width: float, side: float, arcs: np.ndarray) -> np.ndarray:
    """Car-frame floor points of a boundary from the truth (independent lane-frame maths)."""
    k = lane.curvature_per_m
    if abs(k) < 1e-6:
        cx, cy, nx, ny = arcs, np.zeros_like(arcs), np.zeros_like(arcs), np.ones_like(arcs)
    else:
        cx, cy = np.sin(k * arcs) / k, (1 - np.cos(k * arcs)) / k
        nx, ny = -np.sin(k * arcs), np.cos(k * arcs)
    xl, yl = cx + side * nx, cy + side * ny
    c, s = math.cos(lane.heading_rad), math.sin(lane.heading_rad)
    dy = yl - lane.offset_m
    return np.stack([c * xl + s * dy, -s * xl + c * dy, np.zeros_like(xl)], axis=1)


def test_lane_truth_matches_the_painted_boundaries(scenes: list[OtherScene]) -> None:
    checked, passed = 0, 0
    for scene in scenes:
        rng = np.random.default_rng(scene.seed)
        cam = sample_camera(rng)
        plan = sample_lane_plan(rng)
        assert plan.offset == scene.lane.offset_m and plan.path.kappa0 == scene.lane.curvature_per_m
        bounds = [m for m in plan.lines if m.role in ("left", "right")]
        breaks = [p.start_arc for p in plan.path.pieces[1:]]
        if (
            scene.lane.status != "ok"
            or len(bounds) != 2
            or any(m.dash or m.wear > 0 or m.opacity < 0.85 for m in bounds)
            or (breaks and breaks[0] < 0.5)
        ):
            continue
        arcs = np.linspace(0.25, 0.45, 9)
        diffs = []
        for m in bounds:
            side = plan.width / 2 if m.role == "left" else -plan.width / 2
            on, _ = cam.project(_boundary_points(scene.lane, plan.width, side, arcs))
            off, _ = cam.project(_boundary_points(scene.lane, plan.width, side * 1.0 + math.copysign(0.07, side), arcs))
            for (u, v), (uo, vo) in zip(on, off, strict=True):
                if 2 <= u < W - 2 and 2 <= v < H - 2 and 2 <= uo < W - 2 and 2 <= vo < H - 2:
                    p = scene.image[int(v), int(u)].astype(float)
                    q = scene.image[int(vo), int(uo)].astype(float)
                    diffs.append(np.abs(p - q).sum())
        if len(diffs) >= 6:
            checked += 1
            passed += int(np.median(diffs) > 40)
    assert checked >= 15
    # a few scenes have a box or cone standing on the line right there
    assert passed >= 0.85 * checked, f"paint found where the truth puts the boundaries in {passed}/{checked} scenes"


def test_lane_truth_would_catch_a_sign_error(scenes: list[OtherScene]) -> None:
    """The geometry check above must fail for a lane truth with a flipped offset and heading."""
    misses = 0
    tried = 0
    for scene in scenes:
        lane = scene.lane
        if lane.status != "ok" or abs(lane.offset_m) < 0.08:
            continue
        rng = np.random.default_rng(scene.seed)
        cam = sample_camera(rng)
        plan = sample_lane_plan(rng)
        wrong = OtherLane(-lane.offset_m, -lane.heading_rad, lane.curvature_per_m, lane.status)
        for truth, count in ((lane, False), (wrong, True)):
            pts = _boundary_points(truth, plan.width, plan.width / 2, np.linspace(0.25, 0.45, 5))
            uv, _ = cam.project(pts)
            good = [
                np.abs(scene.image[int(v), int(u)].astype(float) - scene.image[int(v), int(min(u + 12, W - 1))]).sum()
                for u, v in uv
                if 0 <= u < W and 0 <= v < H
            ]
            if count and good:
                tried += 1
                misses += int(np.median(good) < 40)
        if tried >= 10:
            break
    assert tried >= 5 and misses >= 0.5 * tried


def test_status_statistics(scenes: list[OtherScene]) -> None:
    counts = Counter(s.lane.status for s in scenes)
    frac = {k: counts[k] / len(scenes) for k in ("ok", "one_line", "lost")}
    assert 0.70 <= frac["ok"] <= 0.93, frac
    assert 0.06 <= frac["one_line"] <= 0.22, frac
    assert 0.01 <= frac["lost"] <= 0.09, frac
    curv = np.array([s.lane.curvature_per_m for s in scenes])
    assert (np.abs(curv) > 1.0).mean() > 0.08 and (np.abs(curv) < 0.1).mean() > 0.15
    assert (curv > 0.3).any() and (curv < -0.3).any()

"""The randomized training world: determinism, truth that matches the pixels, lane status from what is in view."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fontTools.fontBuilder import FontBuilder
from fontTools.pens.ttGlyphPen import TTGlyphPen
from fontTools.ttLib import TTFont

from seedcam_tools.detect.data import DETECT_INPUT, LABELS, difficult, make_world_sample
from seedcam_tools.ocr.data import ALPHABET, OCR_INPUT
from seedcam_tools.ocr.data import make_world_sample as make_world_plate
from seedcam_tools.otherworld.assets import FONT_STYLES, font_path
from seedcam_tools.world import (
    IN_VIEW_PIXELS,
    font_families,
    font_paths,
    plate_text,
    render_world_scene,
    world_assets_id,
)
from seedcam_tools.world import assets as world_assets
from seedcam_tools.world.assets import REQUIRED_CHARACTERS, usable_fonts
from seedcam_tools.world.faces import object_face, plate_face

_SCENES = [render_world_scene(s) for s in range(40)]


def test_a_scene_is_a_pure_function_of_its_seed() -> None:
    a, b = render_world_scene(7), render_world_scene(7)
    np.testing.assert_array_equal(a.image, b.image)
    assert a.objects == b.objects and a.lane == b.lane
    assert not np.array_equal(a.image, render_world_scene(8).image)
    with pytest.raises(ValueError, match="seed"):
        render_world_scene(-1)


def test_truth_boxes_lie_in_the_frame_with_known_labels() -> None:
    objects = [o for s in _SCENES for o in s.objects]
    assert len(objects) > 30
    for o in objects:
        x0, y0, x1, y1 = o.box
        assert 0 <= x0 < x1 <= 320 and 0 <= y0 < y1 <= 240
        assert o.label in LABELS
    assert {o.label for o in objects} == set(LABELS)  # 40 scenes hold every class
    assert 0 < sum(o.difficult for o in objects) < len(objects) / 2


def test_many_fonts_and_designs_are_drawn() -> None:
    assert len(font_families()) >= 100 and len(font_paths()) >= 300
    rng = np.random.default_rng(0)
    stops = [object_face(rng, "stop").bgr for _ in range(6)]
    assert len({s.tobytes() for s in stops}) == 6
    widths = {plate_face(rng, t).bgr.shape[1] for t in ("AB1", "AB-1234", "Q9", "XYZ-98765")}
    assert len(widths) >= 3  # plate widths follow the text (or a random aspect)


def test_the_world_assets_id_names_the_pool_and_changes_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    families, files = len(font_families()), len(font_paths())
    found = world_assets_id()
    assert found.startswith(f"{files} font files in {families} families, ") and found == world_assets_id()
    assert "/" not in found  # file names, never a machine's folders
    fewer = font_families()[1:]
    monkeypatch.setattr(world_assets, "font_families", lambda: fewer)
    assert world_assets_id().startswith(f"{files - len(font_families()[0])} font files in {families - 1} families")
    assert world_assets_id().split(", ")[-1] != found.split(", ")[-1]


def _family_name(path: str) -> str:
    font = TTFont(path, lazy=True)
    return str(font["name"].getDebugName(16) or font["name"].getDebugName(1))


def _font_file(path: Path, family: str, empty: str = "", missing: str = "") -> None:
    """A TrueType font drawing a square for every required character but ``empty`` (no outline) and ``missing``."""
    chars = [ch for ch in REQUIRED_CHARACTERS if ch not in missing]
    names = [".notdef"] + [f"g{ord(ch)}" for ch in chars]
    glyphs = {}
    for name in names:
        pen = TTGlyphPen(None)
        if name == ".notdef" or chr(int(name[1:])) not in empty + " ":
            pen.moveTo((100, 0))
            for corner in ((100, 700), (500, 700), (500, 0)):
                pen.lineTo(corner)
            pen.closePath()
        glyphs[name] = pen.glyph()
    fb = FontBuilder(1000, isTTF=True)
    fb.setupGlyphOrder(names)
    fb.setupCharacterMap({ord(ch): f"g{ord(ch)}" for ch in chars})
    fb.setupGlyf(glyphs)
    fb.setupHorizontalMetrics({name: (600, 100) for name in names})
    fb.setupHorizontalHeader(ascent=800, descent=-200)
    fb.setupNameTable({"familyName": family, "styleName": "Regular"})
    fb.setupOS2()
    fb.setupPost()
    fb.save(str(path))


def test_fonts_that_cannot_draw_what_the_world_writes_are_left_out(tmp_path: Path) -> None:
    _font_file(tmp_path / "Whole.ttf", "Whole")
    _font_file(tmp_path / "EmptyDigit.ttf", "Empty Digit", empty="7")  # mapped, but draws nothing
    _font_file(tmp_path / "NoQ.ttf", "No Q", missing="Q")  # would draw the missing-glyph box
    _font_file(tmp_path / "LinBiolinum_K.ttf", "Keycaps")  # Linux Biolinum's keyboard font, skipped by name
    assert usable_fonts((str(tmp_path),)) == {"Whole": (str(tmp_path / "Whole.ttf"),)}
    assert not any("LinBiolinum_K" in p for p in font_paths())


def test_the_training_world_draws_none_of_the_evaluation_worlds_fonts() -> None:
    evaluation = {name for names in FONT_STYLES.values() for name in names}
    evaluation_families = {_family_name(font_path(name)) for name in evaluation}
    assert not {Path(p).name for p in font_paths()} & evaluation
    assert not {_family_name(family[0]) for family in font_families()} & evaluation_families


def test_plate_texts_use_the_ocr_alphabet_without_edge_dashes() -> None:
    rng = np.random.default_rng(1)
    for _ in range(300):
        t = plate_text(rng)
        assert 3 <= len(t) <= 8 and set(t) <= set(ALPHABET)
        assert not t.startswith("-") and not t.endswith("-") and "--" not in t


def test_a_large_unhidden_sign_is_where_its_box_says() -> None:
    """The box of a big, non-difficult stop sign is mostly red.

    Glare and exposure are left out (they can wash a face out to near white; the boxes are the same
    with them): what is checked is where the box is, not the colour of every face.
    """
    found = 0
    for seed in range(400):
        scene = render_world_scene(seed, without=("face_wear", "exposure"))
        for o in scene.objects:
            x0, y0, x1, y1 = (round(v) for v in o.box)
            if o.label != "stop" or o.difficult or (x1 - x0) < 30:
                continue
            b, g, r = (scene.image[y0:y1, x0:x1, i].astype(int) for i in range(3))
            red = (r > g + 40) & (r > b + 40)
            assert red.mean() > 0.25
            found += 1
        if found >= 3:
            break
    assert found >= 3


def test_lane_status_comes_from_what_is_in_view() -> None:
    scenes = [render_world_scene(s, objects=False) for s in range(120)]
    for scene in scenes:
        painted = [int(np.count_nonzero(scene.mask[..., k] >= 0.5)) for k in range(2)]
        assert scene.lane.left_in_view == (painted[0] >= IN_VIEW_PIXELS)
        assert scene.lane.right_in_view == (painted[1] >= IN_VIEW_PIXELS)
    counts = {s: sum(scene.lane.status == s for scene in scenes) for s in ("ok", "one_line", "lost")}
    assert counts["ok"] > 60 and counts["one_line"] > 3


def test_a_third_of_the_scenes_bend_ahead_and_the_bend_changes_only_the_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    from seedcam_tools.world import scene as world_scene

    rates = [world_scene._bend(s, False) for s in range(600)]
    bent = [s for s, r in enumerate(rates) if r]
    assert 150 < len(bent) < 250 and max(rates) > 3.0 and min(rates) < -3.0
    seed = bent[0]
    with_bend = render_world_scene(seed)
    monkeypatch.setattr(world_scene, "_bend", lambda seed, plate_focus: 0.0)
    circle = render_world_scene(seed)
    assert with_bend.objects == circle.objects and with_bend.lane.offset_m == circle.lane.offset_m
    assert with_bend.lane.curvature_per_m == circle.lane.curvature_per_m
    assert not np.array_equal(with_bend.mask, circle.mask)


def test_world_detection_samples_mark_difficult_objects_for_training_to_ignore() -> None:
    samples = [make_world_sample(s) for s in range(60)]
    codes = np.concatenate([c for _, _, c in samples])
    assert (codes >= 0).sum() > 20 and (codes < 0).sum() > 0
    assert codes.min() >= difficult(len(LABELS) - 1)
    for pixels, boxes, _ in samples:
        assert pixels.shape == (DETECT_INPUT.height, DETECT_INPUT.width, 3)
        assert np.all((boxes >= 0) & (boxes <= 1))


def test_world_plate_crops_are_plates() -> None:
    pixels, text = make_world_plate(3)
    assert pixels.shape == (OCR_INPUT.height, OCR_INPUT.width, 3) and set(text) <= set(ALPHABET)
    # the crop is the plate: its middle has text-like contrast
    grey = pixels.mean(axis=2)
    assert grey[8:24, 16:112].std() > 15


def test_a_share_of_the_scenes_paints_its_boundaries_in_any_colour_on_any_floor() -> None:
    from seedcam_tools.world.lines import LINE_LOOK_SHARE, MIN_COLOUR_STEP, _colour_step, draw_line_look

    grey = (0.35, 0.35, 0.37)
    looks = [draw_line_look(s, False, grey) for s in range(400)]
    drawn = [look for look in looks if look is not None]
    assert abs(len(drawn) / len(looks) - LINE_LOOK_SHARE) < 0.08
    for look in drawn:
        assert _colour_step(np.asarray(look.line_bgr), np.asarray(look.floor_bgr)) >= MIN_COLOUR_STEP
    assert 0.3 < np.mean([look.floor_bgr != grey for look in drawn]) < 0.9  # floors of their own, or the scene's
    dark_on_light = [look for look in drawn if np.mean(look.line_bgr) < np.mean(look.floor_bgr) - 0.2]
    assert len(dark_on_light) > 10  # tape darker than its floor, which the classic renderer never draws
    assert any(look.wear > 0.3 for look in drawn) and any(look.ragged > 0.2 for look in drawn)


def test_painted_boundaries_are_where_their_mask_says_and_wear_takes_them_out_of_view() -> None:
    import dataclasses

    from seedcam_firmware.scene import DEFAULT_CAMERA, SceneSpec, render_with_mask
    from seedcam_tools.world.lines import LineLook, paint_boundaries, without_boundaries

    spec = SceneSpec(offset_m=0.02, heading_rad=0.05, curvature_per_m=0.3, lane_width_m=0.45, right_style="dashed")
    look = LineLook((0.7, 0.7, 0.7), (0.05, 0.05, 0.05), 0.04, 0.2, 0.1, 0.0, 0.1, 0.0, seed=3)
    floor, _, _ = render_with_mask(without_boundaries(spec, look), DEFAULT_CAMERA)
    image = floor.copy()
    mask = paint_boundaries(image, spec, DEFAULT_CAMERA, look)
    grey = image.mean(axis=2)
    painted, bare = mask.max(axis=2) >= 0.9, mask.max(axis=2) == 0
    assert painted.any() and np.all(grey[painted] < 0.5 * floor.mean(axis=2)[painted])  # black on light
    np.testing.assert_array_equal(image[bare], floor[bare])
    in_view = [int(np.count_nonzero(mask[..., k] >= 0.5)) for k in range(2)]
    assert in_view[1] < 0.8 * in_view[0]  # the right boundary is dashed

    worn = dataclasses.replace(look, wear=0.6)
    worn_mask = paint_boundaries(floor.copy(), spec, DEFAULT_CAMERA, worn)
    assert np.count_nonzero(worn_mask >= 0.5) < 0.6 * np.count_nonzero(mask >= 0.5)
    hidden = dataclasses.replace(spec, left_style="none", right_contrast=0.05)  # gone, and worn to invisible
    assert not paint_boundaries(floor.copy(), hidden, DEFAULT_CAMERA, look).any()


def test_the_line_look_changes_only_the_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    from seedcam_tools.world import scene as world_scene
    from seedcam_tools.world.lines import draw_line_look

    seed = next(s for s in range(50) if draw_line_look(s, False, (0.3, 0.3, 0.3)) is not None)
    looked = render_world_scene(seed)
    monkeypatch.setattr(world_scene, "draw_line_look", lambda seed, plate_focus, floor: None)
    plain = render_world_scene(seed)
    assert looked.objects == plain.objects and looked.lane.offset_m == plain.lane.offset_m
    assert not np.array_equal(looked.image, plain.image)

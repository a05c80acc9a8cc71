"""Synthetic scene generator: geometry, truth boxes, determinism, the synthetic camera."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pytest

from seedcam_firmware.camera import synthetic
from seedcam_firmware.camera.synthetic import SyntheticCamera
from seedcam_firmware.errors import CameraError
from seedcam_firmware.scene import (
    DEFAULT_CAMERA,
    SceneObject,
    SceneSpec,
    SyntheticDrive,
    random_scene,
    render,
    render_clean,
    render_with_mask,
)
from seedcam_firmware.scene.geometry import lateral_and_arc, painted_stretch, turned_angle
from seedcam_firmware.scene.scripted import SceneScript

CX = DEFAULT_CAMERA.principal_point[0]
PLAIN = SceneSpec(noise_sigma=0.0, texture_strength=0.0)


def _line_x(mask: np.ndarray, row: int, channel: int) -> float:
    cols = np.flatnonzero(mask[row, :, channel] > 0.5)
    assert cols.size, f"line {channel} not on row {row}"
    return float(cols.mean())


def _centre_x(spec: SceneSpec, row: int) -> float:
    _, _, mask = render_with_mask(spec)
    return 0.5 * (_line_x(mask, row, 0) + _line_x(mask, row, 1))


def test_centred_straight_lane_is_symmetric() -> None:
    _, _, mask = render_with_mask(PLAIN)
    for row in (100, 120, 140):
        assert _line_x(mask, row, 0) < CX < _line_x(mask, row, 1)
        assert abs(0.5 * (_line_x(mask, row, 0) + _line_x(mask, row, 1)) - CX) < 1.0


def test_car_left_of_centre_sees_lane_centre_to_the_right() -> None:
    assert _centre_x(replace(PLAIN, offset_m=0.1), 135) > CX + 20
    assert _centre_x(replace(PLAIN, offset_m=-0.1), 135) < CX - 20


def test_car_yawed_left_sees_the_lane_run_off_to_the_right() -> None:
    # the centre line passes under the camera, so its image is the vertical
    # through the vanishing point, which sits f * tan(heading) right of centre
    spec = replace(PLAIN, heading_rad=0.2)
    vp = CX + DEFAULT_CAMERA.focal_px * np.tan(0.2)
    for row in (90, 100, 115):  # rows where both lines are inside the image
        assert _centre_x(spec, row) == pytest.approx(vp, abs=1.5)
    assert _centre_x(replace(spec, heading_rad=-0.2), 110) == pytest.approx(2 * CX - vp, abs=1.5)


def test_left_bending_lane_curves_left() -> None:
    straight = _centre_x(PLAIN, 105)
    assert _centre_x(replace(PLAIN, curvature_per_m=0.8), 105) < straight - 10
    assert _centre_x(replace(PLAIN, curvature_per_m=-0.8), 105) > straight + 10
    # nearer the car the curvature matters less
    near = _centre_x(replace(PLAIN, curvature_per_m=0.8), 140)
    assert CX - 25 < near < CX - 5


def test_a_curvature_rate_bends_the_lane_ahead_and_keeps_the_pose_at_the_car() -> None:
    def right_line(spec: SceneSpec, row: int) -> float:
        return _line_x(render_with_mask(spec)[2], row, 1)

    circle = replace(PLAIN, curvature_per_m=0.5)
    s_bend = replace(circle, curvature_rate_per_m2=-3.0)  # the curvature turns right from 1/6 m ahead
    tightening = replace(circle, curvature_rate_per_m2=3.0)
    for bent in (s_bend, tightening):  # the near field is the pose: it moves by the s^3 term only
        assert right_line(bent, 165) == pytest.approx(right_line(circle, 165), abs=2.0)
    assert right_line(s_bend, 110) > right_line(circle, 110) + 10  # far ahead it swings the other way
    assert right_line(tightening, 110) < right_line(circle, 110) - 10


def test_lateral_and_arc_shifts_the_circle_by_the_third_order_term_of_the_rate() -> None:
    xl = np.array([0.0, 0.5, 1.0, 2.0])
    yl = np.array([0.1, 0.0, -0.2, 0.3])
    lat0, arc0 = lateral_and_arc(xl, yl, 0.4)
    lat, arc = lateral_and_arc(xl, yl, 0.4, 1.5)
    np.testing.assert_allclose(arc, arc0)
    np.testing.assert_allclose(lat, lat0 - 1.5 * arc0**3 / 6)
    np.testing.assert_allclose(turned_angle(arc, 0.4, 1.5), 0.4 * arc + 0.75 * arc**2)
    assert turned_angle(arc, 0.4)[0] == 0.0


def test_markings_are_painted_from_behind_the_car_to_the_range_and_not_round_more_than_a_bend() -> None:
    arc = np.array([-0.5, 0.5, 1.5, 2.0, 5.9, 6.1])
    assert painted_stretch(arc, 0.0).tolist() == [False, True, True, True, True, False]
    assert painted_stretch(arc, 1.0).tolist() == [False, True, True, False, False, False]  # turned 2 rad at 2 m
    assert painted_stretch(arc, 0.0, 1.0).tolist() == [False, True, True, False, False, False]  # s^2 / 2 at 2 m


def test_ground_projection_matches_camera_projection() -> None:
    """A floor point projected by the camera lands where inverse perspective put the line."""
    uv, _ = DEFAULT_CAMERA.project(np.array([[0.5, 0.225, 0.0]]))
    _, _, mask = render_with_mask(PLAIN)
    row = round(uv[0, 1])
    assert _line_x(mask, row, 0) == pytest.approx(uv[0, 0], abs=1.5)


def test_truth_box_lands_on_sign_pixels() -> None:
    sign = SceneObject("stop", forward_m=0.8, left_m=0.3)
    with_sign, truth = render(replace(PLAIN, objects=(sign,)))
    without, _ = render(PLAIN)
    (obj,) = truth.objects
    assert obj.kind == "stop"
    h, w = with_sign.shape[:2]
    x0, y0, x1, y1 = obj.box[0] * w, obj.box[1] * h, obj.box[2] * w, obj.box[3] * h
    assert x1 < CX  # a sign on the left appears left of centre
    changed = np.abs(with_sign.astype(int) - without.astype(int)).sum(axis=2) > 30
    ys, xs = np.nonzero(changed)
    above = ys < y1  # ignore the pole under the face
    inside = (xs[above] >= x0 - 1) & (xs[above] <= x1) & (ys[above] >= y0 - 1)
    assert inside.mean() > 0.97
    box_px = changed[int(np.ceil(y0)) : int(y1), int(np.ceil(x0)) : int(x1)]
    assert box_px.mean() > 0.55  # the octagon fills most of its box


def test_plate_text_and_far_objects_ordering() -> None:
    spec = replace(PLAIN, objects=(SceneObject("plate", 1.5, -0.4, "AGV-042"), SceneObject("turn_left", 0.8, 0.35)))
    _, truth = render(spec)
    assert [o.kind for o in truth.objects] == ["turn_left", "plate"]
    assert truth.objects[1].text == "AGV-042"
    assert truth.objects[1].box[0] > 0.5  # right of centre


def test_object_behind_camera_has_no_box() -> None:
    _, truth = render(replace(PLAIN, objects=(SceneObject("stop", -0.5, 0.0),)))
    assert truth.objects == ()


def test_unknown_object_kind_rejected() -> None:
    with pytest.raises(ValueError):
        SceneObject("giraffe", 1.0, 0.0)


def test_missing_line_truth_and_status() -> None:
    _, truth, mask = render_with_mask(replace(PLAIN, right_style="none"))
    assert (truth.lane.left_visible, truth.lane.right_visible) == (True, False)
    assert truth.lane.status == "one_line"
    assert mask[..., 1].max() == 0
    _, truth = render(replace(PLAIN, left_contrast=0.05, right_style="none"))
    assert truth.lane.status == "lost"


def test_random_scenes_are_deterministic_by_seed_and_in_range() -> None:
    a = random_scene(np.random.default_rng(123))
    b = random_scene(np.random.default_rng(123))
    assert a == b
    assert np.array_equal(render(a)[0], render(b)[0])
    assert random_scene(np.random.default_rng(124)) != a
    statuses = set()
    for seed in range(200):
        s = random_scene(np.random.default_rng(seed))
        assert abs(s.offset_m) <= 0.15 and abs(s.heading_rad) <= 0.3 and abs(s.curvature_per_m) <= 1.0
        assert 0.40 <= s.lane_width_m <= 0.50
        statuses.add(("lost", "one_line", "ok")[int(s.left_visible) + int(s.right_visible)])
    assert statuses == {"ok", "one_line", "lost"}


def test_render_is_fast_enough() -> None:
    spec = random_scene(np.random.default_rng(3))
    render(spec)
    t0 = time.perf_counter()
    for _ in range(10):
        render(spec)
    assert (time.perf_counter() - t0) / 10 < 0.06  # ~10 ms on an idle core; generous for CI


def test_drive_is_smooth_deterministic_and_wanders() -> None:
    a, b = SyntheticDrive(7), SyntheticDrive(7)
    specs = [a.step(1 / 30) for _ in range(900)]
    assert specs[:50] == [b.step(1 / 30) for _ in range(50)]
    off = np.array([s.offset_m for s in specs])
    head = np.array([s.heading_rad for s in specs])
    assert np.abs(np.diff(off)).max() < 0.01 and np.abs(np.diff(head)).max() < 0.02
    assert np.ptp(off) > 0.08 and np.abs(off).max() <= 0.15
    assert any(s.objects for s in specs)
    assert SyntheticDrive(8).step(0.1) != SyntheticDrive(7).step(0.1)


def test_synthetic_camera_paces_frames_and_reports_truth() -> None:
    cam = SyntheticCamera(fps=4.0, seed=1)
    first = cam.read(timeout=1.0)
    assert first.frame_id == 0 and first.image.shape == (240, 320, 3) and first.image.dtype == np.uint8
    with pytest.raises(CameraError):
        cam.read(timeout=0.0)  # the next frame is ~250 ms away
    second = cam.read(timeout=2.0)
    assert second.frame_id == 1
    started = [f.timestamp_us - f.timings_us["camera:render"] for f in (first, second)]
    assert started[1] - started[0] >= 240_000  # paced by when rendering starts, whatever a render takes
    assert second.truth.lane.status == "ok"
    cam.close()
    cam.close()
    with pytest.raises(CameraError):
        cam.read(timeout=1.0)


def test_scripted_camera_repeats_the_scene_with_fresh_noise() -> None:
    spec = SceneSpec(offset_m=0.05, objects=(SceneObject("plate", 1.0, 0.3, "AGV-042"),), noise_sigma=0.02)
    with SyntheticCamera(fps=1000.0, scripted=spec, size=(320, 240)) as cam:
        a, b = cam.read(1.0), cam.read(1.0)
    assert a.truth == b.truth and a.truth.lane.offset_m == 0.05
    assert a.truth.objects[0].text == "AGV-042"
    assert not np.array_equal(a.image, b.image)


def test_a_still_scene_is_drawn_once_and_its_frames_are_the_renders_pixels(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scripted scene that does not change is drawn once; every frame is what render() makes with the
    camera's noise generator, bit for bit, and a changed scene is drawn again."""
    still = SceneSpec(offset_m=0.04, objects=(SceneObject("stop", 0.9, 0.3),), noise_sigma=0.02, defocus_sigma_px=0.6)
    moved = replace(still, offset_m=-0.02)
    drawn: list[SceneSpec] = []

    def counting(spec: SceneSpec, *args: object) -> object:
        drawn.append(spec)
        return render_clean(spec, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(synthetic, "render_clean", counting)
    script = [still, still, still, moved, moved]
    with SyntheticCamera(fps=1000.0, seed=5, scripted=SceneScript(((0, still), (3, moved)))) as cam:
        frames = [cam.read(1.0) for _ in script]
    assert drawn == [still, moved]
    noise = np.random.default_rng(5 + 0x5EED)  # the camera's own noise generator, replayed
    for spec, frame in zip(script, frames, strict=True):
        image, truth = render(spec, rng=noise)
        assert np.array_equal(frame.image, image) and frame.truth == truth


def test_a_rendered_frame_is_stamped_when_ready_and_reports_its_render_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The capture stamp marks the end of rendering (a camera's end of readout), not its start."""
    render_ns = 30_000_000
    spans: list[tuple[int, int]] = []

    def slow_render(*args: object, **kwargs: object) -> object:
        started = time.monotonic_ns()
        out = render_clean(*args, **kwargs)  # type: ignore[arg-type]
        while time.monotonic_ns() - started < render_ns:  # a renderer at least 30 ms slow, on the clock itself
            pass
        spans.append((started, time.monotonic_ns()))
        return out

    monkeypatch.setattr(synthetic, "render_clean", slow_render)
    with SyntheticCamera(fps=1000.0, seed=3) as cam:
        frames = [cam.read(timeout=1.0) for _ in range(2)]
        returned_us = time.monotonic_ns() // 1000
    for frame, (started, finished) in zip(frames, spans, strict=True):
        assert finished // 1000 <= frame.timestamp_us <= returned_us  # stamped after the render returned
        render_us = frame.timings_us["camera:render"]
        assert (finished - started) // 1000 <= render_us + 1  # the render time on its own ...
        assert frame.timestamp_us - render_us <= started // 1000 + 1  # ... ending at the stamp
    assert frames[1].timestamp_us > frames[0].timestamp_us

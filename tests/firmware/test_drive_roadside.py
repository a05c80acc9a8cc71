"""The default synthetic drive passes signs and plates, and the shipped detector and OCR find them."""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import MODELS

from seedcam_firmware.config import config_from_dict
from seedcam_firmware.scene import SceneSpec, SyntheticDrive, render
from seedcam_firmware.scene.drive import ROADSIDE_GAP_M, SIGN_KINDS
from seedcam_firmware.scene.geometry import car_to_lane, lateral_and_arc

FPS = 30
SEEDS = range(6)


def drive(seed: int, seconds: float, fps: float = FPS) -> list[SceneSpec]:
    d = SyntheticDrive(seed)
    return [d.step(1 / fps) for _ in range(round(seconds * fps))]


def first_seen(specs: list[SceneSpec], kinds: tuple[str, ...]) -> float | None:
    """Seconds until an object of ``kinds`` is in the scene, None if never."""
    return next((i / FPS for i, s in enumerate(specs) if any(o.kind in kinds for o in s.objects)), None)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_sign_is_there_from_the_start_and_a_plate_within_seconds(seed: int) -> None:
    specs = drive(seed, 30)
    assert first_seen(specs, SIGN_KINDS) == 0.0  # the first object stands in view from the first frame
    plate = first_seen(specs, ("plate",))
    assert plate is not None and plate < 4.5  # (a bend can hide it for a while)
    texts = {o.text for s in specs for o in s.objects if o.kind == "plate"}
    kinds = {o.kind for s in specs for o in s.objects}
    assert len(texts) >= 3 and all(re.fullmatch(r"AGV-\d{3}", t) for t in texts), texts
    assert len(kinds - {"plate"}) >= 3  # several kinds of sign in half a minute
    for s in specs:
        for o in s.objects:
            if o.kind == "speed_limit":
                assert o.text in {"10", "20", "30", "50"}
            elif o.kind != "plate":
                assert o.text == ""


@pytest.mark.parametrize("seed", SEEDS)
def test_something_passes_by_every_few_seconds(seed: int) -> None:
    specs = drive(seed, 60)
    empty = longest = 0
    for s in specs:
        empty = 0 if s.objects else empty + 1
        longest = max(longest, empty)
    # objects stand ROADSIDE_GAP_M apart at 0.4 m/s; one leaves the scene as the next is well in view
    assert longest / FPS < ROADSIDE_GAP_M[1] / 0.4
    on_stage = [len(s.objects) for s in specs]
    assert max(on_stage) <= 4 and np.mean(on_stage) >= 1.0


def test_roadside_objects_stand_beside_the_lane_facing_along_it() -> None:
    for seed in SEEDS:
        for s in drive(seed, 20)[::5]:
            for o in s.objects:
                xl, yl = car_to_lane(o.forward_m, o.left_m, s.offset_m, s.heading_rad)
                lat, arc = lateral_and_arc(np.array([xl]), np.array([yl]), s.curvature_per_m)
                beyond = abs(float(lat[0])) - s.lane_width_m / 2  # past the boundary line, on the outside
                assert 0.02 < beyond < 0.15, (seed, o)
                assert 0.15 < float(arc[0]) < 3.05 and o.forward_m > 0.2
                square = s.curvature_per_m * float(arc[0]) - s.heading_rad  # the lane's normal there, car frame
                assert abs(o.yaw_rad - np.clip(square, -0.7, 0.7)) <= 0.15 + 1e-9


def test_the_roadside_follows_the_distance_driven_not_the_frame_rate() -> None:
    a, b = SyntheticDrive(4), SyntheticDrive(4)
    for _ in range(300):
        sa = a.step(1 / 30)
    for _ in range(100):
        sb = b.step(1 / 10)
    assert [(o.kind, o.text) for o in sa.objects] == [(o.kind, o.text) for o in sb.objects]
    for oa, ob in zip(sa.objects, sb.objects, strict=True):
        assert (oa.forward_m, oa.left_m, oa.yaw_rad) == pytest.approx((ob.forward_m, ob.left_m, ob.yaw_rad), abs=1e-9)
    assert drive(4, 5) == drive(4, 5)  # and the same seed gives the same drive
    assert [o.text for s in drive(4, 10) for o in s.objects] != [o.text for s in drive(5, 10) for o in s.objects]


@pytest.mark.skipif(
    not all((MODELS / task / "manifest.json").exists() for task in ("detect", "ocr")),
    reason="the shipped detect and OCR bundles (models/detect, models/ocr) are needed",
)
@pytest.mark.parametrize("seed", [0, 3])
def test_the_shipped_detector_finds_the_signs_and_reads_the_plates(seed: int) -> None:
    from seedcam_firmware.tasks.detect import load_detect_task
    from seedcam_firmware.tasks.ocr import load_ocr_task

    config = config_from_dict({"models": {"dir": str(MODELS)}})  # the shipped int8 models, default thresholds
    detector = load_detect_task(config)
    ocr = load_ocr_task(config, {"detect": detector})
    signs: set[str] = set()
    texts: list[str] = []
    truth_texts: set[str] = set()
    unexpected = frames = 0
    for spec in drive(seed, 8)[::2]:  # the first 8 s of the drive, 15 frames a second
        image, truth = render(spec)
        found = detector.run(image)
        kinds = {o.kind for o in truth.objects}
        labels = {d.label for d in found.detections}
        unexpected += len(labels - kinds)
        signs |= (labels & kinds) - {"plate"}
        read = ocr.run(image, {"detect": found})
        texts += [line.text for line in read.text_lines]
        truth_texts |= {o.text for o in truth.objects if o.kind == "plate"}
        frames += 1
    assert signs, "no sign of the drive detected"
    assert truth_texts and truth_texts & set(texts), (truth_texts, texts)  # a plate read right
    assert sum(t in truth_texts for t in texts) >= 5  # ... in several frames as the car passes it
    assert unexpected <= frames // 10

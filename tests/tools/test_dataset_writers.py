"""Your-own-data folder writers (YOLO, COCO, OCR, lane) and the camera check."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from datasets_fixtures import CAMERA, NAMES, H, Truth, W, det_items, img, raises, save

from seedcam_tools.datasets import (
    CameraInfo,
    CameraMismatch,
    LabelledBox,
    check_camera,
    load_image,
    read_detection_folder,
    read_lane_folder,
    read_ocr_folder,
    write_coco_file,
    write_lane_folder,
    write_ocr_folder,
    write_yolo_folder,
)

# ---------------------------------------------------------------- writers


def test_writers_refuse_foreign_non_empty_folders(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    for write in (
        lambda: write_yolo_folder(tmp_path, NAMES, []),
        lambda: write_coco_file(tmp_path, NAMES, []),
        lambda: write_ocr_folder(tmp_path, []),
        lambda: write_lane_folder(tmp_path, CAMERA, []),
    ):
        raises("not empty and is not a", write)
    coco = write_coco_file(tmp_path / "coco", NAMES, det_items()).parent
    raises("not a YOLO dataset", write_yolo_folder, coco, NAMES, [])
    raises("exists and is not a folder", write_ocr_folder, tmp_path / "notes.txt", [])
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_yolo_writer_adds_and_replaces_in_its_own_folder(tmp_path: Path) -> None:
    root = write_yolo_folder(tmp_path, NAMES, det_items()[:2])
    save(root / "images" / "f2.jpg")  # an older f2 in another format is replaced
    write_yolo_folder(root, NAMES, [("f0", img(9), []), det_items()[2]])
    folder = read_detection_folder(root)
    assert [(i.image.name, len(i.objects)) for i in folder.items] == [("f0.png", 0), ("f1.png", 0), ("f2.png", 1)]
    assert np.array_equal(load_image(folder.items[0].image), img(9))
    raises("has names", write_yolo_folder, root, ("car", "sign"), [])


def test_coco_ocr_lane_writers_merge_and_replace(tmp_path: Path) -> None:
    items = det_items()
    write_coco_file(tmp_path / "c", NAMES, items[:2])
    write_coco_file(tmp_path / "c" / "annotations.json", NAMES, [("f0", img(5), []), items[2]])
    folder = read_detection_folder(tmp_path / "c")
    assert sorted((i.image.name, len(i.objects)) for i in folder.items) == [("f0.png", 0), ("f1.png", 0), ("f2.png", 1)]
    raises("has categories", write_coco_file, tmp_path / "c", ("car",), [])

    write_ocr_folder(tmp_path / "o", [("a", img(), [((1, 1, 9, 9), "OLD")]), ("b", img(), [((1, 1, 9, 9), "B")])])
    write_ocr_folder(tmp_path / "o", [("a", img(), [((1, 1, 9, 9), "NEW1"), ((10, 1, 19, 9), "NEW2")])])
    assert [(i.image.name, i.text) for i in read_ocr_folder(tmp_path / "o")] == [
        ("b.png", "B"),
        ("a.png", "NEW1"),
        ("a.png", "NEW2"),
    ]

    write_lane_folder(tmp_path / "l", CAMERA, [("a", img(), Truth(0.1, 0, 0, "ok"))])
    write_lane_folder(
        tmp_path / "l", CAMERA, [("a", img(), Truth(0.2, 0, 0, "lost")), ("b", img(), Truth(0, 0, 0, "ok"))]
    )
    assert [(i.image.name, i.offset_m, i.status) for i in read_lane_folder(tmp_path / "l").items] == [
        ("a.png", 0.2, "lost"),
        ("b.png", 0.0, "ok"),
    ]
    other = CameraInfo(W, H, 90.0, 15.0, 0.12)
    raises("refusing to mix", write_lane_folder, tmp_path / "l", other, [])


def test_failed_write_keeps_the_index(tmp_path: Path) -> None:
    root = write_ocr_folder(tmp_path, [("a", img(), [((1, 1, 9, 9), "A")])])
    before = (root / "ocr.jsonl").read_text()

    def items():
        yield "b", img(), [((1, 1, 9, 9), "B")]
        raise RuntimeError("renderer crashed")

    with pytest.raises(RuntimeError):
        write_ocr_folder(root, items())
    assert (root / "ocr.jsonl").read_text() == before
    assert [i.text for i in read_ocr_folder(root)] == ["A"]
    assert not [p for p in root.rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.parametrize(
    ("item", "match"),
    [
        (("../x", img(), []), "must be a file name"),
        (("a/b", img(), []), "must be a file name"),
        (("a", img().astype(np.float32), []), "uint8"),
        (("a", img()[:, :, :2], []), "uint8"),
        (("a", img(), [LabelledBox("bus", (1, 1, 5, 5))]), "label 'bus' is not one of"),
        (("a", img(), [LabelledBox("car", (1, 1, 70, 5))]), "outside the 64x48 image"),
        (("a", img(), [LabelledBox("car", (5, 1, 5, 5))]), "empty or inverted"),
        (("a", img(), [LabelledBox("car", (1, 1, float("nan"), 5))]), "finite"),
        (("a", img(), [(1, 1, 5, 5)]), "expected a LabelledBox"),
    ],
)
@pytest.mark.parametrize("writer", [write_yolo_folder, write_coco_file])
def test_detection_writers_validate_items(tmp_path: Path, writer, item: tuple, match: str) -> None:
    assert "item " in raises(match, writer, tmp_path, NAMES, [item])


def test_other_writers_validate_items(tmp_path: Path) -> None:
    raises("given twice", write_ocr_folder, tmp_path / "o1", [("a", img(), []), ("a", img(), [])])
    raises("not printable ASCII", write_ocr_folder, tmp_path / "o2", [("a", img(), [((1, 1, 5, 5), "Ä")])])
    raises("outside the 64x48", write_ocr_folder, tmp_path / "o3", [("a", img(), [((1, 1, 5, 50), "A")])])
    raises(
        "image is 32x48, camera is 64x48",
        write_lane_folder,
        tmp_path / "l1",
        CAMERA,
        [("a", img(w=32), Truth(0, 0, 0, "ok"))],
    )
    raises("status 'gone'", write_lane_folder, tmp_path / "l2", CAMERA, [("a", img(), Truth(0, 0, 0, "gone"))])
    raises(
        "offset_m is not finite", write_lane_folder, tmp_path / "l3", CAMERA, [("a", img(), Truth(np.nan, 0, 0, "ok"))]
    )
    raises(
        "no attribute 'status'",
        write_lane_folder,
        tmp_path / "l4",
        CAMERA,
        [("a", img(), SimpleNamespace(offset_m=0.0, heading_rad=0.0, curvature_per_m=0.0))],
    )
    raises("hfov_deg must be in", write_lane_folder, tmp_path / "l5", CameraInfo(W, H, 0.0, 15.0, 0.12), [])


# ---------------------------------------------------------------- camera check


def test_check_camera_passes_within_tolerance() -> None:
    check_camera(CAMERA, CAMERA.to_dict(), source="bundle lane.bundle")
    near = {"width": 64, "height": 48, "hfov_deg": 95.5, "pitch_deg": 14.6, "height_m": 0.125, "extra": "ok"}
    check_camera(CAMERA, near, source="bundle lane.bundle")


@pytest.mark.parametrize(
    ("change", "key", "shown"),
    [
        ({"width": 320}, "width", "width: folder 64, bundle 320"),
        ({"height": 48.5}, "height", "height: folder 48, bundle 48.5"),
        ({"pitch_deg": 15.6}, "pitch_deg", "pitch_deg: folder 15.0, bundle 15.6"),
        ({"hfov_deg": 94.4}, "hfov_deg", "hfov_deg: folder 95.0, bundle 94.4"),
        ({"height_m": 0.126}, "height_m", "height_m: folder 0.12, bundle 0.126"),
        ({"height_m": None}, "height_m", "height_m: folder 0.12, bundle missing"),
        ({"width": "64"}, "width", "width: folder 64, bundle '64'"),
    ],
)
def test_check_camera_fails_naming_the_key(change: dict, key: str, shown: str) -> None:
    bundle = {k: v for k, v in {**CAMERA.to_dict(), **change}.items() if v is not None}
    with pytest.raises(CameraMismatch) as info:
        check_camera(CAMERA, bundle, source="models/lane.bundle/manifest.json")
    msg = str(info.value)
    assert msg.startswith("models/lane.bundle/manifest.json:") and shown in msg
    assert [d[0] for d in info.value.differences] == [key]


def test_check_camera_lists_every_differing_key() -> None:
    with pytest.raises(CameraMismatch) as info:
        check_camera(CAMERA, {"width": 640, "height": 480, "hfov_deg": 95.0, "pitch_deg": 15.0}, source="b")
    assert [d[0] for d in info.value.differences] == ["width", "height", "height_m"]
    assert "bundle 640" in str(info.value) and "bundle 480" in str(info.value)

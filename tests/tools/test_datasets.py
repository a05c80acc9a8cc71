"""Your-own-data folder readers: YOLO, COCO, OCR and lane formats and their validation."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import cv2
import numpy as np
import pytest
from datasets_fixtures import CAMERA, NAMES, H, Truth, W, assert_same_objects, det_items, img, raises, save

from seedcam.errors import SensorError
from seedcam_tools.datasets import (
    CameraMismatch,
    DatasetFormatError,
    LabelledBox,
    load_image,
    read_detection_folder,
    read_lane_folder,
    read_ocr_folder,
    write_coco_file,
    write_lane_folder,
    write_ocr_folder,
    write_yolo_folder,
)

# ---------------------------------------------------------------- round trips


def test_yolo_round_trip(tmp_path: Path) -> None:
    items = det_items()
    root = write_yolo_folder(tmp_path / "new" / "yolo", NAMES, items)
    folder = read_detection_folder(root)
    assert folder.format == "yolo" and folder.names == NAMES
    assert_same_objects(folder, items)
    assert (root / "labels" / "f1.txt").read_text() == ""
    lines = (root / "labels" / "f0.txt").read_text().splitlines()
    assert [len(line.split()) for line in lines] == [5, 6] and lines[1].split()[0] == "2" and lines[1].endswith(" 1")
    assert not [p for p in root.rglob("*") if p.name.endswith(".tmp")]


def test_coco_round_trip_and_iscrowd(tmp_path: Path) -> None:
    items = det_items()
    json_path = write_coco_file(tmp_path / "coco", NAMES, items)
    assert json_path == tmp_path / "coco" / "annotations.json"
    doc = json.loads(json_path.read_text())
    assert [c["name"] for c in sorted(doc["categories"], key=lambda c: c["id"])] == list(NAMES)
    assert sorted(a["iscrowd"] for a in doc["annotations"]) == [0, 0, 1]
    for folder in (read_detection_folder(tmp_path / "coco"), read_detection_folder(json_path)):
        assert folder.format == "coco" and folder.names == NAMES
        assert_same_objects(folder, items)


def test_coco_written_elsewhere_by_hand(tmp_path: Path) -> None:
    save(tmp_path / "a.jpg")
    doc = {
        "images": [{"id": 5, "file_name": "a.jpg", "width": W, "height": H, "license": 1}],
        "annotations": [
            {"id": 1, "image_id": 5, "category_id": 9, "bbox": [2, 3, 10, 20], "iscrowd": 0, "area": 200},
            {"id": 2, "image_id": 5, "category_id": 3, "bbox": [0, 0, 64, 48], "iscrowd": 1},
            {"id": 3, "image_id": 5, "category_id": 3, "bbox": [1, 1, 5, 5]},
        ],
        "categories": [{"id": 9, "name": "sign"}, {"id": 3, "name": "car", "supercategory": "vehicle"}],
    }
    (tmp_path / "instances_val.json").write_text(json.dumps(doc))
    folder = read_detection_folder(tmp_path / "instances_val.json")
    assert folder.names == ("car", "sign")  # in order of category id
    objs = folder.items[0].objects
    assert [(o.label, o.box, o.difficult) for o in objs] == [
        ("sign", (2.0, 3.0, 12.0, 23.0), False),
        ("car", (0.0, 0.0, 64.0, 48.0), True),
        ("car", (1.0, 1.0, 6.0, 6.0), False),
    ]


def test_ocr_round_trip_several_plates_per_image(tmp_path: Path) -> None:
    items = [
        ("p0", img(0), [((1.0, 2.0, 30.5, 12.0), "AGV-042"), ((33, 20, 63, 30), "B 12")]),
        ("p1", img(1), [((0.0, 0.0, 64.0, 48.0), "Z~9")]),
    ]
    root = write_ocr_folder(tmp_path / "ocr", items)
    got = read_ocr_folder(root)
    assert [(i.image.name, i.text) for i in got] == [("p0.png", "AGV-042"), ("p0.png", "B 12"), ("p1.png", "Z~9")]
    assert got[0].image == got[1].image == root / "images" / "p0.png"
    assert got[1].box == pytest.approx((33, 20, 63, 30), rel=1e-6)
    assert np.array_equal(load_image(got[2].image), items[1][1])


def test_lane_round_trip(tmp_path: Path) -> None:
    truths = [Truth(0.031, -0.12, 0.5, "ok"), Truth(np.float64(-0.2), 0.0, -1.25, "one_line"), Truth(0, 0, 0, "lost")]
    root = write_lane_folder(tmp_path / "lane", CAMERA, [(f"l{i}", img(i), t) for i, t in enumerate(truths)])
    folder = read_lane_folder(root)
    assert folder.camera == CAMERA
    assert json.loads((root / "camera.json").read_text()) == CAMERA.to_dict()
    assert [(i.offset_m, i.heading_rad, i.curvature_per_m, i.status) for i in folder.items] == [
        (0.031, -0.12, 0.5, "ok"),
        (-0.2, 0.0, -1.25, "one_line"),
        (0.0, 0.0, 0.0, "lost"),
    ]
    assert [i.image.name for i in folder.items] == ["l0.png", "l1.png", "l2.png"]


# ---------------------------------------------------------------- YOLO layouts


def test_yolo_dict_names_blank_lines_and_missing_label(tmp_path: Path) -> None:
    (tmp_path / "data.yaml").write_text("names:\n  0: car\n  1: sign\nnc: 2\n")
    save(tmp_path / "images" / "b.jpg")
    save(tmp_path / "images" / "a.bmp")
    save(tmp_path / "images" / "c.png")
    (tmp_path / "labels").mkdir()
    (tmp_path / "labels" / "a.txt").write_text("\n1 0.5 0.5 0.5 0.25\n\n0 0.25 0.5 0.1 0.2 0\n   \n")
    (tmp_path / "labels" / "c.txt").write_text("")
    folder = read_detection_folder(tmp_path)
    assert folder.names == ("car", "sign")
    assert [i.image.name for i in folder.items] == ["a.bmp", "b.jpg", "c.png"]
    a, b, c = folder.items
    assert [(o.label, o.difficult) for o in a.objects] == [("sign", False), ("car", False)]
    assert a.objects[0].box == pytest.approx((16.0, 18.0, 48.0, 30.0))
    assert a.objects[1].box == pytest.approx((12.8, 19.2, 19.2, 28.8))
    assert b.objects == () and c.objects == ()


def _ultralytics_folder(root: Path, yaml_text: str) -> None:
    """The layout `yolo train data=...` expects: images/<split>/, labels/<split>/ next to each other."""
    (root / "data.yaml").parent.mkdir(parents=True, exist_ok=True)
    (root / "data.yaml").write_text(yaml_text)
    for split, stems in (("train", ["t0", "t1"]), ("val", ["v0"])):
        for stem in stems:
            save(root / "images" / split / f"{stem}.jpg")
            (root / "labels" / split).mkdir(parents=True, exist_ok=True)
            (root / "labels" / split / f"{stem}.txt").write_text("1 0.5 0.5 0.25 0.5\n")


@pytest.mark.parametrize("path_line", ["path: .\n", "path: {root}\n", "path: /nonexistent/datasets/mine\n", ""])
def test_yolo_handwritten_ultralytics_split_layout(tmp_path: Path, path_line: str) -> None:
    root = tmp_path / "mine"
    text = path_line.format(root=root) + "train: images/train\nval: images/val\n"
    _ultralytics_folder(root, text + "names:\n  0: person\n  1: car\n")
    val = read_detection_folder(root)  # default: val
    assert [i.image for i in val.items] == [root / "images" / "val" / "v0.jpg"]
    assert val.items[0].objects[0] == LabelledBox("car", (24.0, 12.0, 40.0, 36.0))
    train = read_detection_folder(root, split="train")
    assert [i.image.name for i in train.items] == ["t0.jpg", "t1.jpg"]
    msg = raises("no 'test' split", read_detection_folder, root, split="test")
    assert "data.yaml" in msg and "train" in msg
    raises("split must be one of train, val, test", read_detection_folder, root, split="names")


def test_yolo_split_lists_and_image_list_files(tmp_path: Path) -> None:
    _ultralytics_folder(tmp_path, "train: [images/train, images/val]\ntest: test.txt\nnames: [person, car]\n")
    (tmp_path / "test.txt").write_text("./images/val/v0.jpg\n\nimages/train/t1.jpg\n")
    assert [i.image.name for i in read_detection_folder(tmp_path).items] == ["v0.jpg", "t1.jpg"]  # test: no val
    assert [i.image.name for i in read_detection_folder(tmp_path, split="train").items] == [
        "t0.jpg",
        "t1.jpg",
        "v0.jpg",
    ]
    (tmp_path / "data.yaml").write_text("test: test.txt\nval: images/train\nnames: [person, car]\n")
    assert [i.image.name for i in read_detection_folder(tmp_path).items] == ["t0.jpg", "t1.jpg"]  # val before test
    (tmp_path / "test.txt").write_text("images/val/v0.jpg\nimages/val/gone.jpg\n")
    assert "test.txt:2" in raises("not found", read_detection_folder, tmp_path, split="test")


def test_yolo_plain_layout_when_no_val_or_test(tmp_path: Path) -> None:
    (tmp_path / "data.yaml").write_text("train: images/train\nnames: [a]\n")
    save(tmp_path / "images" / "x.png")
    save(tmp_path / "images" / "train" / "y.png")
    assert [i.image.name for i in read_detection_folder(tmp_path).items] == ["x.png"]


# ---------------------------------------------------------------- validation


def _yolo(tmp_path: Path, label: str, yaml_text: str = "names: [car, sign]\n") -> Path:
    (tmp_path / "data.yaml").write_text(yaml_text)
    save(tmp_path / "images" / "a.png")
    (tmp_path / "labels").mkdir(exist_ok=True)
    (tmp_path / "labels" / "a.txt").write_text(label)
    return tmp_path


@pytest.mark.parametrize(
    ("label", "match"),
    [
        ("0 0.5 0.5 0.1 0.1\n2 0.5 0.5 0.1 0.1\n", "class index 2 is not in data.yaml names"),
        ("0 0.5 0.5 0.1 0.1\n-1 0.5 0.5 0.1 0.1\n", "class index -1"),
        ("0 0.5 0.5 0.1 0.1\n0.5 0.5 0.5 0.1 0.1\n", "class index 0.5"),
        ("\n0 0.99 0.5 0.1 0.1\n", "outside the 64x48 image"),
        ("0 0.5 0.5 0.1 0.1\n0 0.5 0.5 0 0.1\n", "empty or inverted"),
        ("0 0.5 0.5 0.1 0.1\n0 0.5 0.5 0.1 -0.1\n", "empty or inverted"),
        ("0 0.5 0.5 0.1 0.1\n0 nan 0.5 0.1 0.1\n", "not finite"),
        ("0 0.5 0.5 0.1 0.1\n0 0.5 inf 0.1 0.1\n", "not finite"),
        ("0 0.5 0.5 0.1 0.1\n0 0.5 0.5 0.1\n", "4 columns"),
        ("0 0.5 0.5 0.1 0.1\n0 0.1 0.1 0.2 0.1 0.2 0.2 0.1\n", "8 columns"),
        ("0 0.5 0.5 0.1 0.1\n0 0.5 0.5 0.1 0.1 2\n", "difficult flag must be 0 or 1"),
        ("0 0.5 0.5 0.1 0.1\n0 0.5 x 0.1 0.1\n", "'x' is not a number"),
    ],
)
def test_yolo_label_errors_name_file_and_line(tmp_path: Path, label: str, match: str) -> None:
    msg = raises(match, read_detection_folder, _yolo(tmp_path, label))
    assert f"{tmp_path / 'labels' / 'a.txt'}:2:" in msg


def test_yolo_box_within_one_pixel_slack_is_accepted(tmp_path: Path) -> None:
    # x from -0.5 px to 64.5 px: inside the 1 px slack
    folder = read_detection_folder(_yolo(tmp_path, f"0 0.5 0.5 {65 / 64} 0.5\n"))
    assert folder.items[0].objects[0].box == pytest.approx((-0.5, 12.0, 64.5, 36.0))


@pytest.mark.parametrize(
    ("yaml_text", "match"),
    [
        ("names: [car\n", "malformed YAML"),
        ("nc: 2\n", "'names' must be a list"),
        ("- car\n", "expected a mapping"),
        ("names: [car, sign]\nnc: 3\n", "nc is 3 but names has 2"),
        ("names: {0: car, 2: sign}\n", "indices must be 0..1"),
        ("names: [car, car]\n", "appears twice"),
        ("names: [car, yes]\n", "quote it"),
        ("names: []\n", "non-empty list"),
    ],
)
def test_yolo_data_yaml_errors(tmp_path: Path, yaml_text: str, match: str) -> None:
    assert "data.yaml" in raises(match, read_detection_folder, _yolo(tmp_path, "", yaml_text))


def test_yolo_folder_errors(tmp_path: Path) -> None:
    (tmp_path / "data.yaml").write_text("names: [a]\n")
    raises("no images/ folder", read_detection_folder, tmp_path)
    save(tmp_path / "images" / "a.png")
    save(tmp_path / "images" / "a.jpg")
    assert "a.txt" in raises("shares its label file", read_detection_folder, tmp_path)
    (tmp_path / "images" / "a.jpg").unlink()
    (tmp_path / "images" / "b.png").write_bytes(b"not an image at all")
    assert "b.png" in raises("not a readable image", read_detection_folder, tmp_path)


def test_neither_kind_and_split_for_coco(tmp_path: Path) -> None:
    assert "data.yaml" in raises("not a detection dataset", read_detection_folder, tmp_path)
    raises("not found", read_detection_folder, tmp_path / "missing")
    write_lane_folder(tmp_path / "lane", CAMERA, [])
    raises("not a detection dataset", read_detection_folder, tmp_path / "lane")
    write_coco_file(tmp_path / "coco", NAMES, [])
    raises("YOLO folders only", read_detection_folder, tmp_path / "coco", split="val")


def _coco(tmp_path: Path, **changes) -> Path:
    save(tmp_path / "images" / "a.png")
    doc = {
        "images": [{"id": 1, "file_name": "a.png", "width": W, "height": H}],
        "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 10, 10], "iscrowd": 0}],
        "categories": [{"id": 1, "name": "car"}],
    }
    for key, value in changes.items():
        section, field = key.split("__")
        doc[section][0][field] = value
    (tmp_path / "annotations.json").write_text(json.dumps(doc, indent=1))
    return tmp_path


@pytest.mark.parametrize(
    ("changes", "match", "entry"),
    [
        ({"annotations__category_id": 7}, "category_id 7 is not in categories", "annotations[0]"),
        ({"annotations__image_id": 2}, "image_id 2 is not in images", "annotations[0]"),
        ({"annotations__bbox": [60, 1, 10, 10]}, "outside the 64x48 image", "annotations[0]"),
        ({"annotations__bbox": [1, 1, 0, 10]}, "empty or inverted", "annotations[0]"),
        ({"annotations__bbox": [1, 1, float("nan"), 10]}, "not finite", "annotations[0]"),
        ({"annotations__bbox": [1, 1, 10]}, "list of 4 numbers", "annotations[0]"),
        ({"annotations__iscrowd": 2}, "iscrowd must be 0 or 1", "annotations[0]"),
        ({"images__file_name": "b.png"}, "image b.png not found", "images[0]"),
        ({"images__file_name": "/etc/passwd"}, "absolute path", "images[0]"),
        ({"images__file_name": "../a.png"}, "'..'", "images[0]"),
        ({"images__width": 0}, "width must be at least 1", "images[0]"),
        ({"categories__name": 5}, "non-empty string", "categories"),
    ],
)
def test_coco_errors_name_file_and_entry(tmp_path: Path, changes: dict, match: str, entry: str) -> None:
    msg = raises(match, read_detection_folder, _coco(tmp_path, **changes))
    assert f"{tmp_path / 'annotations.json'}: {entry}" in msg


def test_coco_malformed_json_names_line(tmp_path: Path) -> None:
    (tmp_path / "annotations.json").write_text('{\n "images": [],\n "annotations": [,]\n}')
    assert f"{tmp_path / 'annotations.json'}:3:" in raises("malformed JSON", read_detection_folder, tmp_path)
    (tmp_path / "annotations.json").write_text('{"images": []}')
    raises("'categories' must be a list", read_detection_folder, tmp_path)


def _ocr(tmp_path: Path, *lines: str) -> Path:
    save(tmp_path / "images" / "a.png")
    (tmp_path / "ocr.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


GOOD_OCR = '{"image": "images/a.png", "box": [1, 2, 30, 12], "text": "ABC-123", "extra": {"ignored": true}}'


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ('{"image": "images/a.png", "box": [1, 2, 30, 12], "text": "ABC-123"', "malformed JSON"),
        ('["images/a.png"]', "expected a JSON object"),
        ('{"image": "images/a.png", "box": [1, 2, 30, 12]}', "missing key 'text'"),
        ('{"image": "images/a.png", "box": [1, 2, 30, 12], "text": "ÄBC"}', "not printable ASCII"),
        ('{"image": "images/a.png", "box": [1, 2, 30, 12], "text": "AB\\tC"}', "not printable ASCII"),
        ('{"image": "images/a.png", "box": [1, 2, 30, 12], "text": "AB\\u007fC"}', "not printable ASCII"),
        ('{"image": "images/a.png", "box": [1, 2, 30, 12], "text": ""}', "non-empty string"),
        ('{"image": "images/a.png", "box": [1, 2, 70, 12], "text": "A"}', "outside the 64x48 image"),
        ('{"image": "images/a.png", "box": [30, 2, 1, 12], "text": "A"}', "empty or inverted"),
        ('{"image": "images/a.png", "box": [1, NaN, 30, 12], "text": "A"}', "not finite"),
        ('{"image": "images/a.png", "box": [1, "2", 30, 12], "text": "A"}', "must be a number"),
        ('{"image": "images/b.png", "box": [1, 2, 30, 12], "text": "A"}', "not found"),
        ('{"image": "/tmp/a.png", "box": [1, 2, 30, 12], "text": "A"}', "absolute path"),
        ('{"image": "images/../../a.png", "box": [1, 2, 30, 12], "text": "A"}', "'..'"),
        ('{"image": "..\\\\x.png", "box": [1, 2, 30, 12], "text": "A"}', "'..'"),
    ],
)
def test_ocr_errors_name_file_and_line(tmp_path: Path, line: str, match: str) -> None:
    msg = raises(match, read_ocr_folder, _ocr(tmp_path, GOOD_OCR, "", line))
    assert f"{tmp_path / 'ocr.jsonl'}:3:" in msg


def test_ocr_missing_index(tmp_path: Path) -> None:
    assert "ocr.jsonl" in raises("not found", read_ocr_folder, tmp_path)


def test_path_escapes_are_refused(tmp_path: Path) -> None:
    outside = save(tmp_path / "secret" / "s.png")
    root = tmp_path / "data"
    _ocr(root, '{"image": "../secret/s.png", "box": [1, 2, 3, 4], "text": "A"}')
    raises("refused", read_ocr_folder, root)
    (root / "ocr.jsonl").write_text(json.dumps({"image": str(outside), "box": [1, 2, 3, 4], "text": "A"}))
    raises("absolute path .* refused", read_ocr_folder, root)
    os.symlink(outside, root / "images" / "link.png")
    (root / "ocr.jsonl").write_text('{"image": "images/link.png", "box": [1, 2, 3, 4], "text": "A"}')
    raises("outside the dataset folder", read_ocr_folder, root)
    # YOLO: data.yaml splits, image lists and linked files
    yolo = tmp_path / "yolo"
    _ultralytics_folder(yolo, "val: ../secret\nnames: [a, b]\n")
    raises("outside the dataset folder", read_detection_folder, yolo)
    (yolo / "data.yaml").write_text("path: ..\nval: secret\nnames: [a, b]\n")
    raises("outside the dataset folder", read_detection_folder, yolo)
    (yolo / "data.yaml").write_text("val: list.txt\nnames: [a, b]\n")
    (yolo / "list.txt").write_text(f"images/val/v0.jpg\n{outside}\n")
    assert "list.txt:2" in raises("outside the dataset folder", read_detection_folder, yolo)
    (yolo / "data.yaml").write_text("val: images/val\nnames: [a, b]\n")
    (tmp_path / "secret" / "s.txt").write_text("0 0.5 0.5 0.1 0.1\n")
    (yolo / "labels" / "val" / "v0.txt").unlink()
    os.symlink(tmp_path / "secret" / "s.txt", yolo / "labels" / "val" / "v0.txt")
    assert "v0.txt" in raises("outside the dataset folder", read_detection_folder, yolo)
    (yolo / "labels" / "val" / "v0.txt").unlink()
    os.symlink(outside, yolo / "images" / "val" / "x.png")
    raises("outside the dataset folder", read_detection_folder, yolo)
    # COCO: a linked image
    coco = _coco(tmp_path / "coco", images__file_name="l.png")
    os.symlink(outside, coco / "l.png")
    raises("outside the dataset folder", read_detection_folder, coco)
    # index files linked to files outside the folder
    for name, reader in (("ocr.jsonl", read_ocr_folder), ("annotations.json", read_detection_folder)):
        linked = tmp_path / f"linked_{name}"
        linked.mkdir()
        os.symlink(outside, linked / name)
        raises("outside the dataset folder", reader, linked)
    os.symlink(outside, tmp_path / "linked_ocr.jsonl" / "data.yaml")
    raises("outside the dataset folder", read_detection_folder, tmp_path / "linked_ocr.jsonl")
    write_lane_folder(tmp_path / "lane", CAMERA, [])
    (tmp_path / "lane" / "camera.json").unlink()
    os.symlink(outside, tmp_path / "lane" / "camera.json")
    raises("outside the dataset folder", read_lane_folder, tmp_path / "lane")


def _lane(tmp_path: Path, line: str, camera: dict | None = None) -> Path:
    save(tmp_path / "images" / "a.png")
    save(tmp_path / "images" / "b.png")
    good = '{"image": "images/a.png", "offset_m": 0.1, "heading_rad": 0.0, "curvature_per_m": 0, "status": "ok"}'
    (tmp_path / "lane.jsonl").write_text(good + "\n" + line + "\n")
    (tmp_path / "camera.json").write_text(json.dumps(CAMERA.to_dict() if camera is None else camera))
    return tmp_path


LANE_B = '{"image": "images/b.png", "offset_m": 0.1, "heading_rad": 0.2, "curvature_per_m": 0.3'


@pytest.mark.parametrize(
    ("line", "match"),
    [
        (LANE_B + ', "status": "fine"}', "status 'fine' is not one of ok, one_line, lost"),
        (LANE_B + ', "status": null}', "status None"),
        (LANE_B.replace("0.1", "NaN") + ', "status": "ok"}', "offset_m is not finite"),
        (LANE_B.replace("0.2", "-Infinity") + ', "status": "ok"}', "heading_rad is not finite"),
        (LANE_B.replace("0.3", '"0.3"') + ', "status": "ok"}', "curvature_per_m must be a number"),
        (LANE_B.replace("0.3", "true") + ', "status": "ok"}', "curvature_per_m must be a number"),
        (LANE_B + "}", "missing key 'status'"),
        (LANE_B.replace("b.png", "a.png") + ', "status": "ok"}', "already labelled on line 1"),
        (LANE_B + ', "status": "ok"', "malformed JSON"),
    ],
)
def test_lane_errors_name_file_and_line(tmp_path: Path, line: str, match: str) -> None:
    msg = raises(match, read_lane_folder, _lane(tmp_path, line))
    assert f"{tmp_path / 'lane.jsonl'}:2:" in msg


def test_lane_camera_and_image_size_errors(tmp_path: Path) -> None:
    ok_line = LANE_B + ', "status": "lost", "note": "extra keys are ignored"}'
    assert len(read_lane_folder(_lane(tmp_path, ok_line)).items) == 2
    bad = {**CAMERA.to_dict(), "width": 320}
    msg = raises("is 64x48 but camera.json says 320x48", read_lane_folder, _lane(tmp_path, ok_line, bad))
    assert "lane.jsonl:1:" in msg
    cam = {k: v for k, v in CAMERA.to_dict().items() if k != "pitch_deg"}
    assert "camera.json" in raises("missing key 'pitch_deg'", read_lane_folder, _lane(tmp_path, ok_line, cam))
    cam = {**CAMERA.to_dict(), "width": 64.5}
    raises("width must be an integer", read_lane_folder, _lane(tmp_path, ok_line, cam))
    (tmp_path / "camera.json").unlink()
    assert "camera.json" in raises("not found", read_lane_folder, tmp_path)


def test_load_image_and_exif_oriented_jpeg(tmp_path: Path) -> None:
    raises("not found", load_image, tmp_path / "none.png")
    (tmp_path / "junk.png").write_bytes(b"\x89PNG junk")
    raises("not a readable image", load_image, tmp_path / "junk.png")
    # a JPEG whose EXIF orientation (6) rotates it: the reader's size must match load_image's pixels
    jpeg = cv2.imencode(".jpg", img(0))[1].tobytes()
    ifd = struct.pack("<HHHIHHI", 1, 0x0112, 3, 1, 6, 0, 0)
    exif = b"Exif\x00\x00II*\x00" + struct.pack("<I", 8) + ifd
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "r.jpg").write_bytes(
        jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(exif) + 2) + exif + jpeg[2:]
    )
    (tmp_path / "data.yaml").write_text("names: [a]\n")
    item = read_detection_folder(tmp_path).items[0]
    assert load_image(item.image).shape == (item.height, item.width, 3) == (W, H, 3)


def test_errors_are_sensor_and_value_errors() -> None:
    assert issubclass(DatasetFormatError, SensorError) and issubclass(DatasetFormatError, ValueError)
    assert issubclass(CameraMismatch, DatasetFormatError)

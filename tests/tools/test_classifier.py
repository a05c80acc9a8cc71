"""Image classifier: folder parsing, the hash split, augmentation, a train-classifier smoke run, the shipped bundle."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from seedcam.errors import SensorError
from seedcam_firmware.inference.manifest import load_manifest
from seedcam_firmware.inference.preprocess import InputSpec, crop_resize
from seedcam_firmware.scene import render_with_mask
from seedcam_tools.classify.data import (
    HELDOUT_SEED_BASE,
    MIN_LINE_COVERAGE,
    ROAD_CLASSES,
    DatasetError,
    line_coverage,
    load_images,
    render_road_scene,
    road_scene_seed,
    road_scene_spec,
    scan_image_folder,
    split_images,
    write_road_scene_folder,
)
from seedcam_tools.classify.evaluate import evaluate_bundle
from seedcam_tools.classify.train import DEFAULT_INPUT, Augment, augment_batch, parse_input_size
from seedcam_tools.cli import main
from seedcam_tools.export import FLOAT_CONVERSION_TOLERANCE

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "models" / "road_scene"
SMALL = InputSpec(width=32, height=24, crop_top=0.0)


def _write_images(folder: Path, names: list[str], seed: int = 0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for name in names:
        img = rng.integers(0, 256, (30 + len(name), 40, 3), dtype=np.uint8)
        assert cv2.imwrite(str(folder / name), img)


def _dataset(root: Path, per_class: int = 6, classes: tuple[str, ...] = ("b_dog", "a_cat")) -> Path:
    for k, cls in enumerate(classes):
        _write_images(root / cls, [f"img{i:02d}.png" for i in range(per_class)], seed=k)
    return root


# --- folder parsing ---------------------------------------------------------------------------------------------


def test_scan_sorts_classes_finds_nested_images_and_ignores_other_files(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "data", per_class=5)
    _write_images(root / "a_cat" / "more", ["deep.jpg", "x.bmp"])
    (root / "a_cat" / "notes.txt").write_text("not an image")
    _write_images(root / "a_cat" / ".thumbs", ["hidden.png"])
    (root / "README.md").write_text("top-level files are not classes")
    (root / "empty_class").mkdir()  # a folder without images is no class
    folder = scan_image_folder(root)
    assert folder.classes == ("a_cat", "b_dog")
    assert folder.counts == {"a_cat": 7, "b_dog": 5}
    assert Path("a_cat/more/deep.jpg") in folder.files[0]
    loaded = load_images(folder, SMALL)
    assert loaded.x.shape == (12, 24, 32, 3) and loaded.x.dtype == np.uint8
    assert np.bincount(loaded.y).tolist() == [7, 5]


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        ({}, "no class subfolders with images"),
        ({"only": 8}, "only one class"),
        ({"a": 8, "b": 3}, r"too few images \(need >= 5 per class\): b \(3\)"),
    ],
)
def test_scan_rejects_unusable_folders(tmp_path: Path, layout: dict[str, int], message: str) -> None:
    root = tmp_path / "data"
    root.mkdir()
    for cls, n in layout.items():
        _write_images(root / cls, [f"{i}.png" for i in range(n)])
    with pytest.raises(DatasetError, match=message) as info:
        scan_image_folder(root)
    assert isinstance(info.value, ValueError) and isinstance(info.value, SensorError)


def test_scan_of_a_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="is not a folder"):
        scan_image_folder(tmp_path / "nope")


def test_unreadable_images_are_skipped_and_counted(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = _dataset(tmp_path / "data", per_class=6)
    (root / "a_cat" / "broken.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    (root / "b_dog" / "empty.png").write_bytes(b"")
    loaded = load_images(scan_image_folder(root), SMALL, min_per_class=6)
    assert sorted(map(str, loaded.unreadable)) == ["a_cat/broken.jpg", "b_dog/empty.png"]
    assert len(loaded.y) == 12
    assert "2 unreadable image(s) skipped" in caplog.text
    for name in ("img00.png", "img01.png"):
        (root / "b_dog" / name).write_bytes(b"garbage")
    with pytest.raises(DatasetError, match=r"too few readable images.*b_dog \(4\).*4 unreadable"):
        load_images(scan_image_folder(root), SMALL, min_per_class=5)


def test_split_is_a_function_of_each_file_name(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "data", per_class=40)
    a_train, a_val = split_images(load_images(scan_image_folder(root), SMALL))
    b_train, b_val = split_images(load_images(scan_image_folder(root), SMALL))
    assert a_val.files == b_val.files and a_train.files == b_train.files
    assert not set(a_val.files) & set(a_train.files)
    assert 4 <= len(a_val.files) <= 24  # ~15 % of 80
    # more files elsewhere leave every existing file on its side
    _write_images(root / "a_cat", [f"new{i}.png" for i in range(30)], seed=9)
    _write_images(root / "c_eel", [f"e{i}.png" for i in range(10)], seed=8)
    c_train, c_val = split_images(load_images(scan_image_folder(root), SMALL))
    assert set(a_val.files) <= set(c_val.files) and set(a_train.files) <= set(c_train.files)
    # the same file name goes the same way in every class
    val_names = {(f.parts[0], f.name) for f in c_val.files}
    for name in {f.name for f in c_val.files if f.parts[0] == "a_cat" and f.name.startswith("img")}:
        assert ("b_dog", name) in val_names


def test_split_keeps_one_image_of_each_class_on_each_side(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "data", per_class=5)
    train, val = split_images(load_images(scan_image_folder(root), SMALL), val_fraction=0.01)
    assert np.bincount(val.y).tolist() == [1, 1] and np.bincount(train.y).tolist() == [4, 4]
    with pytest.raises(ValueError):
        split_images(load_images(scan_image_folder(root), SMALL), val_fraction=1.0)


def test_parse_input_size() -> None:
    assert parse_input_size("128x96").shape == (1, 96, 128, 3)
    assert parse_input_size("96X96") == DEFAULT_INPUT
    for bad in ("96", "96x", "8x8", "96x96x3"):
        with pytest.raises(ValueError):
            parse_input_size(bad)


# --- augmentation ---------------------------------------------------------------------------------------------


def test_augmentation_is_seeded_and_flips_only_when_asked() -> None:
    x = np.random.default_rng(0).integers(0, 256, (16, 12, 20, 3), dtype=np.uint8)
    a = augment_batch(x, np.random.default_rng(5), Augment())
    b = augment_batch(x, np.random.default_rng(5), Augment())
    np.testing.assert_array_equal(a, b)
    assert a.shape == x.shape and a.dtype == np.uint8 and not np.array_equal(a, x)
    still = Augment(shift=0.0, brightness=0.0, contrast=0.0)
    np.testing.assert_array_equal(augment_batch(x, np.random.default_rng(1), still), x)
    flipped = augment_batch(x, np.random.default_rng(1), Augment(shift=0.0, brightness=0.0, contrast=0.0, flip=True))
    mirrored = [np.array_equal(flipped[i], x[i, :, ::-1]) for i in range(len(x))]
    kept = [np.array_equal(flipped[i], x[i]) for i in range(len(x))]
    assert all(m or k for m, k in zip(mirrored, kept, strict=True)) and 0 < sum(mirrored) < len(x)


def test_training_is_deterministic_and_keeps_the_best_epoch() -> None:
    from seedcam_tools.classify.train import train_classifier_model

    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (24, SMALL.height, SMALL.width, 3), dtype=np.uint8)
    y = np.arange(24) % 2
    x[y == 1, :, : SMALL.width // 2] = 255  # class 1: a bright left half
    runs = [
        train_classifier_model(x[:16], y[:16], x[16:], y[16:], spec=SMALL, num_classes=2, seed=3, epochs=2)
        for _ in range(2)
    ]
    for wa, wb in zip(runs[0].model.get_weights(), runs[1].model.get_weights(), strict=True):
        np.testing.assert_array_equal(wa, wb)
    a = runs[0]
    assert [h["epoch"] for h in a.history] == [1, 2]
    assert a.best_val_accuracy == max(h["val_accuracy"] for h in a.history)
    assert a.history[a.best_epoch - 1]["val_accuracy"] == a.best_val_accuracy
    with pytest.raises(ValueError):
        train_classifier_model(x, y, x[:0], y[:0], spec=SMALL, num_classes=2, seed=0, epochs=1)


# --- the synthetic road-scene classes -------------------------------------------------------------------------


def test_road_scene_classes_have_their_curvature_band_and_lines() -> None:
    for k in range(40):
        specs = {c: road_scene_spec(c, np.random.default_rng(road_scene_seed(0, c, k))) for c in ROAD_CLASSES}
        assert abs(specs["straight"].curvature_per_m) < 0.15
        assert specs["curve_left"].curvature_per_m > 0.45
        assert specs["curve_right"].curvature_per_m < -0.45
        assert not specs["no_lane"].left_visible and not specs["no_lane"].right_visible
        for c in ("straight", "curve_left", "curve_right"):
            assert specs[c].left_visible or specs[c].right_visible
    with pytest.raises(ValueError, match="unknown road-scene class"):
        road_scene_spec("roundabout", np.random.default_rng(0))


def test_lane_class_frames_always_show_their_lines() -> None:
    # held-out curve_left 88: a tight left curve with the car yawed right; its first draw shows no line at all
    rng_seed = road_scene_seed(HELDOUT_SEED_BASE, "curve_left", 88)
    first = road_scene_spec("curve_left", np.random.default_rng(rng_seed))
    assert line_coverage(first, render_with_mask(first)[2]) < MIN_LINE_COVERAGE
    image, spec = render_road_scene("curve_left", np.random.default_rng(rng_seed))
    assert spec != first and spec.curvature_per_m > 0.45
    assert line_coverage(spec, render_with_mask(spec)[2]) >= MIN_LINE_COVERAGE
    np.testing.assert_array_equal(image, render_road_scene("curve_left", np.random.default_rng(rng_seed))[0])


def test_road_scene_folder_is_deterministic_and_keeps_heldout_seeds_out(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert write_road_scene_folder(a, per_class=2, seed=7, workers=1) == dict.fromkeys(ROAD_CLASSES, 2)
    write_road_scene_folder(b, per_class=2, seed=7, workers=1)
    files = sorted(p.relative_to(a) for p in a.rglob("*.png"))
    assert files[0] == Path("curve_left/curve_left_00000007.png") and len(files) == 8
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
    assert json.loads((a / "dataset.json").read_text())["seed_base"] == 7
    assert scan_image_folder(a, min_per_class=2).classes == ROAD_CLASSES
    with pytest.raises(ValueError, match="held-out"):
        write_road_scene_folder(tmp_path / "c", per_class=10, seed=HELDOUT_SEED_BASE - 5)


# --- train-classifier end to end (toy size) -------------------------------------------------------------------


def test_train_classifier_smoke_writes_a_bundle_the_firmware_accepts(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    data, held = tmp_path / "train", tmp_path / "held"
    assert main(["gen-classifier-data", "--out", str(data), "--per-class", "12", "--seed", "0", "-q"]) == 0
    assert main(["gen-classifier-data", "--out", str(held), "--per-class", "3", "--seed", "10000000", "-q"]) == 0
    for folder in (data, held):  # two classes are enough here
        shutil.rmtree(folder / "no_lane")
        shutil.rmtree(folder / "straight")
    out = tmp_path / "bundle"
    code = main(
        ["train-classifier", "--data", str(data), "--out", str(out), "--seed", "0", "--epochs", "1",
         "--val-data", str(held), "--name", "Road Scene!", "--input-size", "64x48", "-q"]
    )  # fmt: skip
    assert code == 0
    assert "bundle written to" in capsys.readouterr().out
    for precision in ("int8", "float32"):
        manifest = load_manifest(out, precision=precision)  # validates and checks the sha256
        assert manifest.task == "classify" and manifest.id == "road_scene-v1"
        assert manifest.outputs == {"probs": (1, 2)} and manifest.input_shape == (1, 48, 64, 3)
        assert manifest.decoder == {"type": "softmax", "labels": ["curve_left", "curve_right"], "top_k": 2}
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["summary"]["metric"] == "accuracy"
    assert metrics["heldout"]["images"] == 6 and metrics["heldout"]["source"]["kind"] == "folder"
    for precision in ("float32", "int8"):
        assert metrics["summary"][precision] == metrics["heldout"][precision]["accuracy"]
        assert 0.0 <= metrics["summary"][precision] <= 1.0
    assert metrics["export"]["float_conversion_max_rel_diff"] <= FLOAT_CONVERSION_TOLERANCE
    assert metrics["training"]["images"] + metrics["training"]["validation_images"] == 24
    assert (tmp_path / "bundle-training" / "classifier.keras").is_file()
    # the golden output is what the int8 file computes on the golden input
    golden = np.load(out / "golden_output_int8.npz")["probs"]
    assert golden.shape == (1, 2) and abs(float(golden.sum()) - 1.0) < 0.02


def test_train_classifier_cli_reports_a_bad_folder_in_one_line(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    root = _dataset(tmp_path / "data", per_class=6, classes=("only",))
    assert main(["train-classifier", "--data", str(root), "--out", str(tmp_path / "out"), "-q"]) == 1
    assert "error: " in capsys.readouterr().err and not (tmp_path / "out").exists()


# --- the shipped bundle ---------------------------------------------------------------------------------------


def test_shipped_road_scene_bundle_is_accurate_on_fresh_heldout_scenes() -> None:
    metrics = json.loads((BUNDLE / "metrics.json").read_text())
    assert metrics["summary"]["int8"] >= 0.98 and metrics["summary"]["float32"] >= 0.98
    assert metrics["heldout"]["source"]["used_for_model_selection"] is False
    manifest = load_manifest(BUNDLE, precision="int8")
    assert tuple(manifest.decoder["labels"]) == ROAD_CLASSES
    # seed base 11_000_000: held-out scenes that neither training nor metrics.json (10_000_000 + k) used
    per_class = 50
    pixels, labels = [], []
    for c, label in enumerate(ROAD_CLASSES):
        for k in range(per_class):
            image, _ = render_road_scene(label, np.random.default_rng(road_scene_seed(11_000_000, label, k)))
            pixels.append(crop_resize(image, manifest.input))  # the firmware's own preprocessing
            labels.append(c)
    result = evaluate_bundle(BUNDLE, np.stack(pixels), np.asarray(labels), precision="int8")
    assert result["accuracy"] >= 0.98, result["confusion"]
    assert min(result["per_class_accuracy"].values()) >= 0.9


def test_the_firmware_classify_task_runs_the_shipped_bundle() -> None:
    from seedcam_firmware.tasks.classify import ClassifyTask

    task = ClassifyTask(load_manifest(BUNDLE, precision="int8"), num_threads=1)
    assert task.layout.labels == ROAD_CLASSES and task.layout.output == "probs"
    image, _ = render_road_scene("curve_right", np.random.default_rng(road_scene_seed(12_000_000, "curve_right", 0)))
    best = task.run(image).classifications
    assert [c.label for c in best][:1] == ["curve_right"] and len(best) == 3
    assert best[0].score > 0.5

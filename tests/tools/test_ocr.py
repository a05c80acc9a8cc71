"""OCR pipeline: plate crops, seeded data, labels, CTC readout, and a toy-size train-ocr run."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from seedcam_firmware.inference.manifest import load_manifest
from seedcam_firmware.inference.plate import crop_plate
from seedcam_firmware.inference.runtime import Model
from seedcam_firmware.scene import SceneObject, SceneSpec, render
from seedcam_tools.ocr import OCR_VERSION
from seedcam_tools.ocr.data import (
    ALPHABET,
    BLANK_INDEX,
    MAX_TEXT_LEN,
    NUM_CLASSES,
    OCR_INPUT,
    Look,
    decode_labels,
    encode_text,
    generate,
    jitter_box,
    random_text,
)
from seedcam_tools.ocr.evaluate import edit_distance, line_breakdown, line_metrics
from seedcam_tools.ocr.ship import MIN_PLATE_WIDTH_PX, ocr_manifest
from seedcam_tools.ocr.train import augment_batch, read_texts

W, H = OCR_INPUT.width, OCR_INPUT.height


def _plate_scene(text: str = "AGV-042", forward: float = 0.4, left: float = 0.05) -> tuple[np.ndarray, tuple]:
    image, truth = render(SceneSpec(noise_sigma=0.0, objects=(SceneObject("plate", forward, left, text=text),)))
    return image, truth.objects[0].box


def _grey(img: np.ndarray) -> np.ndarray:
    return img.astype(np.float32).mean(axis=2)


@pytest.mark.parametrize("shift", [(0.0, 0.0, 0.0, 0.0), (0.06, -0.06, 0.08, 0.05), (-0.08, 0.07, -0.05, -0.08)])
def test_crop_of_a_rendered_plate_is_mostly_plate(shift: tuple[float, float, float, float]) -> None:
    image, (x0, y0, x1, y1) = _plate_scene()
    w, h = x1 - x0, y1 - y0
    box = (x0 + shift[0] * w, y0 + shift[1] * h, x1 + shift[2] * w, y1 + shift[3] * h)  # a detector-like box
    crop = crop_plate(image, box, W, H)
    assert crop.shape == (H, W, 3) and crop.dtype == np.uint8
    gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)  # what the OCR task converts once per frame
    np.testing.assert_array_equal(crop_plate(image, box, W, H, frame_gray=gray), crop)
    g = _grey(crop)
    # the plate is white (245) with a dark rim and dark text (25); floor (~90) and wall (~140) are mid-grey
    assert (g > 180).mean() > 0.5, "the background of the crop should be the white plate"
    dark = g < 90
    assert 0.1 < dark.mean() < 0.35, "dark text (and the rim) should be a minor part of the crop"
    cols = np.flatnonzero(dark[H // 4 : 3 * H // 4, 8:-8].any(axis=0)) + 8
    assert cols[0] < 0.2 * W and cols[-1] > 0.8 * W, "the text should span most of the rectified plate"
    # a loose box (15 % more on each side) is still rectified onto the plate
    loose = (box[0] - 0.15 * w, box[1] - 0.15 * h, box[2] + 0.15 * w, box[3] + 0.15 * h)
    assert (_grey(crop_plate(image, loose, W, H)) > 180).mean() > 0.5
    # while a plain resize of a box with some margin is mostly background
    wide = (box[0] - 0.5 * w, box[1] - 0.5 * h, box[2] + 0.5 * w, box[3] + 0.5 * h)
    fh, fw = image.shape[:2]
    naive = image[round(wide[1] * fh) : round(wide[3] * fh), round(wide[0] * fw) : round(wide[2] * fw)]
    assert (_grey(cv2.resize(naive, (W, H), interpolation=cv2.INTER_AREA)) > 180).mean() < 0.35


def test_crop_without_a_plate_is_the_grown_box_resized() -> None:
    # a horizontal ramp: grey level = x pixel index; no bright blob to rectify
    frame = np.broadcast_to(np.arange(256, dtype=np.uint8)[None, :, None], (100, 256, 3)).copy()
    crop = crop_plate(frame, (64 / 256, 0.2, 192 / 256, 0.8), 64, 16, margin=0.0)
    expected = 64 + (np.arange(64) + 0.5) * 2 - 0.5  # centre of each output column in frame pixels
    assert np.abs(crop[8, :, 0].astype(np.float64) - expected).max() <= 1.0
    grown = crop_plate(frame, (64 / 256, 0.2, 192 / 256, 0.8), 64, 16, margin=0.25)
    assert grown[8, 0, 0] < crop[8, 0, 0] - 20 and grown[8, -1, 0] > crop[8, -1, 0] + 20


@pytest.mark.parametrize(
    "box",
    [
        (-0.1, 0.2, 0.1, 0.3),  # partly left of the frame
        (0.9, 0.9, 1.2, 1.1),  # partly outside bottom right
        (1.2, 1.2, 1.3, 1.3),  # entirely outside
        (0.5, 0.5, 0.5001, 0.5001),  # far below a pixel
        (0.0, 0.0, 1.0, 1.0),  # the whole frame
        (-5.0, -5.0, 5.0, 5.0),  # much larger than the frame
    ],
)
def test_crop_never_raises_for_odd_boxes(box: tuple[float, float, float, float]) -> None:
    image, _ = _plate_scene()
    crop = crop_plate(image, box, W, H)
    assert crop.shape == (H, W, 3) and crop.dtype == np.uint8
    flat = np.full((240, 320, 3), 77, np.uint8)
    assert (crop_plate(flat, box, W, H) == 77).all()


def test_crop_rejects_invalid_input() -> None:
    image, box = _plate_scene()
    bad = [
        ((image[..., 0], box, W, H), {}),
        ((image.astype(np.float32), box, W, H), {}),
        ((image, (0.5, 0.5, 0.5, 0.6), W, H), {}),
        ((image, (0.5, 0.6, 0.6, 0.5), W, H), {}),
        ((image, (0.1, math.nan, 0.2, 0.3), W, H), {}),
        ((image, (0.1, 0.2, 0.3), W, H), {}),
        ((image, box, 0, H), {}),
        ((image, box, W, H), {"margin": -0.1}),
        ((image, box, W, H), {"frame_gray": np.zeros((4, 4), np.uint8)}),
    ]
    for args, kwargs in bad:
        with pytest.raises(ValueError):
            crop_plate(*args, **kwargs)


def test_data_is_deterministic_and_labelled() -> None:
    a, b = generate(7, 3, workers=1), generate(7, 3, workers=1)
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert a.x.shape == (3, H, W, 3) and a.x.dtype == np.uint8
    assert a.labels.shape == (3, MAX_TEXT_LEN) and a.labels.dtype == np.int32
    np.testing.assert_array_equal(a.seeds, [7, 8, 9])
    for row, n, text in zip(a.labels, a.lengths, a.texts, strict=True):
        assert (row[:n] >= 0).all() and (row[n:] == -1).all() and len(text) == n
    c = generate(8, 2, workers=1)  # overlapping seeds give the same samples
    np.testing.assert_array_equal(c.x, a.x[1:])
    assert c.texts == a.texts[1:]


def test_cached_generation_equals_fresh_and_reuses_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import seedcam_tools.ocr.data as ocr_data

    monkeypatch.setattr(ocr_data, "CACHE_BLOCK", 2)
    fresh = generate(3, 3, workers=1)
    first = ocr_data.generate_cached(tmp_path, 3, 3, workers=1)
    np.testing.assert_array_equal(first.x, fresh.x)
    np.testing.assert_array_equal(first.labels, fresh.labels)
    assert sorted(p.name for p in tmp_path.glob("*.npz")) == ["crops-3-2.npz", "crops-5-1.npz"]
    calls: list[tuple[int, int]] = []
    real = ocr_data.generate
    monkeypatch.setattr(ocr_data, "generate", lambda s, n, **kw: calls.append((s, n)) or real(s, n, **kw))
    again = ocr_data.generate_cached(tmp_path, 3, 4, workers=1)  # one more seed: only the new block renders
    assert calls == [(5, 2)]
    np.testing.assert_array_equal(again.x[:3], fresh.x)
    np.testing.assert_array_equal(again.seeds, [3, 4, 5, 6])


def test_look_moves_only_the_plate_distance() -> None:
    near = generate(40, 2, workers=1, look=Look(max_forward_m=0.4))
    default = generate(40, 2, workers=1)
    assert near.texts == default.texts  # same scenes and texts, nearer plates
    assert not np.array_equal(near.x, default.x)
    assert Look(max_forward_m=0.55).tag == "-to0.55m" and Look().tag == "" and Look(full_blur=True).tag == "-blur"
    with pytest.raises(ValueError):
        Look(max_forward_m=0.2)


def test_augmentation_is_mild_and_seeded() -> None:
    import tensorflow as tf

    x = generate(11, 4, workers=1).x
    seed = tf.constant([5, 6], tf.int64)
    a = augment_batch(tf.constant(x), seed, p=1.0).numpy()
    np.testing.assert_array_equal(a, augment_batch(tf.constant(x), seed, p=1.0).numpy())
    assert a.shape == x.shape and a.dtype == np.float32 and not np.array_equal(a, x)
    assert a.min() >= 0 and a.max() <= 255 and np.array_equal(a, np.round(a))
    assert np.abs(a.mean((1, 2, 3)) - x.astype(np.float32).mean((1, 2, 3))).max() < 60
    np.testing.assert_array_equal(augment_batch(tf.constant(x), seed, p=0.0).numpy(), x.astype(np.float32))


def test_texts_and_labels_round_trip() -> None:
    rng = np.random.default_rng(0)
    texts = [random_text(rng) for _ in range(400)]
    styled = sum(bool(re.fullmatch(r"[A-Z]{3}-[0-9]{3}", t)) for t in texts)
    assert 150 < styled < 250  # about half "ABC-123" style
    for t in texts:
        assert 3 <= len(t) <= MAX_TEXT_LEN and set(t) <= set(ALPHABET)
        assert not t.startswith("-") and not t.endswith("-") and "--" not in t
        assert decode_labels(encode_text(t)) == t
    assert decode_labels(np.array([10, 11, -1, -1])) == "AB"
    assert encode_text("0-Z").tolist() == [0, 36, 35]
    with pytest.raises(ValueError):
        encode_text("ab")
    with pytest.raises(ValueError):
        decode_labels(np.array([BLANK_INDEX]))


def test_jitter_stays_within_eight_percent() -> None:
    rng = np.random.default_rng(1)
    box = (0.4, 0.3, 0.6, 0.4)
    for _ in range(200):
        j = jitter_box(box, rng)
        w, h = j[2] - j[0], j[3] - j[1]
        assert 0.92 * 0.2 - 1e-9 <= w <= 1.08 * 0.2 + 1e-9 and 0.92 * 0.1 - 1e-9 <= h <= 1.08 * 0.1 + 1e-9
        assert abs((j[0] + j[2]) / 2 - 0.5) <= 0.08 * 0.2 + 1e-9


def test_greedy_readout_and_metrics() -> None:
    path = [ALPHABET.index(c) for c in "AAB"] + [BLANK_INDEX, ALPHABET.index("B"), ALPHABET.index("-")]
    probs = np.full((1, 32, NUM_CLASSES), 0.001, np.float32)
    for t in range(32):
        probs[0, t, path[t] if t < len(path) else BLANK_INDEX] = 0.9
    assert read_texts(probs) == ["ABB-"]
    assert edit_distance("AGV-042", "AGV-42") == 1 and edit_distance("", "ABC") == 3
    m = line_metrics(["AGV-042", "AGV-43"], ["AGV-042", "AGV-042"])
    assert m["line_accuracy"] == 0.5 and m["cer"] == pytest.approx(2 / 14)
    with pytest.raises(ValueError):
        line_metrics(["A"], [])


def test_line_breakdown_says_where_readings_go_wrong() -> None:
    truth = ["AGV-042", "P00", "OTW", "K67PX3", "TL-Z3L", "ABC"]
    read = ["AGV-042", "PO0", "OT-W", "K67PX3", "TL-ZL", "A8C"]
    widths = [130.0, 50.0, 55.0, 70.0, 44.0, 90.0]
    b = line_breakdown(read, truth, widths)
    assert b["by_width_px"] == [
        {"width_px": "0-60", "plates": 3, "line_accuracy": 0.0},
        {"width_px": "60-80", "plates": 1, "line_accuracy": 1.0},
        {"width_px": "80-120", "plates": 1, "line_accuracy": 0.0},
        {"width_px": ">=120", "plates": 1, "line_accuracy": 1.0},
    ]
    assert b["by_text_length"] == [
        {"characters": 3, "plates": 3, "line_accuracy": 0.0},
        {"characters": 6, "plates": 2, "line_accuracy": 0.5},
        {"characters": 7, "plates": 1, "line_accuracy": 1.0},
    ]
    assert b["errors"] == {
        "dropped_characters": 1,
        "added_characters": 1,
        "wrong_characters": 2,
        "confusions": [{"truth": "0", "read": "O", "count": 1}, {"truth": "B", "read": "8", "count": 1}],
    }
    with pytest.raises(ValueError, match="one width per plate"):
        line_breakdown(read, truth, widths[:-1])


def test_train_ocr_smoke_writes_a_valid_bundle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from seedcam_tools.cli import main

    out = tmp_path / "ocr"
    code = main(
        ["train-ocr", "--out", str(out), "--work", str(tmp_path / "work"),
         "--samples", "64", "--epochs", "1", "--eval-samples", "8", "--width-mult", "0.5", "--quiet",
         "--version", "5.1.0"]
    )  # fmt: skip
    assert code == 0
    assert "bundle written to" in capsys.readouterr().out
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["export"]["float_conversion_max_rel_diff"] <= 1e-5
    assert metrics["export"]["float_conversion_inputs"] == 100
    assert metrics["heldout"]["seed_base"] == 10_000_000
    assert set(metrics["summary"]) == {"metric", "float32", "int8"}
    assert metrics["training"]["samples"] == 64 and "--width-mult 0.5" in metrics["training"]["command"]
    assert metrics["training"]["width_mult"] == 0.5 and metrics["model_params"] < 100_000  # shipped width: 218 k
    for precision in ("int8", "float32"):
        manifest = load_manifest(out, precision=precision)  # validates, checks the sha256
        assert manifest.task == "ocr" and manifest.id == "ocr-v5" == ocr_manifest("5.1.0")["id"]
        assert manifest.version == "5.1.0"
        calibration = manifest.decoder.pop("confidence_calibration")
        assert calibration["method"] == "platt_log" and calibration["a"] > 0
        assert metrics["confidence_calibration"]["a"] == calibration["a"]
        assert manifest.decoder == {
            "type": "ctc",
            "alphabet": ALPHABET,
            "blank_index": 37,
            "time_steps": 32,
            "min_plate_width_px": MIN_PLATE_WIDTH_PX,
        }
        assert manifest.outputs == {"probs": (1, 32, 38)} and manifest.input_shape == (1, 32, 128, 3)
        model = Model(manifest.file, input_shape=manifest.input_shape, outputs=manifest.outputs, num_threads=1)
        probs = model.invoke(np.load(manifest.golden_input))["probs"]
        np.testing.assert_allclose(probs, np.load(manifest.golden_output)["probs"], atol=1e-6)
        np.testing.assert_allclose(probs.sum(axis=-1), 1.0, atol=0.06)  # int8: 38 steps of 1/256


def test_platt_calibration_recovers_a_known_reliability_curve() -> None:
    from seedcam_tools.ocr.evaluate import calibration_error
    from seedcam_tools.ocr.ship import fit_confidence_calibration

    rng = np.random.default_rng(0)
    raw = rng.uniform(0.05, 1.0, 20000)
    truth_p = 1.0 / (1.0 + np.exp(-(3.0 * np.log(raw) + 1.5)))  # over-confident raw scores
    correct = rng.random(raw.size) < truth_p
    a, b = fit_confidence_calibration(raw, correct)
    assert a == pytest.approx(3.0, rel=0.1) and b == pytest.approx(1.5, rel=0.15)
    calibrated = 1.0 / (1.0 + np.exp(-(a * np.log(raw) + b)))
    assert calibration_error(calibrated, correct) < 0.02 < calibration_error(raw, correct)


def test_a_deepened_reader_computes_what_the_shallow_one_did_until_trained() -> None:
    """Added residual and context blocks start as the identity; every other weight is the shallow reader's."""
    from seedcam_tools.ocr.model import build_ocr_model, deepen_ocr

    shallow = build_ocr_model(1.0)
    rng = np.random.default_rng(0)
    for layer in shallow.layers:  # non-trivial batch norms, so that a lost weight would show
        if layer.name.endswith("_bn"):
            gamma, beta, mean, var = layer.get_weights()
            layer.set_weights([gamma * rng.uniform(0.5, 1.5, gamma.shape), beta + 0.1, mean + 0.05, var * 1.2])
    x = rng.random((4, OCR_INPUT.height, OCR_INPUT.width, 3)).astype(np.float32)
    deep = deepen_ocr(shallow, width_mult=1.0, context_blocks=5, residual_blocks=1)
    assert deep.count_params() > shallow.count_params()
    assert deep.get_layer("residual_s4x32_0_conv2") is not None and deep.get_layer("ctx5_conv") is not None
    np.testing.assert_allclose(deep.predict(x, verbose=0)["probs"], shallow.predict(x, verbose=0)["probs"], atol=1e-5)
    with pytest.raises(ValueError, match="no counterpart"):
        deepen_ocr(build_ocr_model(1.5), width_mult=1.0, context_blocks=5, residual_blocks=1)


def test_bundling_a_trained_reader_validates_on_the_world_mix_it_was_trained_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``train-ocr --keras`` takes the round's own mix from its train_metrics.json unless --random-world says."""
    from seedcam_tools.cli import main

    keras_file = tmp_path / "round" / "ocr.keras"
    keras_file.parent.mkdir()
    keras_file.write_bytes(b"")  # never read: the bundling step is replaced below
    trained_by = "seedcam-tools train-ocr --random-world 0.7 --context-blocks 5"
    (keras_file.parent / "train_metrics.json").write_text(
        json.dumps({"random_world_fraction": 0.7, "command": trained_by})
    )
    calls: list[dict[str, Any]] = []

    def bundle(keras_path: Path, out: Path, **kwargs: Any) -> dict[str, Any]:
        calls.append({"keras_path": keras_path, **kwargs})
        return {"summary": {}, "speed": {"int8_speedup": 1.0}}

    monkeypatch.setattr("seedcam_tools.ocr.ship.ship_ocr_bundle", bundle)
    out = tmp_path / "bundle"
    assert main(["train-ocr", "--keras", str(keras_file), "--out", str(out), "-q"]) == 0
    assert main(["train-ocr", "--keras", str(keras_file), "--out", str(out), "--random-world", "0", "-q"]) == 0
    capsys.readouterr()
    assert [call["random_fraction"] for call in calls] == [0.7, 0.0]
    info = calls[0]["train_info"]
    assert info["command"] == trained_by and info["random_world_fraction"] == 0.7
    bundled_by = f"seedcam-tools train-ocr --keras {keras_file} --out {out} --eval-samples 1000 --version {OCR_VERSION}"
    assert info["bundled_by"] == bundled_by

"""Detector training data, anchor targets, mirroring and the mAP metric."""

from __future__ import annotations

import numpy as np
import pytest

from seedcam_firmware.inference.anchors import decode_boxes
from seedcam_firmware.scene import DEFAULT_CAMERA, SceneObject, SceneSpec, render
from seedcam_tools.detect.data import DETECT_INPUT, LABELS, difficult, generate, make_sample
from seedcam_tools.detect.evaluate import (
    average_precision,
    error_breakdown,
    mean_average_precision,
    threshold_metrics,
)
from seedcam_tools.detect.train import (
    _MIRROR_SIGNS,
    _mirrored_labels,
    anchors,
    assign_targets,
    mirror_permutation,
)
from seedcam_tools.export import FLOAT_CONVERSION_TOLERANCE


def test_samples_are_deterministic_and_boxes_lie_in_the_input() -> None:
    a, b = generate(11, 6, workers=1), generate(11, 6, workers=1)
    np.testing.assert_array_equal(a.x, b.x)
    assert a.x.shape == (6, DETECT_INPUT.height, DETECT_INPUT.width, 3)
    for boxes, b_boxes, classes in zip(a.boxes, b.boxes, a.classes, strict=True):
        np.testing.assert_array_equal(boxes, b_boxes)
        assert boxes.shape == (len(classes), 4)
        assert np.all((boxes >= 0) & (boxes <= 1))
        assert np.all(boxes[:, 2] > boxes[:, 0]) and np.all(boxes[:, 3] > boxes[:, 1])
        assert np.all((classes >= 0) & (classes < len(LABELS)))
    assert sum(len(c) for c in a.classes) > 0


def test_truth_box_maps_the_rendered_object_into_the_cropped_input() -> None:
    """A red stop sign's pixels in the model input lie inside its truth box."""
    pixels, boxes, classes = next(
        s for s in (make_sample(k) for k in range(200)) if len(s[2]) == 1 and s[2][0] == LABELS.index("stop")
    )
    x0, y0, x1, y1 = (boxes[0] * ([DETECT_INPUT.width, DETECT_INPUT.height] * 2)).round().astype(int)
    r, g, b = (pixels[..., i].astype(int) for i in range(3))
    red = (r > 2 * g + 20) & (r > 2 * b + 20)
    inside = red[y0 : y1 + 1, x0 : x1 + 1].sum()
    assert inside > 0.9 * red.sum()


def test_every_truth_box_gets_a_positive_anchor_whose_box_decodes_back() -> None:
    a = anchors()
    boxes = np.array([[0.1, 0.2, 0.14, 0.3], [0.5, 0.4, 0.7, 0.5]], np.float32)
    classes = np.array([0, 6])
    box_t, labels = assign_targets(boxes, classes, a)
    for k, c in enumerate(classes):
        pos = np.nonzero(labels == c + 1)[0]
        assert len(pos) >= 1
        decoded = decode_boxes(box_t[pos, :4], a[pos])
        np.testing.assert_allclose(decoded, np.repeat(boxes[k : k + 1], len(pos), 0), atol=1e-5)
    assert box_t[labels <= 0, 4].sum() == 0  # only positives carry a box target


def test_mirrored_targets_equal_targets_of_the_mirrored_truth() -> None:
    a = anchors()
    perm = mirror_permutation()
    np.testing.assert_allclose(a[perm, 1], 1 - a[:, 1], atol=1e-6)
    left, right = LABELS.index("turn_left"), LABELS.index("turn_right")
    boxes = np.array([[0.1, 0.3, 0.16, 0.45], [0.6, 0.2, 0.7, 0.4]], np.float32)
    classes = np.array([left, right])
    box_t, labels = assign_targets(boxes, classes, a)
    mirrored = boxes.copy()
    mirrored[:, [0, 2]] = 1 - boxes[:, [2, 0]]
    box_m, labels_m = assign_targets(mirrored, np.array([right, left]), a)
    np.testing.assert_array_equal(_mirrored_labels()[labels[perm] + 1], labels_m)
    np.testing.assert_allclose(box_t[perm] * _MIRROR_SIGNS, box_m, atol=1e-4)


def test_average_precision_of_a_known_curve() -> None:
    # hits at ranks 1 and 3 of 3 detections, 2 truths: AP = 0.5 * 1 + 0.5 * 2/3
    hits = np.array([1.0, 0.0, 1.0])
    tp, fp = np.cumsum(hits), np.cumsum(1 - hits)
    assert average_precision(tp / 2, tp / (tp + fp)) == pytest.approx(0.5 + 0.5 * 2 / 3)


def test_map_counts_misses_duplicates_and_wrong_classes() -> None:
    truth_boxes = [np.array([[0.1, 0.1, 0.2, 0.2], [0.5, 0.5, 0.6, 0.7]], np.float32)]
    truth_classes = [np.array([0, 1])]
    perfect = [(truth_boxes[0], np.array([0.9, 0.8], np.float32), np.array([0, 1]))]
    assert mean_average_precision(perfect, truth_boxes, truth_classes)["map50"] == pytest.approx(1.0)
    # class 1 found with the wrong class: its AP is 0
    wrong = [(truth_boxes[0], np.array([0.9, 0.8], np.float32), np.array([0, 0]))]
    r = mean_average_precision(wrong, truth_boxes, truth_classes)
    assert r["ap50_per_class"][LABELS[1]] == 0.0 and r["map50"] == pytest.approx(0.5)
    # a higher-scoring duplicate of the class-0 box counts as a false positive after the first hit
    boxes = np.concatenate([truth_boxes[0][:1], truth_boxes[0][:1] + 0.001, truth_boxes[0][1:]])
    dup = [(boxes, np.array([0.9, 0.95, 0.8], np.float32), np.array([0, 0, 1]))]
    assert mean_average_precision(dup, truth_boxes, truth_classes)["ap50_per_class"][LABELS[0]] == pytest.approx(1.0)
    shifted = [(truth_boxes[0] + [0.06, 0, 0.06, 0], np.array([0.9, 0.8], np.float32), np.array([0, 1]))]
    assert mean_average_precision(shifted, truth_boxes, truth_classes)["ap50_per_class"][LABELS[0]] == 0.0


def test_the_breakdown_tells_each_kind_of_loss_apart() -> None:
    """Four objects of four heights: one found, one detected as another class, one of its class scored
    below the threshold, one with nothing on it; a difficult object is left out."""
    truth = np.array(
        [[0.1, 0.1, 0.2, 0.15], [0.3, 0.1, 0.4, 0.25], [0.5, 0.1, 0.6, 0.4], [0.7, 0.1, 0.8, 0.6], [0, 0, 1, 1]],
        np.float32,
    )  # heights 6.4, 19.2, 38.4 and 64 px at a 128-px input
    classes = np.array([0, 1, 2, 3, difficult(4)])
    boxes = np.stack([truth[0], truth[1], truth[1] + 0.002, truth[2], truth[3] + [0.3, 0, 0.3, 0]])
    scores = np.array([0.9, 0.8, 0.3, 0.2, 0.9], np.float32)
    labels = np.array([0, 5, 1, 2, 3])  # object 1 seen as class 5 (and as its own below 0.5)
    r = error_breakdown([(boxes, scores, labels)], [truth], [classes], input_height=128)
    assert r["outcomes"] == {"found": 1, "mislabelled": 1, "scored_low": 1, "not_localised": 1}
    assert [(b["objects"], b["recall"]) for b in r["recall_by_height"]] == [(1, 1.0), (1, 0.0), (1, 0.0), (1, 0.0)]
    assert r["confusions"] == [{"truth": LABELS[1], "detected_as": LABELS[5], "count": 1}]
    lower = error_breakdown([(boxes, scores, labels)], [truth], [classes], input_height=128, threshold=0.25)
    assert lower["outcomes"]["found"] == 2  # object 1's own class at 0.3 now counts


def test_object_yaw_narrows_the_rendered_face() -> None:
    square = SceneSpec(objects=(SceneObject("parking", 0.6, 0.0),), noise_sigma=0.0)
    turned = SceneSpec(objects=(SceneObject("parking", 0.6, 0.0, yaw_rad=0.9),), noise_sigma=0.0)
    w0 = np.diff(np.asarray(render(square)[1].objects[0].box)[[0, 2]])[0]
    w1 = np.diff(np.asarray(render(turned)[1].objects[0].box)[[0, 2]])[0]
    assert 0.5 * w0 < w1 < 0.8 * w0
    with pytest.raises(ValueError):
        SceneObject("stop", 1.0, 0.0, yaw_rad=1.5)


def test_occluder_covers_part_of_an_object() -> None:
    obj = SceneObject("parking", 0.6, 0.0)
    clear, truth = render(SceneSpec(objects=(obj,), noise_sigma=0.0))
    x0, y0, x1, y1 = truth.objects[0].box
    occluder = (x0, y0, (x0 + x1) / 2, y1, 0.0)
    hidden, _ = render(SceneSpec(objects=(obj,), occluders=(occluder,), noise_sigma=0.0))
    w, h = DEFAULT_CAMERA.width, DEFAULT_CAMERA.height
    left = hidden[round(y0 * h) + 2 : round(y1 * h) - 2, round(x0 * w) + 2 : round((x0 + x1) / 2 * w) - 2]
    assert left.max() < 20  # black occluder
    right = slice(round((x0 + x1) / 2 * w) + 2, round(x1 * w) - 2)
    np.testing.assert_array_equal(
        hidden[round(y0 * h) + 2 : round(y1 * h) - 2, right], clear[round(y0 * h) + 2 : round(y1 * h) - 2, right]
    )


def test_tiny_train_detector_run_writes_a_bundle_the_firmware_loads(tmp_path) -> None:  # noqa: ANN001
    """The whole train-detector command on a few scenes, in its two halves.

    ``--train-only`` (what runs on a GPU machine under any Keras backend), then
    ``--keras`` bundles that model: float export checked against Keras → INT8 → bundle.
    """
    import json

    from seedcam_firmware.inference.detection import make_detection_decoder
    from seedcam_firmware.inference.manifest import load_manifest
    from seedcam_tools.cli import main
    from seedcam_tools.frames import heldout_frames, write_folders

    own = write_folders(heldout_frames("random", 9, 6), tmp_path / "own", LABELS)["detect"]
    out, work = tmp_path / "detect", tmp_path / "work"
    common = ["train-detector", "--out", str(out), "--work", str(work), "--eval-samples", "8", "--quiet"]
    train = ["--train-only", "--samples", "48", "--epochs", "1", "--width", "0.5", "--batch-size", "16"]
    assert main([*common, *train, "--data", str(own), "--data-fraction", "0.2"]) == 0
    assert (work / "detector.keras").is_file() and not out.exists()
    trained = json.loads((work / "train_metrics.json").read_text())
    assert trained["width"] == 0.5 and trained["own_data"] == {"folder": str(own), "frames": 6, "fraction": 0.2}
    code = main([*common, "--keras", str(work / "detector.keras")])
    assert code == 0
    assert json.loads((out / "metrics.json").read_text())["training"]["samples"] == 48
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["export"]["float_conversion_inputs"] == 100
    assert metrics["export"]["float_conversion_max_rel_diff"] <= FLOAT_CONVERSION_TOLERANCE
    assert set(metrics["summary"]) == {"metric", "float32", "int8"}
    for precision in ("int8", "float32"):
        manifest = load_manifest(out, precision=precision)
        assert manifest.task == "detect" and manifest.input.crop_bottom == DETECT_INPUT.crop_bottom
        decoder = make_detection_decoder(
            manifest.decoder, input_width=256, input_height=128, outputs=manifest.outputs, bundle_dir=out
        )
        assert tuple(decoder.labels) == LABELS


def test_losses_match_a_numpy_reference() -> None:
    """The focal and box losses (written in ``keras.ops`` for every backend) against plain numpy."""
    from keras import ops

    from seedcam_tools.detect.train import FOCAL_ALPHA, FOCAL_GAMMA, _box_loss, _focal_loss

    rng = np.random.default_rng(0)
    n, a, c = 2, 6, 3
    target = np.zeros((n, a, c), np.float32)
    target[0, 1, 2] = target[1, 4, 0] = target[1, 5, 1] = 1.0
    valid = (rng.random((n, a, 1)) > 0.2).astype(np.float32)
    valid[0, 1] = valid[1, 4] = valid[1, 5] = 1.0
    p = rng.uniform(0.01, 0.99, (n, a, c)).astype(np.float32)
    p_t = np.where(target == 1, p, 1 - p)
    alpha = np.where(target == 1, FOCAL_ALPHA, 1 - FOCAL_ALPHA)
    expected = (alpha * (1 - p_t) ** FOCAL_GAMMA * -np.log(p_t) * valid).sum(axis=(1, 2)) * n / target.sum()
    got = ops.convert_to_numpy(_focal_loss(np.concatenate([target, valid], -1), p))
    np.testing.assert_allclose(got, expected, rtol=1e-5)

    enc_true = rng.normal(size=(n, a, 4)).astype(np.float32) * 2
    enc_pred = rng.normal(size=(n, a, 4)).astype(np.float32)
    positive = (rng.random((n, a, 1)) > 0.5).astype(np.float32)
    err = np.abs(enc_true - enc_pred)
    huber = np.where(err < 1, 0.5 * err**2, err - 0.5)
    expected_box = (huber * positive).sum(axis=(1, 2)) * n / positive.sum()
    got_box = ops.convert_to_numpy(_box_loss(np.concatenate([enc_true, positive], -1), enc_pred))
    np.testing.assert_allclose(got_box, expected_box, rtol=1e-5)


def test_width_scales_the_channels_but_not_the_outputs() -> None:
    from seedcam_tools.detect.model import DETECT_OUTPUTS, build_detector

    narrow, wide = build_detector(width=1.0), build_detector()
    assert wide.count_params() > 2 * narrow.count_params()
    for model in (narrow, wide):
        assert {k: tuple(v.shape[1:]) for k, v in zip(model.output_names, model.outputs, strict=True)} == {
            k: v[1:] for k, v in DETECT_OUTPUTS.items()
        }


def test_a_deepened_detector_computes_what_the_shallow_one_did_until_trained() -> None:
    """The residual blocks start as the identity, and every other weight is the shallow detector's."""
    from seedcam_firmware.inference.preprocess import normalise
    from seedcam_tools.detect.model import build_detector, deepen

    shallow = build_detector(width=0.5, blocks=0)
    x = normalise(generate(0, 4, workers=1).x, DETECT_INPUT)
    deep = deepen(shallow, 2, width=0.5)
    assert deep.count_params() > shallow.count_params()
    before, after = shallow.predict(x, verbose=0), deep.predict(x, verbose=0)
    for name in ("boxes", "scores"):
        np.testing.assert_allclose(after[name], before[name], atol=1e-6)
    # deepened again (2 -> 4 blocks): the trained blocks keep their weights, the new ones are the identity
    for layer in deep.layers:
        if layer.name.startswith("residual_") and layer.name.endswith("_bn2"):
            gamma, *rest = layer.get_weights()
            layer.set_weights([np.full_like(gamma, 0.5), *rest])
    deeper = deepen(deep, 4, width=0.5)
    np.testing.assert_allclose(deeper.get_layer("residual_s8_1_bn2").get_weights()[0], 0.5)
    assert deeper.count_params() > deep.count_params()
    moved, still = deep.predict(x, verbose=0), deeper.predict(x, verbose=0)
    assert not np.allclose(moved["boxes"], before["boxes"], atol=1e-4)  # the edited blocks compute something
    for name in ("boxes", "scores"):
        np.testing.assert_allclose(still[name], moved[name], atol=1e-5)
    with pytest.raises(ValueError, match="do not fit within 2"):
        deepen(deep, 2, width=0.5)
    with pytest.raises(ValueError):  # another width: the weights do not fit
        deepen(build_detector(width=1.0, blocks=0), 2, width=0.5)


def test_training_continues_from_a_saved_detector(tmp_path) -> None:  # noqa: ANN001
    """``init_from`` starts from the saved weights (at a vanishing learning rate they barely move).

    Ignoring ``init_from`` would start from fresh random kernels, which differ from the saved ones.
    """
    from seedcam_tools.detect.model import build_detector
    from seedcam_tools.detect.train import train_on_data

    start = build_detector(width=0.5)
    start.save(tmp_path / "start.keras")
    data = generate(0, 8, workers=1)
    model = train_on_data(data, seed=1, epochs=1, batch_size=8, lr=1e-12, init_from=tmp_path / "start.keras")
    assert sum("kernel" in w.path for w in start.weights) >= 16
    for before, after in zip(start.weights, model.weights, strict=True):
        if "kernel" in before.path:
            np.testing.assert_allclose(np.asarray(after), np.asarray(before), atol=1e-6)


def test_difficult_truth_makes_its_anchors_ignored_not_background() -> None:
    a = anchors()
    boxes = np.array([[0.1, 0.2, 0.14, 0.3], [0.5, 0.4, 0.7, 0.5]], np.float32)
    _, plain = assign_targets(boxes[:1], np.array([0]), a)
    _, labels = assign_targets(boxes, np.array([0, difficult(6)]), a)
    _, as_truth = assign_targets(boxes[1:], np.array([6]), a)
    on_hard = as_truth == 7  # the anchors that would learn the second box if it were not difficult
    assert on_hard.any() and np.all(labels[on_hard] == -1)
    assert not np.any(labels == 7)
    np.testing.assert_array_equal(labels[~on_hard & (labels != -1)], plain[~on_hard & (labels != -1)])


def test_detections_on_difficult_objects_neither_count_nor_cost() -> None:
    truth_boxes = [np.array([[0.1, 0.1, 0.3, 0.3], [0.6, 0.6, 0.8, 0.8]], np.float32)]
    truth_classes = [np.array([0, difficult(0)])]
    on_both = (
        np.array([[0.1, 0.1, 0.3, 0.3], [0.6, 0.6, 0.8, 0.8]], np.float32),
        np.array([0.9, 0.8]),
        np.array([0, 0]),
    )
    r = mean_average_precision([on_both], truth_boxes, truth_classes)
    assert r["map50"] == pytest.approx(1.0) and r["objects"] == 1 and r["difficult_objects"] == 1
    assert r["at_threshold"]["recall"] == 1.0 and r["at_threshold"]["false_positives_per_frame"] == 0.0
    # the same detection of another class on the difficult object is a false positive
    wrong = (on_both[0], on_both[1], np.array([0, 1]))
    t = threshold_metrics([wrong], truth_boxes, truth_classes)
    assert t["recall"] == 1.0 and t["false_positives_per_frame"] == 1.0
    below = (on_both[0], np.array([0.4, 0.8]), np.array([0, 0]))
    assert threshold_metrics([below], truth_boxes, truth_classes)["recall"] == 0.0


def test_a_shipped_tflite_becomes_the_same_trainable_keras_model() -> None:
    from pathlib import Path

    from seedcam_firmware.inference.preprocess import normalise
    from seedcam_firmware.inference.runtime import Model
    from seedcam_tools.detect.model import build_detector
    from seedcam_tools.tflite_weights import TfliteWeightsError, load_tflite_weights

    shipped = Path(__file__).parents[2] / "models" / "detect" / "detect_f32.tflite"
    x = normalise(generate(20_000_000, 24, workers=1).x, DETECT_INPUT)
    model = build_detector()
    load_tflite_weights(model, shipped, x)
    tflite = Model(shipped, num_threads=1)
    ours = model.predict(x[:3], verbose=0)
    for i in range(3):
        ref = tflite.invoke(x[i : i + 1])
        np.testing.assert_allclose(ours["scores"][i], ref["scores"][0], atol=1e-4)
        np.testing.assert_allclose(ours["boxes"][i], ref["boxes"][0], atol=1e-3)
    # training mode (batch statistics) on the calibration frames as one batch: the same function
    inference = model(x, training=False)
    training = model(x, training=True)
    np.testing.assert_allclose(np.asarray(training["scores"]), np.asarray(inference["scores"]), atol=2e-3)
    np.testing.assert_allclose(np.asarray(training["boxes"]), np.asarray(inference["boxes"]), atol=1e-2)
    with pytest.raises(TfliteWeightsError, match="not the same architecture"):
        load_tflite_weights(build_detector(width=1.0), shipped, x)


def test_own_frames_are_mixed_in_at_the_asked_share() -> None:
    from seedcam_tools.detect.data import data_from_frames, mix
    from seedcam_tools.frames import FrameObject, LabelledFrame

    frame = LabelledFrame(
        "mine",
        np.zeros((240, 320, 3), np.uint8),
        (
            FrameObject("stop", (10, 10, 40, 40)),
            FrameObject("forklift", (50, 10, 90, 60)),
            FrameObject("plate", (100, 30, 160, 50), True),
        ),
        None,
    )
    own, unknown = data_from_frames([frame, frame])
    assert unknown == 2 and own.classes[0].tolist() == [LABELS.index("stop"), difficult(LABELS.index("plate"))]
    synthetic = generate(0, 40, workers=1)
    mixed = mix(synthetic, own, 0.2)
    assert len(mixed.x) == 40 + 10 and (mixed.seeds == -1).sum() == 10
    with pytest.raises(ValueError, match="between 0 and 1"):
        mix(synthetic, own, 1.0)


def test_a_dead_residual_branch_is_folded_into_a_live_one_that_computes_the_same(tmp_path) -> None:  # noqa: ANN001
    """A branch whose first ReLU is zero on every scene is rewritten with a live range; no output moves.

    (A real dead branch of detect-v5's network made an INT8 file XNNPACK refused; folded, it ran.)
    """
    from seedcam_firmware.inference.preprocess import normalise
    from seedcam_firmware.inference.runtime import Model
    from seedcam_tools.detect.model import DETECT_OUTPUTS, build_detector, fold_dead_branches
    from seedcam_tools.export import to_tflite

    model = build_detector(width=0.5, blocks=1)
    for name in ("residual_s8_0", "residual_s16_0"):  # both branches add something to their block
        gamma, *rest = model.get_layer(f"{name}_bn2").get_weights()
        model.get_layer(f"{name}_bn2").set_weights([np.full_like(gamma, 0.5), *rest])
    # as training kills a branch: every pre-activation of its first ReLU below zero on every input
    gamma, beta, mean, variance = model.get_layer("residual_s8_0_bn1").get_weights()
    model.get_layer("residual_s8_0_bn1").set_weights([gamma, np.full_like(beta, -1000.0), mean, variance])
    pixels = generate(0, 16, workers=1).x
    x = normalise(pixels, DETECT_INPUT)
    before = model.predict(x, verbose=0)
    assert fold_dead_branches(model, x) == ["residual_s8_0"]
    after = model.predict(x, verbose=0)
    for name in ("boxes", "scores"):
        np.testing.assert_allclose(after[name], before[name], atol=1e-6)
    assert fold_dead_branches(model, x) == []  # the folded branch is alive: its ReLU gives 1
    path = tmp_path / "folded.tflite"
    to_tflite(model, path, int8=True, representative=pixels, input_spec=DETECT_INPUT, outputs=DETECT_OUTPUTS)
    runtime = Model(path, input_shape=DETECT_INPUT.shape, outputs=DETECT_OUTPUTS, num_threads=1)
    assert np.isfinite(runtime.invoke(x[:1])["scores"]).all()

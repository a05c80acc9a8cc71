"""Detection decoders of the four output layouts, NMS, manifest checks, and classifier top-k."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seedcam.errors import BundleError
from seedcam_firmware.inference.anchors import AnchorLevel, encode_boxes, grid_anchors
from seedcam_firmware.inference.classify import activate, top_k
from seedcam_firmware.inference.detection import (
    MAX_CANDIDATES,
    DetectionParams,
    RawDetection,
    SsdAnchorDecoder,
    make_detection_decoder,
    nms,
)

LABELS = ["person", "car", "dog"]
LOOSE = DetectionParams(score_threshold=0.3, iou_threshold=0.45, max_detections=20)


def _close(det: RawDetection, class_id: int, score: float, box: tuple[float, ...], tol: float = 1e-5) -> None:
    assert det.class_id == class_id
    assert det.score == pytest.approx(score, abs=tol)
    assert det.box == pytest.approx(box, abs=tol)


# --- NMS ----------------------------------------------------------------------------------------------------------


def test_nms_keeps_the_best_of_overlapping_boxes_and_all_separate_ones() -> None:
    boxes = np.array(
        [
            [0.0, 0.0, 0.5, 0.5],
            [0.02, 0.0, 0.52, 0.5],  # IoU with box 0 ~0.92
            [0.6, 0.6, 0.9, 0.9],
            [0.0, 0.0, 0.5, 0.25],  # IoU with box 1 = 0.12 / 0.255 ~0.47
        ]
    )
    scores = np.array([0.8, 0.9, 0.3, 0.7])
    assert nms(boxes, scores, 0.45, 10).tolist() == [1, 2]
    assert nms(boxes, scores, 0.5, 10).tolist() == [1, 3, 2]
    assert nms(boxes, scores, 0.95, 10).tolist() == [1, 0, 3, 2]
    assert nms(boxes, scores, 0.5, 2).tolist() == [1, 3]
    assert nms(boxes, scores, 0.5, 0).tolist() == []


def test_nms_iou_equal_to_threshold_is_kept() -> None:
    boxes = np.array([[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.5]])  # IoU exactly 0.5
    assert nms(boxes, np.array([0.9, 0.8]), 0.5, 5).tolist() == [0, 1]
    assert nms(boxes, np.array([0.9, 0.8]), 0.49, 5).tolist() == [0]


def test_nms_equal_scores_keep_index_order_and_empty_input() -> None:
    boxes = np.array([[0.0, 0.0, 0.2, 0.2], [0.5, 0.5, 0.7, 0.7]])
    assert nms(boxes, np.array([0.5, 0.5]), 0.5, 5).tolist() == [0, 1]
    assert nms(np.zeros((0, 4)), np.zeros(0), 0.5, 5).tolist() == []


@pytest.mark.parametrize(
    ("boxes", "scores", "iou", "max_out"),
    [
        (np.zeros((2, 3)), np.zeros(2), 0.5, 5),
        (np.zeros((2, 4)), np.zeros(3), 0.5, 5),
        (np.zeros((2, 4)), np.zeros(2), 1.5, 5),
        (np.zeros((2, 4)), np.zeros(2), 0.5, -1),
    ],
)
def test_nms_rejects_bad_arguments(boxes: np.ndarray, scores: np.ndarray, iou: float, max_out: int) -> None:
    with pytest.raises(ValueError):
        nms(boxes, scores, iou, max_out)


# --- params -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw",
    [{"score_threshold": -0.1}, {"score_threshold": 1.1}, {"iou_threshold": 2.0}, {"max_detections": 0}],
)
def test_detection_params_validate_ranges(kw: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        DetectionParams(**kw)  # type: ignore[arg-type]


def test_detection_params_from_manifest() -> None:
    p = DetectionParams.from_manifest({"layout": "yolov8", "score_threshold": 0.25, "max_detections": 5})
    assert p == DetectionParams(score_threshold=0.25, iou_threshold=0.45, max_detections=5)
    with pytest.raises(BundleError, match="thresholds"):
        DetectionParams.from_manifest({"iou_threshold": 3})


# --- ssd_anchors --------------------------------------------------------------------------------------------------

# three anchors (cy, cx, h, w)
ANCHORS = np.array([[0.5, 0.5, 0.25, 0.25], [0.25, 0.25, 0.5, 0.5], [0.75, 0.75, 0.2, 0.4]], dtype=np.float32)


def _anchor_file(tmp_path: Path) -> Path:
    np.save(tmp_path / "anchors.npy", ANCHORS)
    return tmp_path


def test_ssd_anchors_decodes_hand_encoded_boxes(tmp_path: Path) -> None:
    dec = make_detection_decoder(
        {"layout": "ssd_anchors", "labels": LABELS, "anchors": {"file": "anchors.npy"}},
        input_width=64,
        input_height=64,
        outputs={"boxes": (1, 3, 4), "scores": (1, 3, 3)},
        bundle_dir=_anchor_file(tmp_path),
    )
    assert dec.layout == "ssd_anchors" and dec.output_names == ("boxes", "scores")
    # anchor 0: centre moves down by 0.05 (ty = 0.05 / 0.25 * 10 = 2), height doubles (th = ln 2 * 5)
    enc = np.zeros((1, 3, 4), np.float32)
    enc[0, 0] = [2.0, 0.0, 5 * math.log(2), 0.0]
    scores = np.array([[[0.1, 0.9, 0.0], [0.0, 0.0, 0.6], [0.2, 0.1, 0.1]]], np.float32)
    dets = dec.decode({"boxes": enc, "scores": scores}, LOOSE)
    assert len(dets) == 2
    _close(dets[0], 1, 0.9, (0.375, 0.3, 0.625, 0.8))
    _close(dets[1], 2, 0.6, (0.0, 0.0, 0.5, 0.5))  # anchor 1 itself


def test_ssd_anchors_background_softmax_and_output_names(tmp_path: Path) -> None:
    dec = make_detection_decoder(
        {
            "layout": "ssd_anchors",
            "labels": LABELS,
            "anchors": {"file": "anchors.npy"},
            "score_activation": "softmax",
            "background_class": True,
            "output_names": {"boxes": "raw_boxes", "scores": "raw_scores"},
        },
        input_width=64,
        input_height=64,
        outputs={"raw_boxes": (1, 3, 4), "raw_scores": (1, 3, 4)},
        bundle_dir=_anchor_file(tmp_path),
    )
    logits = np.zeros((1, 3, 4), np.float32)
    logits[0, 0] = np.log([0.1, 0.05, 0.05, 0.8])  # softmax gives back background 0.1, class 2 0.8
    logits[0, 1] = [5.0, 0.0, 0.0, 0.0]  # mostly background
    dets = dec.decode({"raw_boxes": np.zeros((1, 3, 4)), "raw_scores": logits}, LOOSE)
    assert len(dets) == 1
    _close(dets[0], 2, 0.8, (0.375, 0.375, 0.625, 0.625))


def test_ssd_anchors_sigmoid_scores() -> None:
    dec = SsdAnchorDecoder(LABELS, ANCHORS, score_activation="sigmoid")
    logits = np.full((1, 3, 3), -10.0, np.float32)
    logits[0, 2, 0] = math.log(3.0)  # sigmoid -> 0.75
    dets = dec.decode({"boxes": np.zeros((1, 3, 4)), "scores": logits}, LOOSE)
    assert [(d.class_id, round(d.score, 6)) for d in dets] == [(0, 0.75)]


def test_ssd_anchors_levels_generate_the_grid() -> None:
    levels = [{"stride": 16, "sizes": [[16, 16], [32, 16]]}]
    dec = make_detection_decoder(
        {"layout": "ssd_anchors", "labels": LABELS, "anchors": {"levels": levels}},
        input_width=64,
        input_height=32,
        outputs={"boxes": (1, 16, 4), "scores": (1, 16, 3)},
    )
    assert isinstance(dec, SsdAnchorDecoder)
    assert dec.num_anchors == 2 * 4 * 2
    np.testing.assert_allclose(dec.anchors, grid_anchors(64, 32, [AnchorLevel(16, ((16, 16), (32, 16)))]))


def test_nms_is_per_class_in_decoding() -> None:
    anchors = np.array([[0.5, 0.5, 0.4, 0.4]] * 3, np.float32)  # three identical boxes
    dec = SsdAnchorDecoder(LABELS, anchors)
    scores = np.array([[[0.9, 0, 0], [0.8, 0, 0], [0, 0.7, 0]]], np.float32)
    dets = dec.decode({"boxes": np.zeros((1, 3, 4)), "scores": scores}, LOOSE)
    assert [(d.class_id, round(d.score, 3)) for d in dets] == [(0, 0.9), (1, 0.7)]


def test_thresholds_max_detections_and_order() -> None:
    anchors = np.array([[0.1 + 0.1 * i, 0.5, 0.05, 0.05] for i in range(8)], np.float32)  # disjoint boxes
    dec = SsdAnchorDecoder(LABELS, anchors)
    s = np.array([0.2, 0.95, 0.5, 0.49, 0.7, 0.51, 0.6, 0.3], np.float32)
    scores = np.zeros((1, 8, 3), np.float32)
    scores[0, :, 1] = s
    out = {"boxes": np.zeros((1, 8, 4)), "scores": scores}
    got = dec.decode(out, DetectionParams(score_threshold=0.5))
    assert [round(d.score, 2) for d in got] == [0.95, 0.7, 0.6, 0.51, 0.5]
    got = dec.decode(out, DetectionParams(score_threshold=0.5, max_detections=2))
    assert [round(d.score, 2) for d in got] == [0.95, 0.7]
    assert dec.decode(out, DetectionParams(score_threshold=0.99)) == []


def test_boxes_are_clipped_and_boxes_outside_dropped() -> None:
    anchors = np.array([[0.0, 0.0, 0.4, 0.4], [-0.5, -0.5, 0.2, 0.2]], np.float32)  # second lies outside
    dec = SsdAnchorDecoder(LABELS, anchors)
    scores = np.zeros((1, 2, 3), np.float32)
    scores[0, :, 0] = 0.9
    dets = dec.decode({"boxes": np.zeros((1, 2, 4)), "scores": scores}, LOOSE)
    assert len(dets) == 1
    _close(dets[0], 0, 0.9, (0.0, 0.0, 0.2, 0.2))


def test_decode_names_a_missing_or_misshapen_output() -> None:
    dec = SsdAnchorDecoder(LABELS, ANCHORS)
    with pytest.raises(ValueError, match="'scores'"):
        dec.decode({"boxes": np.zeros((1, 3, 4))}, LOOSE)
    with pytest.raises(ValueError, match="'boxes'"):
        dec.decode({"boxes": np.zeros((1, 4, 4)), "scores": np.zeros((1, 3, 3))}, LOOSE)


@settings(max_examples=60, deadline=None)
@given(
    x0=st.floats(0.0, 0.8),
    y0=st.floats(0.0, 0.8),
    w=st.floats(0.05, 0.2),
    h=st.floats(0.05, 0.2),
    stride=st.sampled_from([8, 16, 32]),
    aw=st.floats(4.0, 64.0),
    ah=st.floats(4.0, 64.0),
    pick=st.integers(0, 10_000),
    cls=st.integers(0, 2),
)
def test_anchor_encoding_round_trips_through_the_decoder(
    x0: float, y0: float, w: float, h: float, stride: int, aw: float, ah: float, pick: int, cls: int
) -> None:
    levels = [{"stride": stride, "sizes": [[aw, ah], [ah, aw]]}]
    anchors = grid_anchors(96, 64, [AnchorLevel(stride, ((aw, ah), (ah, aw)))])
    n = len(anchors)
    dec = make_detection_decoder(
        {"layout": "ssd_anchors", "labels": LABELS, "anchors": {"levels": levels}},
        input_width=96,
        input_height=64,
        outputs={"boxes": (1, n, 4), "scores": (1, n, 3)},
    )
    box = np.array([[x0, y0, x0 + w, y0 + h]])
    i = pick % n
    enc = np.zeros((1, n, 4), np.float32)
    enc[0, i] = encode_boxes(box, anchors[i : i + 1])[0]
    scores = np.zeros((1, n, 3), np.float32)
    scores[0, i, cls] = 0.8
    dets = dec.decode({"boxes": enc, "scores": scores}, LOOSE)
    assert len(dets) == 1
    _close(dets[0], cls, 0.8, tuple(box[0]), tol=1e-4)


# --- tflite_postprocess -------------------------------------------------------------------------------------------

PP_OUTPUTS = {"boxes": (1, 4, 4), "classes": (1, 4), "scores": (1, 4), "count": (1,)}


def test_tflite_postprocess_reads_count_boxes_and_label_offset() -> None:
    dec = make_detection_decoder(
        {"layout": "tflite_postprocess", "labels": LABELS, "label_offset": 1},
        input_width=300,
        input_height=300,
        outputs=PP_OUTPUTS,
    )
    out = {
        "boxes": np.array([[[0.1, 0.2, 0.5, 0.6], [0.5, 0.5, 0.9, 0.7], [0.0, 0.0, 1.0, 1.0], [0.2, 0.2, 0.3, 0.3]]]),
        "classes": np.array([[1.0, 0.0, 5.0, 0.0]]),  # + offset: 2, 1, 6 (unknown: dropped)
        "scores": np.array([[0.9, 0.7, 0.8, 0.99]]),  # the 4th is beyond count
        "count": np.array([3.0]),
    }
    dets = dec.decode(out, LOOSE)
    assert len(dets) == 2
    _close(dets[0], 2, 0.9, (0.2, 0.1, 0.6, 0.5))  # (ymin, xmin, ymax, xmax) -> (x0, y0, x1, y1)
    _close(dets[1], 1, 0.7, (0.5, 0.5, 0.7, 0.9))


def test_tflite_postprocess_custom_names_and_thresholds() -> None:
    names = {"boxes": "TFLite_Detection_PostProcess", "classes": "TFLite_Detection_PostProcess:1"}
    outputs = {
        "TFLite_Detection_PostProcess": (1, 4, 4),
        "TFLite_Detection_PostProcess:1": (1, 4),
        "scores": (1, 4),
        "count": (1,),
    }
    dec = make_detection_decoder(
        {"layout": "tflite_postprocess", "labels": LABELS, "output_names": names},
        input_width=300,
        input_height=300,
        outputs=outputs,
    )
    assert dec.output_names == ("TFLite_Detection_PostProcess", "TFLite_Detection_PostProcess:1", "scores", "count")
    out = {
        "TFLite_Detection_PostProcess": np.array([[[0.1, 0.1, 0.2, 0.2], [0.5, 0.5, 0.6, 0.6]] + [[0, 0, 0, 0]] * 2]),
        "TFLite_Detection_PostProcess:1": np.array([[0.0, 2.0, 0.0, 0.0]]),
        "scores": np.array([[0.6, 0.4, 0.0, 0.0]]),
        "count": np.array([2.0]),
    }
    assert [d.class_id for d in dec.decode(out, LOOSE)] == [0, 2]
    assert [d.class_id for d in dec.decode(out, DetectionParams(score_threshold=0.5))] == [0]


# --- YOLO ---------------------------------------------------------------------------------------------------------


def test_yolov5_pixels_objectness_times_class() -> None:
    dec = make_detection_decoder(
        {"layout": "yolov5", "labels": LABELS}, input_width=320, input_height=240, outputs={"out": (1, 3, 8)}
    )
    rows = np.zeros((1, 3, 8), np.float32)
    rows[0, 0] = [160, 120, 64, 48, 0.8, 0.1, 0.0, 0.9]  # 0.8 * 0.9 = 0.72, class 2
    rows[0, 1] = [32, 24, 32, 24, 0.4, 0.9, 0.0, 0.0]  # 0.36, class 0
    rows[0, 2] = [100, 100, 10, 10, 0.1, 0.9, 0.9, 0.9]  # 0.09: below threshold
    dets = dec.decode({"out": rows}, LOOSE)
    assert len(dets) == 2
    _close(dets[0], 2, 0.72, (0.4, 0.4, 0.6, 0.6))
    _close(dets[1], 0, 0.36, (0.05, 0.05, 0.15, 0.15))


def test_yolov5_sigmoid_and_normalized_coords() -> None:
    dec = make_detection_decoder(
        {"layout": "yolov5", "labels": LABELS, "coords": "normalized", "score_activation": "sigmoid"},
        input_width=320,
        input_height=240,
        outputs={"out": (1, 1, 8)},
    )
    rows = np.array([[[0.5, 0.5, 0.2, 0.4, 10.0, -10.0, 0.0, -10.0]]], np.float32)  # ~1 * 0.5, class 1
    dets = dec.decode({"out": rows}, LOOSE)
    assert len(dets) == 1
    _close(dets[0], 1, 0.5, (0.4, 0.3, 0.6, 0.7), tol=1e-4)


def test_yolov8_transposed_layout_and_output_name() -> None:
    dec = make_detection_decoder(
        {"layout": "yolov8", "labels": LABELS, "output_name": "output0"},
        input_width=640,
        input_height=480,
        outputs={"output0": (1, 7, 4), "protos": (1, 8, 8, 32)},
    )
    rows = np.zeros((4, 7), np.float32)
    rows[1] = [320, 240, 64, 96, 0.0, 0.85, 0.1]
    rows[3] = [64, 48, 64, 48, 0.55, 0.0, 0.0]
    dets = dec.decode({"output0": rows.T[None]}, LOOSE)
    assert len(dets) == 2
    _close(dets[0], 1, 0.85, (0.45, 0.4, 0.55, 0.6))
    _close(dets[1], 0, 0.55, (0.05, 0.05, 0.15, 0.15))


# --- manifest checks ----------------------------------------------------------------------------------------------


def _make(decoder: dict, outputs: dict, bundle_dir: Path | None = None):  # type: ignore[no-untyped-def]
    return make_detection_decoder(decoder, input_width=64, input_height=64, outputs=outputs, bundle_dir=bundle_dir)


def test_yolov8_shape_disagreeing_with_labels_says_what_it_expects() -> None:
    labels = [f"c{i}" for i in range(7)]
    with pytest.raises(BundleError) as err:
        _make({"layout": "yolov8", "labels": labels}, {"output0": (1, 84, 8400)})
    msg = str(err.value)
    assert "yolov8" in msg and "[1, 4+C, N]" in msg and "C=7" in msg and "[1, 11, N]" in msg
    assert "'output0' [1, 84, 8400]" in msg


def test_yolov5_shape_mismatch_and_ambiguous_output() -> None:
    with pytest.raises(BundleError, match=r"yolov5 expects one output 'o' \[1, N, 5\+C\] with C=3"):
        _make({"layout": "yolov5", "labels": LABELS}, {"o": (1, 100, 9)})
    with pytest.raises(BundleError, match="output_name"):
        _make({"layout": "yolov5", "labels": LABELS}, {"a": (1, 100, 8), "b": (1, 100, 8)})


def test_ssd_anchor_count_and_class_count_must_match(tmp_path: Path) -> None:
    d = {"layout": "ssd_anchors", "labels": LABELS, "anchors": {"file": "anchors.npy"}}
    _anchor_file(tmp_path)
    with pytest.raises(BundleError, match=r"N=3 \(the anchors\).*got 'boxes' \[1, 5, 4\]"):
        _make(d, {"boxes": (1, 5, 4), "scores": (1, 5, 3)}, tmp_path)
    with pytest.raises(BundleError, match=r"K=C\+1=4 \(3 labels \+ background\)"):
        _make({**d, "background_class": True}, {"boxes": (1, 3, 4), "scores": (1, 3, 3)}, tmp_path)
    with pytest.raises(BundleError, match="no bundle folder"):
        _make(d, {"boxes": (1, 3, 4), "scores": (1, 3, 3)})
    with pytest.raises(BundleError, match="cannot read anchors file"):
        _make({**d, "anchors": {"file": "missing.npy"}}, {"boxes": (1, 3, 4), "scores": (1, 3, 3)}, tmp_path)
    with pytest.raises(BundleError, match="anchors"):
        _make({**d, "anchors": {"levels": [{"stride": 0, "sizes": [[8, 8]]}]}}, {"boxes": (1, 3, 4)})
    with pytest.raises(BundleError, match="score_activation"):
        _make({**d, "score_activation": "relu"}, {"boxes": (1, 3, 4), "scores": (1, 3, 3)}, tmp_path)


def test_postprocess_shapes_must_agree() -> None:
    bad = {**PP_OUTPUTS, "scores": (1, 5)}
    with pytest.raises(BundleError, match=r"tflite_postprocess expects .* with one M; got .*'scores' \[1, 5\]"):
        _make({"layout": "tflite_postprocess", "labels": LABELS}, bad)
    with pytest.raises(BundleError, match="unknown 'output_names' keys"):
        _make({"layout": "tflite_postprocess", "labels": LABELS, "output_names": {"box": "x"}}, PP_OUTPUTS)


@pytest.mark.parametrize(
    ("decoder", "match"),
    [
        ({"layout": "centernet", "labels": LABELS}, "unknown detection layout 'centernet'"),
        ({"labels": LABELS}, "unknown detection layout None"),
        ({"layout": "yolov8"}, "'labels' must be a non-empty list"),
        ({"layout": "yolov8", "labels": "person"}, "'labels' must be a non-empty list"),
        ({"layout": "yolov8", "labels": LABELS, "box_scales": [1, 1, 1, 1]}, r"unknown decoder keys \['box_scales'\]"),
        ({"layout": "yolov8", "labels": LABELS, "coords": "cm"}, "coords"),
    ],
)
def test_bad_decoder_sections_raise_bundle_error(decoder: dict, match: str) -> None:
    with pytest.raises(BundleError, match=match):
        _make(decoder, {"output0": (1, 7, 100)})


def test_manifest_thresholds_are_allowed_keys() -> None:
    dec = _make({"layout": "yolov8", "labels": LABELS, "score_threshold": 0.3, "max_detections": 3}, {"o": (1, 7, 10)})
    assert dec.layout == "yolov8" and dec.labels == tuple(LABELS)


# --- activations and classifier top-k (shared with the detection decoders) ----------------------------------------


def test_activations() -> None:
    np.testing.assert_allclose(activate(np.array([0.0, math.log(3.0)]), "sigmoid"), [0.5, 0.75], rtol=1e-6)
    np.testing.assert_allclose(activate(np.array([[1000.0, 1000.0]]), "softmax"), [[0.5, 0.5]])
    assert np.isfinite(activate(np.array([-1e4, 1e4]), "sigmoid")).all()
    with pytest.raises(ValueError, match="unknown activation"):
        activate(np.zeros(2), "relu")


def test_top_k() -> None:
    labels = ["a", "b", "c", "d"]
    best = top_k(np.array([[0.1, 0.4, 0.4, 0.1]]), labels, 2)  # a tie keeps index order
    assert [(i, name) for i, name, _ in best] == [(1, "b"), (2, "c")]
    assert [score for _, _, score in best] == pytest.approx([0.4, 0.4])
    soft = top_k(np.array([0.0, math.log(3.0), 0.0, 0.0]), labels, 10, activation="softmax")
    assert [i for i, _, _ in soft] == [1, 0, 2, 3]
    assert soft[0][2] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="labels"):
        top_k(np.zeros(3), labels, 1)
    with pytest.raises(ValueError, match="k must be"):
        top_k(np.zeros(4), labels, 0)


def test_a_flood_of_candidates_keeps_the_best() -> None:
    n = MAX_CANDIDATES + 904
    dec = make_detection_decoder(
        {"layout": "yolov8", "labels": LABELS}, input_width=n, input_height=10, outputs={"o": (1, 7, n)}
    )
    rows = np.zeros((7, n), np.float32)
    rows[0] = np.arange(n) + 0.5  # 1-pixel boxes side by side: nothing overlaps
    rows[1:4] = [[5.0], [1.0], [1.0]]
    rows[4] = np.random.default_rng(3).permutation(n) / n * 0.5 + 0.5  # all above the threshold
    dets = dec.decode({"o": rows[None]}, LOOSE)
    assert [d.score for d in dets] == pytest.approx(np.sort(rows[4])[::-1][:20])


def _overlapping_boxes(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` boxes crowded into a small area (many overlaps, some ties), and their scores."""
    xy = rng.uniform(0.0, 0.3, (n, 2))
    wh = rng.uniform(0.02, 0.2, (n, 2))
    boxes = np.concatenate([xy, xy + wh], axis=1)
    scores = rng.choice(np.linspace(0.1, 1.0, 12), n)  # repeated values: ties must keep index order
    return boxes, scores


@pytest.mark.parametrize("seed", range(6))
def test_nms_on_few_boxes_keeps_what_the_array_path_keeps(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Few boxes take a plain-float path (faster there); it must keep exactly the boxes the array path keeps."""
    import seedcam_firmware.inference.boxes as boxes_module

    rng = np.random.default_rng(seed)
    cases = [(*_overlapping_boxes(rng, int(rng.integers(1, 40))), float(rng.choice([0.0, 0.3, 0.5, 1.0])))]
    cases += [(b.round(1), s, 0.45) for b, s, _ in cases]  # rounded: identical boxes and IoUs right at the threshold
    for boxes, scores, iou in cases:
        plain = nms(boxes, scores, iou, 10)
        monkeypatch.setattr(boxes_module, "_PLAIN_NMS_MAX", 0)
        arrays = nms(boxes, scores, iou, 10)
        monkeypatch.undo()
        assert plain.tolist() == arrays.tolist()


@pytest.mark.parametrize("background", [False, True])
def test_ssd_anchors_decode_only_the_candidates_as_all_anchors_would(background: bool) -> None:
    """Decoding only the anchors with a score above the threshold selects what decoding every anchor selects."""
    from seedcam_firmware.inference.anchors import decode_boxes
    from seedcam_firmware.inference.detection import select_dense

    rng = np.random.default_rng(7)
    anchors = grid_anchors(64, 32, (AnchorLevel(stride=8, sizes=((12.0, 8.0), (24.0, 16.0))),))
    n = len(anchors)
    columns = len(LABELS) + int(background)
    dec = SsdAnchorDecoder(LABELS, anchors, background_class=background)
    enc = rng.normal(0.0, 1.0, (n, 4)).astype(np.float32)
    scores = (rng.random((n, columns)) ** 6).astype(np.float32)  # most low, a few dozen candidates
    dets = dec.decode({"boxes": enc[None], "scores": scores[None]}, LOOSE)
    every = select_dense(decode_boxes(enc, anchors), scores[:, 1:] if background else scores, LOOSE)
    assert len(dets) > 3
    assert dets == every

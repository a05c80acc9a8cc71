"""Tiny TFLite models of each detection layout: built, loaded through the manifest, run, decoded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from seedcam_firmware.inference.detection import DetectionParams, make_detection_decoder
from seedcam_firmware.inference.manifest import ModelManifest, load_manifest
from seedcam_firmware.inference.runtime import Model
from seedcam_tools.layout_models import LAYOUTS, make_layout_model

# three objects, one per class; the boxes overlap little, so NMS keeps them all
DETECTIONS = [
    (0, 0.9, (0.1, 0.1, 0.4, 0.5)),
    (2, 0.8, (0.5, 0.4, 0.9, 0.95)),
    (1, 0.7, (0.55, 0.1, 0.8, 0.35)),
]


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """All four layouts, built once (TensorFlow is slow to import)."""
    root = tmp_path_factory.mktemp("layouts")
    return {layout: make_layout_model(layout, root / layout, DETECTIONS) for layout in LAYOUTS}


def _load(path: Path) -> tuple[ModelManifest, Model]:
    m = load_manifest(path)  # also checks the file's sha256
    return m, Model(m.file, input_shape=m.input_shape, outputs=m.outputs, num_threads=1)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layout_model_outputs_decode_to_the_given_detections(bundles: dict[str, Path], layout: str) -> None:
    m, model = _load(bundles[layout])
    assert m.task == "detect" and m.precision == "float32" and m.decoder["layout"] == layout
    assert (m.input.width, m.input.height) == (64, 48)
    decoder = make_detection_decoder(
        m.decoder, input_width=m.input.width, input_height=m.input.height, outputs=m.outputs, bundle_dir=m.bundle_dir
    )
    x = np.random.default_rng(0).random(m.input_shape, dtype=np.float32)
    dets = decoder.decode(model.invoke(x), DetectionParams(score_threshold=0.3))
    assert len(dets) == len(DETECTIONS)
    for det, (cls, score, box) in zip(dets, DETECTIONS, strict=True):  # DETECTIONS are in score order
        assert det.class_id == cls
        assert det.score == pytest.approx(score, abs=1e-3)
        assert det.box == pytest.approx(box, abs=1e-3)
    assert [decoder.labels[d.class_id] for d in dets] == ["class0", "class2", "class1"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layout_model_reads_its_input_but_ignores_it(bundles: dict[str, Path], layout: str) -> None:
    _, model = _load(bundles[layout])
    ops = model.interpreter._get_ops_details()
    assert any(model.input_details["index"] in op["inputs"] for op in ops), "the input feeds no op"
    a = model.invoke(np.zeros(model.input_details["shape"], np.float32))
    b = model.invoke(np.ones(model.input_details["shape"], np.float32))
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])


def test_tflite_postprocess_model_holds_the_real_custom_op(bundles: dict[str, Path]) -> None:
    m, model = _load(bundles["tflite_postprocess"])
    names = [op["op_name"] for op in model.interpreter._get_ops_details()]
    assert "TFLite_Detection_PostProcess" in names
    out = model.invoke(np.zeros(m.input_shape, np.float32))
    assert out["count"].tolist() == [3.0]  # the op's own NMS and score threshold left only the three objects
    assert out["classes"][0, :3].tolist() == [0.0, 2.0, 1.0]


def test_ssd_bundle_decoder_matches_its_anchor_levels(bundles: dict[str, Path]) -> None:
    m = load_manifest(bundles["ssd_anchors"])
    n = m.outputs["boxes"][1]
    assert m.outputs == {"boxes": (1, n, 4), "scores": (1, n, 3)}
    assert m.decoder["anchors"]["levels"][0]["stride"] == 16


@pytest.mark.parametrize(
    ("layout", "detections", "match"),
    [
        ("centernet", DETECTIONS, "unknown layout"),
        ("yolov8", [(3, 0.9, (0.1, 0.1, 0.2, 0.2))], "class_id"),
        ("yolov8", [(0, 1.5, (0.1, 0.1, 0.2, 0.2))], "score"),
        ("yolov5", [(0, 0.9, (0.3, 0.1, 0.2, 0.2))], "box"),
        ("ssd_anchors", [(0, 0.9, (0.1, 0.1))], "a detection is"),
        ("tflite_postprocess", [(0, 0.9, (0.1, 0.1, 0.2, 0.2))] * 11, "at most 10"),
    ],
)
def test_bad_requests_raise_value_error(tmp_path: Path, layout: str, detections: list, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make_layout_model(layout, tmp_path, detections)
    assert not (tmp_path / "manifest.json").exists()

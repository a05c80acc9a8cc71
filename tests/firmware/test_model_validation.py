"""Bundles are checked at load, each problem refused with a message naming it; a bad one never stops the others."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from seedcam.errors import BundleError
from seedcam_firmware.config import config_from_dict
from seedcam_firmware.daemon import Daemon
from seedcam_firmware.errors import ModelError, TaskUnavailable
from seedcam_firmware.inference.manifest import ModelManifest, load_manifest, sha256_file
from seedcam_firmware.inference.preprocess import InputSpec
from seedcam_firmware.inference.runtime import Model
from seedcam_firmware.inference.validate import classifier_layout, ctc_layout, expand_alphabet
from seedcam_firmware.tasks.base import load_task_manifest
from seedcam_firmware.tasks.detect import DetectTask
from seedcam_firmware.tasks.registry import load_tasks
from seedcam_firmware.tasks.runner import TaskRunner

REPO = Path(__file__).resolve().parents[2]
LANE_MANIFEST = REPO / "models" / "lane" / "manifest.json"
PLATE = (1, 0.9, (0.25, 0.25, 0.75, 0.75))


@pytest.fixture(scope="module")
def ssd_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A detector bundle with two outputs (boxes [1, N, 4], scores [1, N, 2]) that finds one class1 box."""
    from seedcam_tools.layout_models import make_layout_model

    return make_layout_model("ssd_anchors", tmp_path_factory.mktemp("ssd") / "det", [PLATE], num_classes=2).parent


def copy_bundle(src: Path, dst: Path, **changes: object) -> Path:
    """Copy a bundle folder and change top-level manifest keys (``None`` deletes one)."""
    shutil.copytree(src, dst)
    manifest = json.loads((dst / "manifest.json").read_text())
    for key, value in changes.items():
        if value is None:
            manifest.pop(key, None)
        else:
            manifest[key] = value
    (dst / "manifest.json").write_text(json.dumps(manifest))
    return dst


def use_file(bundle: Path, data: bytes, name: str = "model.tflite") -> Path:
    """Point the bundle's float32 entry at a new file with ``data`` (and its sha256)."""
    (bundle / name).write_bytes(data)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["files"]["float32"] = {"file": name, "sha256": sha256_file(bundle / name)}
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    return bundle


def tflite_file(bundle: Path) -> Path:
    return load_manifest(bundle, precision="float32").file


def detect_task(bundle: Path) -> DetectTask:
    return DetectTask(load_manifest(bundle, precision="float32"), num_threads=1)


# ---- the model file against the manifest -----------------------------------------------------------


def test_a_file_that_is_not_tflite_is_refused_before_the_interpreter_sees_it(ssd_bundle: Path, tmp_path: Path) -> None:
    bundle = use_file(copy_bundle(ssd_bundle, tmp_path / "b"), b"this is a text file, renamed .tflite\n")
    with pytest.raises(ModelError, match=r"not a TFLite file \(no TFL3 identifier\)"):
        detect_task(bundle)


def test_a_truncated_tflite_file_is_refused(ssd_bundle: Path, tmp_path: Path) -> None:
    blob = tflite_file(ssd_bundle).read_bytes()
    bundle = use_file(copy_bundle(ssd_bundle, tmp_path / "b"), blob[: len(blob) // 3])
    with pytest.raises(ModelError, match="rejected"):
        detect_task(bundle)


def test_wrong_input_shape(ssd_bundle: Path, tmp_path: Path) -> None:
    manifest = json.loads((ssd_bundle / "manifest.json").read_text())
    bundle = copy_bundle(ssd_bundle, tmp_path / "b", input={**manifest["input"], "shape": [1, 96, 64, 3]})
    with pytest.raises(ModelError, match=r"input shape \(1, 48, 64, 3\) does not match the manifest's \(1, 96, 64, "):
        detect_task(bundle)


def test_outputs_that_disagree_with_the_manifest_are_named(ssd_bundle: Path, tmp_path: Path) -> None:
    renamed = copy_bundle(ssd_bundle, tmp_path / "renamed", outputs={"boxes": [1, 32, 4], "logits": [1, 32, 2]})
    with pytest.raises(ModelError, match=r"output 'logits' is missing.*the model has output 'scores'"):
        detect_task(renamed)
    reshaped = copy_bundle(ssd_bundle, tmp_path / "reshaped", outputs={"boxes": [1, 32, 4], "scores": [1, 32, 3]})
    with pytest.raises(ModelError, match=r"output 'scores' has shape \(1, 32, 2\), the manifest says \(1, 32, 3\)"):
        detect_task(reshaped)


def test_a_decoder_layout_that_disagrees_with_the_outputs(ssd_bundle: Path, tmp_path: Path) -> None:
    manifest = json.loads((ssd_bundle / "manifest.json").read_text())
    three_labels = {**manifest["decoder"], "labels": ["a", "b", "c"]}  # the scores have 2 columns
    with pytest.raises(BundleError, match="ssd_anchors"):
        detect_task(copy_bundle(ssd_bundle, tmp_path / "labels", decoder=three_labels))
    yolo = {"layout": "yolov8", "labels": ["a", "b"]}
    with pytest.raises(BundleError, match="yolov8"):
        detect_task(copy_bundle(ssd_bundle, tmp_path / "yolo", decoder=yolo))


def test_a_bundle_for_another_task_is_refused(ssd_bundle: Path, tmp_path: Path) -> None:
    copy_bundle(ssd_bundle, tmp_path / "models" / "road_scene")
    config = config_from_dict({"models": {"dir": str(tmp_path / "models"), "classify_precision": "float32"}})
    with pytest.raises(BundleError, match="a 'detect' model, not a 'classify' model"):
        load_task_manifest(config, "classify")


# ---- models without a SignatureDef ------------------------------------------------------------------


def strip_signatures(src: Path, dst: Path, tensor_names: dict[bytes, bytes] | None = None) -> list[str]:
    """Write ``src`` without SignatureDefs (as many public models come), optionally renaming tensors.

    Returns:
        The output tensor names, in the interpreter's order.
    """
    from tensorflow.lite.tools import flatbuffer_utils

    model = flatbuffer_utils.read_model(str(src))
    model.signatureDefs = []
    graph = model.subgraphs[0]
    for tensor in graph.tensors:
        tensor.name = (tensor_names or {}).get(tensor.name, tensor.name)
    flatbuffer_utils.write_model(model, str(dst))
    return [graph.tensors[i].name.decode() for i in graph.outputs]


def output_order(bundle: Path) -> list[str]:
    """The manifest names of the outputs, in the interpreter's order (told apart by shape)."""
    model = Model(tflite_file(bundle), num_threads=1)
    by_shape = {tuple(v): k for k, v in json.loads((bundle / "manifest.json").read_text())["outputs"].items()}
    return [by_shape[tuple(int(x) for x in d["shape"])] for d in model.interpreter.get_output_details()]


def test_no_signature_outputs_matched_by_tensor_name(ssd_bundle: Path, tmp_path: Path) -> None:
    bundle = copy_bundle(ssd_bundle, tmp_path / "b")
    order = output_order(ssd_bundle)
    plain = [name.encode() for name in strip_signatures(tflite_file(ssd_bundle), tmp_path / "x.tflite")]
    # name the tensors after the manifest, and list the manifest's outputs in the other order: names must win
    strip_signatures(
        tmp_path / "x.tflite", tmp_path / "named.tflite", dict(zip(plain, [n.encode() for n in order], strict=True))
    )
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["outputs"] = {name: manifest["outputs"][name] for name in reversed(order)}
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    use_file(bundle, (tmp_path / "named.tflite").read_bytes())
    task = detect_task(bundle)
    assert task._model.signature is None
    (det,) = task.run(np.zeros((48, 64, 3), np.uint8)).detections
    assert det.class_id == 1 and det.score == pytest.approx(0.9, abs=1e-5)


def test_no_signature_outputs_taken_in_order_when_names_differ(ssd_bundle: Path, tmp_path: Path) -> None:
    names = strip_signatures(tflite_file(ssd_bundle), tmp_path / "plain.tflite")
    assert not set(names) & {"boxes", "scores"}  # e.g. StatefulPartitionedCall:0
    manifest = json.loads((ssd_bundle / "manifest.json").read_text())
    in_order = {name: manifest["outputs"][name] for name in output_order(ssd_bundle)}
    plain = (tmp_path / "plain.tflite").read_bytes()
    good = use_file(copy_bundle(ssd_bundle, tmp_path / "good", outputs=in_order), plain)
    (det,) = detect_task(good).run(np.zeros((48, 64, 3), np.uint8)).detections
    box = (det.box.x_min, det.box.y_min, det.box.x_max, det.box.y_max)
    assert box == pytest.approx((0.25, 0.25, 0.75, 0.75), abs=1e-5)
    swapped = dict(reversed(list(in_order.items())))
    bad = use_file(copy_bundle(ssd_bundle, tmp_path / "bad", outputs=swapped), plain)
    with pytest.raises(ModelError, match="taken by position"):
        detect_task(bad)
    one = use_file(copy_bundle(ssd_bundle, tmp_path / "one", outputs={"boxes": manifest["outputs"]["boxes"]}), plain)
    with pytest.raises(ModelError, match=r"2 output tensor\(s\).*the manifest lists 1"):
        detect_task(one)


# ---- OCR and classifier heads against their outputs -----------------------------------------------


def manifest_with(task: str, outputs: dict[str, tuple[int, ...]], decoder: dict) -> ModelManifest:
    return ModelManifest(
        id="m", name="m", version="1.0.0", task=task, precision="float32", file=Path("m.tflite"), sha256="",
        input=InputSpec(width=128, height=32, crop_top=0.0), outputs=outputs, decoder=decoder,
    )  # fmt: skip


def test_ctc_head_checks() -> None:
    decoder = {"type": "ctc", "alphabet": "0-9A-Z-", "blank_index": 37, "time_steps": 32}
    ok = ctc_layout(manifest_with("ocr", {"probs": (1, 32, 38)}, decoder))
    assert (ok.output, ok.steps, ok.blank_index, len(ok.alphabet)) == ("probs", 32, 37, 37)
    cases = [
        ({"probs": (1, 32, 40)}, {"type": "ctc", "alphabet": "0-9A-Z-"}, "need 39 distinct characters"),
        ({"probs": (1, 32, 38)}, {"type": "ctc", "alphabet": "0-9A-Z-", "blank_index": 38}, "blank_index 38"),
        ({"probs": (1, 38)}, {"type": "ctc", "alphabet": "0-9A-Z-"}, r"must be \[1, T, K\]"),
        ({"probs": (1, 32, 38)}, {"type": "softmax", "alphabet": "0-9A-Z-"}, "decoder type must be 'ctc'"),
        ({"probs": (1, 32, 38)}, {"type": "ctc", "alphabet": "0-9A-Z-", "beam": 3}, r"unknown decoder keys \['beam'\]"),
        ({"a": (1, 32, 38), "b": (1, 2)}, {"type": "ctc", "alphabet": "0-9A-Z-"}, "name the one to read"),
        ({"probs": (1, 32, 38)}, {"type": "ctc"}, "lacks 'alphabet'"),
        ({"probs": (1, 32, 38)}, {"type": "ctc", "alphabet": "0-9A-Z-", "time_steps": 16}, "time_steps 16 but"),
    ]
    for outputs, decoder, message in cases:
        with pytest.raises(BundleError, match=message):
            ctc_layout(manifest_with("ocr", outputs, decoder))


def test_alphabet_literal_or_ranges() -> None:
    assert expand_alphabet("0-9A-Z-", 38) == "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-"
    assert expand_alphabet("A-C", 4) == "A-C"  # three literal characters fit: taken literally
    assert expand_alphabet("A-C", 4) != expand_alphabet("A-C-", 5)
    assert expand_alphabet(["x", "y"], 3) == "xy"


def test_classifier_head_checks() -> None:
    labels = ["a", "b", "c"]
    decoder = {"type": "softmax", "labels": labels, "top_k": 2}
    ok = classifier_layout(manifest_with("classify", {"probs": (1, 3)}, decoder))
    assert (ok.labels, ok.top_k, ok.activation) == (tuple(labels), 2, "none")
    cases = [
        ({"probs": (1, 4)}, {"type": "softmax", "labels": labels}, "has 4 classes but the decoder lists 3 labels"),
        ({"probs": (1, 3, 1)}, {"type": "softmax", "labels": labels}, r"must be \[1, C\]"),
        ({"probs": (1, 3)}, {"type": "softmax", "labels": []}, "non-empty list of strings"),
        ({"probs": (1, 3)}, {"type": "softmax", "labels": labels, "top_k": 0}, "top_k must be a positive"),
        ({"probs": (1, 3)}, {"type": "softmax", "labels": labels, "activation": "relu"}, "activation 'relu'"),
        ({"probs": (1, 3)}, {"type": "ctc", "labels": labels}, "decoder type must be one of"),
    ]
    for outputs, decoder, message in cases:
        with pytest.raises(BundleError, match=message):
            classifier_layout(manifest_with("classify", outputs, decoder))


# ---- a broken bundle does not stop the other tasks --------------------------------------------------


def test_load_tasks_reports_broken_tasks_and_loads_the_rest(
    ssd_bundle: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    models = tmp_path / "models"
    use_file(copy_bundle(ssd_bundle, models / "detect"), b"not a model")
    config = config_from_dict(
        {
            "models": {"dir": str(models), "lane": str(LANE_MANIFEST), "detect_precision": "float32"},
            "tasks": {"enabled": ["lane", "detect", "ocr"]},
        }
    )
    with caplog.at_level(logging.INFO, logger="seedcam_firmware.tasks.registry"):
        loaded = load_tasks(config)
    assert [t.name for t in loaded.tasks] == ["lane"]
    assert set(loaded.unavailable) == {"detect", "ocr", "classify"}
    assert "not a TFLite file" in loaded.unavailable["detect"]
    assert "detect model did not load" in loaded.unavailable["ocr"]
    # enabled ones are the caller's to report; a bundle missing for a task nobody enabled is no warning
    assert [(r.levelno, r.getMessage().split(":")[0]) for r in caplog.records] == [
        (logging.INFO, "task classify not available")
    ]

    runner = TaskRunner(loaded.tasks, ["lane"], unavailable=loaded.unavailable)
    with pytest.raises(TaskUnavailable, match="task detect is unavailable: its model did not load: .*not a TFLite"):
        runner.select(["lane", "detect"])
    assert runner.enabled == ("lane",) and runner.available == ("lane",)


def test_the_daemon_refuses_to_start_only_when_no_enabled_task_loads(ssd_bundle: Path, tmp_path: Path) -> None:
    models = tmp_path / "models"
    use_file(copy_bundle(ssd_bundle, models / "detect"), b"not a model")
    config = config_from_dict(
        {
            "link": {"url": f"pair://validation-{tmp_path.name}"},
            "models": {"dir": str(models), "detect_precision": "float32"},
            "tasks": {"enabled": ["detect", "ocr"]},
        }
    )
    with pytest.raises(ModelError, match=r"none of the enabled tasks can run: detect: .*not a TFLite file.*; ocr: "):
        Daemon(config).start()

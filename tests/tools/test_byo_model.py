"""``seedcam-tools bundle from-tflite``: bundles from models exported by another toolchain, without TensorFlow.

The models are made here with TensorFlow's own converter (plain ``tf.function``s,
not seedcam_tools.export): a YOLOv8-layout detector (``[1, 4 + C, N]``, float32
and full-integer uint8) and a float16 classifier. The tool itself must not
import TensorFlow; the bundles it writes must load with the firmware's loader,
pass the install self-test and run as their task.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from seedcam.bundle import read_bundle
from seedcam_firmware.inference.manifest import load_manifest
from seedcam_firmware.selftest import selftest_model
from seedcam_firmware.tasks.classify import ClassifyTask
from seedcam_firmware.tasks.detect import DetectTask
from seedcam_tools.bundles import build_model_bundle

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "byo-model.md"
SIZE = 64  # detector input, pixels
CLASSES = ("car", "person")
BOX = (32.0, 24.0, 20.0, 16.0)  # the detector's one object: cx, cy, w, h in input pixels, class 1


def _yolov8_fn(*, normalized: bool = False):  # noqa: ANN202 - a tf.function
    """Boxes in input pixels, or (for the uint8 model: one scale for boxes and scores) normalised."""
    import tensorflow as tf

    rng = np.random.default_rng(1)
    kernel = tf.constant(rng.normal(0, 0.05, (8, 8, 3, 4 + len(CLASSES))).astype(np.float32))
    n = (SIZE // 8) ** 2
    base = np.zeros((1, 4 + len(CLASSES), n), np.float32)
    base[0, :4] = np.array([[8.0], [8.0], [6.0], [6.0]])  # spare candidates: a small box, low scores
    base[0, 4:] = 0.01
    base[0, :4, 0] = BOX
    base[0, 4 + 1, 0] = 0.98
    if normalized:
        base[0, :4] /= SIZE
    const = tf.constant(base)
    gain = np.full((1, 4 + len(CLASSES), 1), 0.001, np.float32)  # what the input adds: a little
    gain[0, :4] = 0.05 / SIZE if normalized else 0.05

    @tf.function(input_signature=[tf.TensorSpec([1, SIZE, SIZE, 3], tf.float32)])
    def detect(x):  # noqa: ANN001, ANN202
        feat = tf.nn.conv2d(x, kernel, strides=8, padding="VALID")  # [1, 8, 8, 4 + C]
        feat = tf.transpose(tf.reshape(feat, [1, n, 4 + len(CLASSES)]), [0, 2, 1])
        return const + tf.constant(gain) * feat

    return detect


def _convert(fn, *, quant: str | None = None) -> bytes:  # noqa: ANN001
    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn)
    if quant == "float16":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.target_spec.supported_types = [tf.float16]
    elif quant == "uint8":
        shape = fn.input_signature[0].shape
        rng = np.random.default_rng(2)
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = lambda: ([rng.random(shape, dtype=np.float32)] for _ in range(16))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.uint8
        converter.inference_output_type = tf.uint8
    return converter.convert()


def _classifier_fn():  # noqa: ANN202
    import tensorflow as tf

    rng = np.random.default_rng(3)
    kernel = tf.constant(rng.normal(0, 0.3, (3, 3, 3, 8)).astype(np.float32))
    dense = tf.constant(rng.normal(0, 0.5, (8, 3)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([1, 32, 48, 3], tf.float32)])
    def classify(x):  # noqa: ANN001, ANN202
        feat = tf.nn.relu(tf.nn.conv2d(x, kernel, strides=2, padding="SAME"))
        return tf.nn.softmax(tf.reduce_mean(feat, axis=[1, 2]) @ dense)

    return classify


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """yolov8n.tflite (float32), yolov8n_uint8.tflite, scene_fp16.tflite, labels, a frames folder."""
    folder = tmp_path_factory.mktemp("byo")
    (folder / "yolov8n.tflite").write_bytes(_convert(_yolov8_fn()))
    (folder / "yolov8n_uint8.tflite").write_bytes(_convert(_yolov8_fn(normalized=True), quant="uint8"))
    (folder / "scene_fp16.tflite").write_bytes(_convert(_classifier_fn(), quant="float16"))
    (folder / "labels.txt").write_text("0 car\n1 person\n")
    (folder / "scene.txt").write_text("# road scenes\nstraight\ncurve\nnone\n")
    (folder / "frames").mkdir()
    frame = np.random.default_rng(4).integers(0, 256, (240, 320, 3), dtype=np.uint8)
    cv2.imwrite(str(folder / "frames" / "0001.png"), frame)
    return folder


def run_tools(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``seedcam-tools ARGV`` in a fresh interpreter that fails if TensorFlow or Keras got imported."""
    probe = (
        "import sys\n"
        "from seedcam_tools.cli import main\n"
        "rc = main(sys.argv[1:])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'keras', 'tf_keras'))\n"
        "assert not heavy, f'imported {heavy[:5]}'\n"
        "sys.exit(rc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *argv], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def guide_commands() -> list[list[str]]:
    """The shell lines of the guide's marked block."""
    text = GUIDE.read_text()
    block = re.search(r"<!-- byo-commands.*?-->\s*```sh\n(.*?)```", text, re.DOTALL)
    assert block, "docs/byo-model.md lost its byo-commands block"
    return [shlex.split(line) for line in block.group(1).splitlines() if line.strip()]


def test_the_guide_runs_without_tensorflow_and_its_bundle_installs(models: Path, tmp_path: Path) -> None:
    for name in ("yolov8n.tflite", "labels.txt"):
        (tmp_path / name).write_bytes((models / name).read_bytes())
    (tmp_path / "frames").symlink_to(models / "frames")
    commands = guide_commands()
    assert [c[:3] for c in commands][0] == ["seedcam-tools", "bundle", "from-tflite"]
    for command in commands:
        assert command[0] == "seedcam-tools"
        run_tools(*command[1:], cwd=tmp_path)

    folder = tmp_path / "bundles" / "yolov8n"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["input"]["shape"] == [1, SIZE, SIZE, 3]
    assert (manifest["input"]["mean"], manifest["input"]["std"], manifest["input"]["dtype"]) == (0.0, 255.0, "float32")
    assert manifest["decoder"]["labels"] == list(CLASSES)
    assert manifest["decoder"]["coords"] == "pixels" and manifest["decoder"]["score_activation"] == "none"
    assert manifest["byo"]["golden_frame"].endswith("0001.png")

    bundle = read_bundle(tmp_path / "yolov8n.scb")
    assert bundle.signature is not None and bundle.header.fields["precision"] == "float32"
    slot = tmp_path / "slot"
    slot.mkdir()
    for entry in bundle.header.files:
        (slot / entry.name).write_bytes(bundle.file_bytes(entry))
    installed, error = selftest_model(slot, bundle.header)
    assert installed.task == "detect" and error <= 1e-6

    task = DetectTask(installed)
    (det,) = task.run(np.zeros((240, 320, 3), np.uint8)).detections
    cx, cy, w, h = (v / SIZE for v in BOX)
    assert det.label == "person" and det.score > 0.9
    assert np.allclose(
        [det.box.x_min, det.box.y_min, det.box.x_max, det.box.y_max],
        [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2],
        atol=0.02,
    )


def test_a_uint8_detector_takes_its_normalisation_from_the_input_quantisation(models: Path, tmp_path: Path) -> None:
    out = tmp_path / "q"
    run_tools(
        "bundle", "from-tflite", str(models / "yolov8n_uint8.tflite"), "--task", "detect", "--layout", "yolov8",
        "--labels", str(models / "labels.txt"), "--out", str(out), cwd=tmp_path,
    )  # fmt: skip
    manifest = json.loads((out / "manifest.json").read_text())
    q = manifest["input"]["quantization"]
    assert manifest["default_precision"] == "int8" and manifest["input"]["dtype"] == "uint8"
    assert manifest["input"]["mean"] == q["zero_point"] and manifest["input"]["std"] == pytest.approx(1 / q["scale"])
    assert manifest["byo"]["golden_frame"] == "synthetic"
    assert manifest["decoder"]["coords"] == "normalized" and manifest["decoder"]["score_activation"] == "none"
    bundle = build_model_bundle(out, precision="int8")
    slot = tmp_path / "slot"
    slot.mkdir()
    for entry in bundle.header.files:
        (slot / entry.name).write_bytes(bundle.file_bytes(entry))
    installed, _ = selftest_model(slot, bundle.header)
    task = DetectTask(installed)
    assert task.input_encoding.dtype == "uint8"  # the pixels go in as they are, no float round trip
    detections = task.run(np.zeros((240, 320, 3), np.uint8)).detections
    assert [d.label for d in detections] == ["person"]


def test_a_float16_classifier_bundles_and_classifies(models: Path, tmp_path: Path) -> None:
    from ai_edge_litert.interpreter import Interpreter

    weights = Interpreter(model_path=str(models / "scene_fp16.tflite")).get_tensor_details()
    assert any(np.dtype(d["dtype"]) == np.float16 for d in weights)  # really a float16 model
    out = tmp_path / "scene"
    run_tools(
        "bundle", "from-tflite", str(models / "scene_fp16.tflite"), "--task", "classify",
        "--labels", str(models / "scene.txt"), "--sample-images", str(models / "frames"), "--out", str(out),
        cwd=tmp_path,
    )  # fmt: skip
    manifest = load_manifest(out)
    assert manifest.precision == "float32" and manifest.input_shape == (1, 32, 48, 3)
    assert manifest.decoder["labels"] == ["straight", "curve", "none"]
    assert manifest.decoder["activation"] == "none"  # the model ends in a softmax
    run_tools("bundle", "model", str(out), "-o", str(tmp_path / "scene.scb"), cwd=tmp_path)
    bundle = read_bundle(tmp_path / "scene.scb")
    slot = tmp_path / "slot"
    slot.mkdir()
    for entry in bundle.header.files:
        (slot / entry.name).write_bytes(bundle.file_bytes(entry))
    installed, error = selftest_model(slot, bundle.header)
    assert error <= 1e-6
    frame = cv2.imread(str(models / "frames" / "0001.png"))
    (top, *_) = ClassifyTask(installed).run(frame).classifications
    assert top.label in ("straight", "curve", "none") and 0 < top.score <= 1


def test_labels_that_do_not_fit_the_outputs_are_refused_before_anything_is_written(
    models: Path, tmp_path: Path
) -> None:
    (tmp_path / "three.txt").write_text("a\nb\nc\n")
    done = subprocess.run(
        [sys.executable, "-m", "seedcam_tools.cli", "bundle", "from-tflite", str(models / "yolov8n.tflite"),
         "--task", "detect", "--layout", "yolov8", "--labels", "three.txt", "--out", "nope"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False, env=dict(os.environ),
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "yolov8" in done.stderr and not (tmp_path / "nope").exists()

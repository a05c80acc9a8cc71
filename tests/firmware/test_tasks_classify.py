"""The classification task: the top-k classes of a frame, k live from the config."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from seedcam.types import Classification
from seedcam_firmware.config import FirmwareConfig, config_from_dict, config_set
from seedcam_firmware.inference.manifest import sha256_file
from seedcam_firmware.inference.preprocess import InputSpec
from seedcam_firmware.tasks.classify import ClassifyTask, load_classify_task

LABELS = ["day", "night", "tunnel", "rain"]
INPUT = InputSpec(width=32, height=24, crop_top=0.5)
GAIN = np.array([4.0, -4.0, 0.0, 0.0], np.float32)  # logits = GAIN * brightness + BIAS
BIAS = np.array([-1.0, 2.0, 0.5, -1.5], np.float32)


def scene_classifier(*, softmax: bool) -> object:
    """A Keras classifier whose logits follow the mean brightness (0..1) of what it sees."""
    import keras

    image = keras.Input(INPUT.shape[1:], batch_size=1)
    mean = keras.layers.GlobalAveragePooling2D()(image)
    logits = keras.layers.Dense(
        len(LABELS),
        kernel_initializer=keras.initializers.Constant(np.repeat(GAIN[None] / 3.0, 3, axis=0)),
        bias_initializer=keras.initializers.Constant(BIAS),
    )(mean)
    return keras.Model(image, {"probs": keras.layers.Softmax()(logits) if softmax else logits})


def write_classifier(out_dir: Path, *, softmax: bool = True, decoder: dict | None = None) -> Path:
    from seedcam_tools.export import to_tflite

    out_dir.mkdir(parents=True, exist_ok=True)
    tflite = out_dir / "scene_f32.tflite"
    to_tflite(scene_classifier(softmax=softmax), tflite, int8=False, input_spec=INPUT, outputs={"probs": (1, 4)})
    manifest = {
        "schema": 1,
        "id": "test-scene",
        "name": "brightness scene classifier",
        "version": "1.0.0",
        "task": "classify",
        "min_firmware_version": "0.0.1",
        "files": {"float32": {"file": tflite.name, "sha256": sha256_file(tflite)}},
        "input": INPUT.to_dict(),
        "outputs": {"probs": [1, len(LABELS)]},
        "decoder": decoder or {"type": "softmax", "labels": LABELS, "top_k": 3},
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest))
    return out_dir / "manifest.json"


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("models")
    write_classifier(root / "road_scene")
    write_classifier(
        root / "logits",
        softmax=False,
        decoder={"type": "softmax", "labels": LABELS, "top_k": 2, "activation": "softmax"},
    )
    return root


@pytest.fixture(scope="module")
def config(models_dir: Path) -> FirmwareConfig:
    return config_from_dict({"models": {"dir": str(models_dir), "classify_precision": "float32"}})


def expected(brightness: float, k: int) -> list[tuple[int, str, float]]:
    logits = GAIN * brightness + BIAS
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    order = np.argsort(-probs, kind="stable")[:k]
    return [(int(i), LABELS[i], float(probs[i])) for i in order]


def frame(top: int, bottom: int) -> np.ndarray:
    """A frame whose upper half (cut off by crop_top) and lower half differ."""
    image = np.full((120, 160, 3), top, np.uint8)
    image[60:] = bottom
    return image


def check(got: tuple[Classification, ...], want: list[tuple[int, str, float]]) -> None:
    assert [(c.class_id, c.label) for c in got] == [(i, label) for i, label, _ in want]
    assert [c.score for c in got] == pytest.approx([s for _, _, s in want], abs=1e-5)


def test_top_k_of_the_rows_the_model_sees(config: FirmwareConfig) -> None:
    task = load_classify_task(config)
    assert task.model.task == "classify" and task.top_k == 3
    bright = task.run(frame(top=0, bottom=255))  # the model sees only the bright lower half
    check(bright.classifications, expected(1.0, 3))
    assert bright.classifications[0].label == "day"
    dark = task.run(frame(top=255, bottom=0))
    check(dark.classifications, expected(0.0, 3))
    assert [c.label for c in dark.classifications] == ["night", "tunnel", "day"]
    assert set(bright.timings_us) == {"classify:preprocess", "classify:invoke", "classify:decode"}


def test_top_k_is_live(config: FirmwareConfig) -> None:
    task = load_classify_task(config)
    task.configure(config_set(config, "classify.top_k", 1))
    check(task.run(frame(0, 255)).classifications, expected(1.0, 1))
    task.configure(config_set(config, "classify.top_k", 10))  # more than there are classes: all of them
    check(task.run(frame(0, 255)).classifications, expected(1.0, 4))


def test_a_logits_model_is_ranked_after_the_manifest_activation(config: FirmwareConfig, models_dir: Path) -> None:
    from seedcam_firmware.inference.manifest import load_manifest

    task = ClassifyTask(load_manifest(models_dir / "logits", precision="float32"), num_threads=1)
    assert task.top_k == 2  # the bundle's suggestion until configured
    check(task.run(frame(0, 255)).classifications, expected(1.0, 2))

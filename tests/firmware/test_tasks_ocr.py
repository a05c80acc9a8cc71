"""The OCR task: plates the detector found are cropped from the frame, read and CTC-decoded."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from seedcam.types import Box, Detection
from seedcam_firmware.camera.base import Frame
from seedcam_firmware.config import FirmwareConfig, config_from_dict, config_set
from seedcam_firmware.errors import ConfigError, ModelError
from seedcam_firmware.inference.ctc import TextReading
from seedcam_firmware.inference.manifest import sha256_file
from seedcam_firmware.inference.preprocess import InputSpec
from seedcam_firmware.tasks.base import TaskOutput
from seedcam_firmware.tasks.detect import load_detect_task
from seedcam_firmware.tasks.ocr import OcrTask, load_ocr_task
from seedcam_firmware.tasks.runner import TaskRunner

ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-"
STEPS, CLASSES, BLANK = 32, len(ALPHABET) + 1, len(ALPHABET)
OCR_INPUT = InputSpec(width=128, height=32, crop_top=0.0)
#: what the model "reads" on a bright plate, one class per time step (None = blank)
SPELLING = ["A", "A", None, "B", "B", None, "1", None, "2", "2"] + [None] * (STEPS - 10)
FRAME_W, FRAME_H = 320, 240
LEFT_PLATE = (0.25, 0.65, 0.45, 0.75)
RIGHT_PLATE = (0.6, 0.65, 0.8, 0.75)
DARK_SPOT = (0.05, 0.1, 0.2, 0.2)


def brightness_reader() -> object:
    """A Keras CTC model that reads "AB12" off a bright crop and nothing off a dark one.

    Its logits are ``20 * brightness`` for the spelled class and a constant 8 for
    the blank, brightness being the crop's mean pixel in 0..1.
    """
    import keras

    gain = np.zeros((STEPS, CLASSES), np.float32)
    bias = np.zeros((STEPS, CLASSES), np.float32)
    for t, char in enumerate(SPELLING):
        bias[t, BLANK] = 8.0
        if char is not None:
            gain[t, ALPHABET.index(char)] = 20.0
    kernel = np.repeat(gain.reshape(1, -1) / 3.0, 3, axis=0)  # the mean of the three channel means
    image = keras.Input(OCR_INPUT.shape[1:], batch_size=1)
    mean = keras.layers.GlobalAveragePooling2D()(image)
    logits = keras.layers.Dense(
        STEPS * CLASSES,
        kernel_initializer=keras.initializers.Constant(kernel),
        bias_initializer=keras.initializers.Constant(bias.reshape(-1)),
    )(mean)
    probs = keras.layers.Softmax()(keras.layers.Reshape((STEPS, CLASSES))(logits))
    return keras.Model(image, {"probs": probs})


def write_ocr_bundle(out_dir: Path, *, alphabet: str = "0-9A-Z-", blank_index: int = BLANK, **decoder: object) -> Path:
    from seedcam_tools.export import to_tflite

    out_dir.mkdir(parents=True, exist_ok=True)
    tflite = out_dir / "ocr_f32.tflite"
    to_tflite(brightness_reader(), tflite, int8=False, input_spec=OCR_INPUT, outputs={"probs": (1, STEPS, CLASSES)})
    manifest = {
        "schema": 1,
        "id": "test-ocr",
        "name": "brightness reader",
        "version": "1.0.0",
        "task": "ocr",
        "min_firmware_version": "0.0.1",
        "default_precision": "float32",
        "files": {"float32": {"file": tflite.name, "sha256": sha256_file(tflite)}},
        "input": OCR_INPUT.to_dict(),
        "outputs": {"probs": [1, STEPS, CLASSES]},
        "decoder": {"type": "ctc", "alphabet": alphabet, "blank_index": blank_index, **decoder},
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest))
    return out_dir / "manifest.json"


def write_plate_detector(out_dir: Path, plate_score: float = 0.9) -> Path:
    """A detector seeing the whole frame that finds the left plate (``plate_score``) and a car (0.7)."""
    from seedcam_tools.layout_models import make_layout_model

    path = make_layout_model(
        "yolov8",
        out_dir,
        [(1, plate_score, LEFT_PLATE), (0, 0.7, (0.0, 0.0, 0.5, 0.5))],
        num_classes=2,
        input_size=(64, 48),
    )
    manifest = json.loads(path.read_text())
    manifest["id"] = "test-plates"
    manifest["decoder"]["labels"] = ["car", "plate"]
    path.write_text(json.dumps(manifest))
    return path


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("models")
    write_ocr_bundle(root / "ocr")
    write_plate_detector(root / "detect")
    return root


@pytest.fixture(scope="module")
def config(models_dir: Path) -> FirmwareConfig:
    return config_from_dict(
        {"models": {"dir": str(models_dir), "detect_precision": "float32", "ocr_precision": "float32"}}
    )


@pytest.fixture(scope="module")
def detector(config: FirmwareConfig):  # noqa: ANN201
    return load_detect_task(config)


@pytest.fixture
def ocr(config: FirmwareConfig, detector) -> OcrTask:  # noqa: ANN001
    return load_ocr_task(config, {"detect": detector})


def box(edges: tuple[float, float, float, float]) -> Box:
    return Box(*edges)


def plate(edges: tuple[float, float, float, float], score: float = 0.9, label: str = "plate") -> Detection:
    return Detection(1 if label == "plate" else 0, label, score, box(edges))


def scene() -> np.ndarray:
    """A dark frame with two white plates."""
    image = np.full((FRAME_H, FRAME_W, 3), 30, np.uint8)
    for x0, y0, x1, y1 in (LEFT_PLATE, RIGHT_PLATE):
        image[round(y0 * FRAME_H) : round(y1 * FRAME_H), round(x0 * FRAME_W) : round(x1 * FRAME_W)] = 255
    return image


def prior(*detections: Detection) -> dict[str, TaskOutput]:
    return {"detect": TaskOutput(detections=detections)}


def test_reads_the_plate_a_detection_points_at(ocr: OcrTask) -> None:
    assert ocr.layout.alphabet == ALPHABET  # "0-9A-Z-" expanded
    out = ocr.run(scene(), prior(plate(LEFT_PLATE), plate(DARK_SPOT, 0.8)))
    (line,) = out.text_lines  # the dark spot reads as nothing and is dropped
    assert line.text == "AB12"
    assert line.box == box(LEFT_PLATE)
    assert len(line.char_confidences) == 4 and min(line.char_confidences) > 0.99
    assert line.confidence == pytest.approx(float(np.prod(line.char_confidences)))
    assert out.detections == () and out.model_ids == ()
    assert set(out.timings_us) == {"ocr:crop", "ocr:invoke", "ocr:decode"}


def test_only_plate_labels_are_read_and_at_most_max_plates(ocr: OcrTask, config: FirmwareConfig) -> None:
    image = scene()
    assert ocr.run(image, prior(plate(LEFT_PLATE, label="car"))).text_lines == ()
    both = prior(plate(LEFT_PLATE, 0.6), plate(RIGHT_PLATE, 0.95))
    assert [line.box for line in ocr.run(image, both).text_lines] == [box(RIGHT_PLATE), box(LEFT_PLATE)]
    ocr.configure(config_set(config, "ocr.max_plates", 1))
    assert [line.box for line in ocr.run(image, both).text_lines] == [box(RIGHT_PLATE)]  # the better score
    ocr.configure(config_set(config, "ocr.plate_labels", ["car"]))
    assert [line.text for line in ocr.run(image, prior(plate(LEFT_PLATE, label="car"))).text_lines] == ["AB12"]


def test_min_confidence_beam_and_constraints(ocr: OcrTask, config: FirmwareConfig) -> None:
    image, left = scene(), prior(plate(LEFT_PLATE))
    (line,) = ocr.run(image, left).text_lines
    assert line.confidence < 1.0
    ocr.configure(config_set(config, "ocr.min_confidence", 1.0))
    assert ocr.run(image, left).text_lines == ()
    ocr.configure(config_set(config, "ocr.beam_width", 4))
    assert [t.text for t in ocr.run(image, left).text_lines] == ["AB12"]
    ocr.configure(config_set(config, "ocr.lexicon", ["AB12", "ZZ99"]))
    assert [t.text for t in ocr.run(image, left).text_lines] == ["AB12"]
    ocr.configure(config_set(config, "ocr.pattern", "[0-9]{4}"))  # nothing the model saw fits: confidence 0
    assert ocr.run(image, left).text_lines == ()


def test_bad_constraints_are_refused_and_keep_the_old_settings(ocr: OcrTask, config: FirmwareConfig) -> None:
    before = ocr.settings
    with pytest.raises(ConfigError, match="ocr.pattern"):
        ocr.configure(config_set(config, "ocr.pattern", "[A-Z"))
    with pytest.raises(ConfigError, match=r"ocr.lexicon word 'ab12'.*\['a', 'b'\]"):
        ocr.configure(config_set(config, "ocr.lexicon", ["ab12"]))
    with pytest.raises(ConfigError, match="exclusive"):
        ocr.configure(config_set(config_set(config, "ocr.lexicon", ["AB12"]), "ocr.pattern", "AB.*"))
    assert ocr.settings is before


def test_without_the_detect_task_ocr_runs_the_detector_itself(ocr: OcrTask, detector) -> None:  # noqa: ANN001
    out = ocr.run(scene())
    assert [line.text for line in out.text_lines] == ["AB12"]
    (x0, y0, x1, y1) = LEFT_PLATE
    got = out.text_lines[0].box
    assert (got.x_min, got.y_min, got.x_max, got.y_max) == pytest.approx((x0, y0, x1, y1), abs=1e-5)
    assert out.detections == ()  # only the text lines are reported
    assert out.model_ids == (detector.model.id,)
    assert "ocr:detect" in out.timings_us


def test_the_runner_runs_detect_first_and_hands_over_its_detections(ocr: OcrTask, detector) -> None:  # noqa: ANN001
    frame = Frame(7, time.monotonic_ns() // 1000, scene())
    runner = TaskRunner([detector, ocr], ["ocr", "detect"])  # asked for in the "wrong" order
    result = runner.process(frame)
    assert result.model_ids == ("test-plates-float32", "test-ocr-float32")
    assert [d.label for d in result.detections] == ["plate", "car"]
    assert [line.text for line in result.text_lines] == ["AB12"]
    assert "ocr:detect" not in result.timings_us  # the detector ran once, as the detect task
    runner.select(["ocr"])
    result = runner.process(frame)
    assert result.detections == () and [line.text for line in result.text_lines] == ["AB12"]
    assert result.model_ids == ("test-ocr-float32", "test-plates-float32")


def test_a_plate_scored_under_the_detect_threshold_is_read_but_not_reported(tmp_path: Path) -> None:
    """ocr.plate_min_score (0.3) under detect.score_threshold (0.5): a plate the detector scores 0.4 is
    handed to the OCR task as a candidate and read; it is no detection. Raising the floor stops it."""
    write_ocr_bundle(tmp_path / "ocr")
    write_plate_detector(tmp_path / "detect", plate_score=0.4)
    config = config_from_dict(
        {"models": {"dir": str(tmp_path), "detect_precision": "float32", "ocr_precision": "float32"}}
    )
    detector = load_detect_task(config)
    ocr = load_ocr_task(config, {"detect": detector})
    frame = Frame(1, time.monotonic_ns() // 1000, scene())
    runner = TaskRunner([detector, ocr], ["detect", "ocr"])
    result = runner.process(frame)
    assert [d.label for d in result.detections] == ["car"]
    assert [line.text for line in result.text_lines] == ["AB12"]
    assert result.text_lines[0].box.x_min == pytest.approx(LEFT_PLATE[0], abs=1e-5)
    runner.select(["ocr"])  # the OCR task running the detector itself reads the candidate too
    assert [line.text for line in runner.process(frame).text_lines] == ["AB12"]
    runner.select(["detect"])
    assert [d.label for d in runner.process(frame).detections] == ["car"]
    ocr.configure(config_set(config, "ocr.plate_min_score", 0.5))
    runner.select(["detect", "ocr"])
    result = runner.process(frame)
    assert result.text_lines == () and [d.label for d in result.detections] == ["car"]


def test_ocr_without_a_detector_model_is_refused(config: FirmwareConfig) -> None:
    with pytest.raises(ModelError, match="detect model did not load"):
        load_ocr_task(config, {})


def test_ocr_config_changes_through_the_daemon_are_checked_and_rolled_back(models_dir: Path) -> None:
    import uuid

    import seedcam
    from seedcam.errors import RpcError
    from seedcam_firmware.daemon import Daemon

    url = f"pair://ocr-test-{uuid.uuid4().hex[:12]}"
    daemon = Daemon(
        config_from_dict(
            {
                "link": {"url": url},
                "camera": {"source": "synthetic", "width": 160, "height": 120, "fps": 30.0},
                "models": {"dir": str(models_dir), "detect_precision": "float32", "ocr_precision": "float32"},
                "tasks": {"enabled": ["ocr", "detect"]},
            }
        )
    )
    daemon.start()
    try:
        with seedcam.open(url, timeout=10, reconnect=False) as sensor:
            result = sensor.recv(timeout=10)
            assert result is not None and result.model_ids == ("test-plates-float32", "test-ocr-float32")
            with pytest.raises(RpcError) as refused:
                sensor.config_set("ocr.pattern", "[A-Z")
            assert refused.value.status == "INVALID_ARGUMENT" and "ocr.pattern" in refused.value.detail
            assert sensor.config_get("ocr.pattern") == ""
            assert sensor.config_set("ocr.pattern", "[A-Z]{2}[0-9]{2}").value == "[A-Z]{2}[0-9]{2}"
            with pytest.raises(RpcError, match="exclusive"):
                sensor.config_set("ocr.lexicon", ["AB12"])
            assert sensor.config_get("ocr.lexicon") == []
    finally:
        daemon.stop()
    assert daemon.tasks is not None
    ocr = daemon.tasks.tasks["ocr"]
    assert ocr.settings.constraint is not None and ocr.settings.constraint.pattern == "[A-Z]{2}[0-9]{2}"


def test_a_calibrated_bundle_reports_calibrated_confidence_and_skips_unreadably_small_plates(
    tmp_path: Path,
    detector,
    config: FirmwareConfig,  # noqa: ANN001
) -> None:
    from seedcam_firmware.inference.ctc import ConfidenceCalibration
    from seedcam_firmware.inference.manifest import load_manifest

    calibration = {"method": "platt_log", "a": 2.0, "b": -1.0}
    width_px = (LEFT_PLATE[2] - LEFT_PLATE[0]) * FRAME_W  # 64 px
    write_ocr_bundle(tmp_path / "ocr", confidence_calibration=calibration, min_plate_width_px=width_px - 1)
    task = OcrTask(load_manifest(tmp_path / "ocr", precision="float32"), detector=detector, num_threads=1)
    task.configure(config_set(config, "ocr.min_confidence", 0.0))
    (line,) = task.run(scene(), prior(plate(LEFT_PLATE))).text_lines
    raw = float(np.prod(line.char_confidences))
    assert line.confidence == pytest.approx(ConfidenceCalibration(2.0, -1.0)(raw))
    assert line.confidence < raw  # sigmoid(-1) at raw = 1: calibration lowers an over-confident reading
    task.configure(config_set(config, "ocr.min_confidence", 0.5))
    assert task.run(scene(), prior(plate(LEFT_PLATE))).text_lines == ()  # 0.27 < 0.5: dropped
    task.configure(config_set(config, "ocr.min_confidence", 0.0))
    assert len(task.run(scene(), prior(plate(LEFT_PLATE))).text_lines) == 1
    narrow = (LEFT_PLATE[0], LEFT_PLATE[1], LEFT_PLATE[0] + (width_px - 2) / FRAME_W, LEFT_PLATE[3])
    assert task.run(scene(), prior(plate(narrow))).text_lines == ()  # narrower than the model can read


@pytest.mark.parametrize(
    "bad",
    [
        {"confidence_calibration": {"method": "isotonic", "a": 1.0, "b": 0.0}},
        {"confidence_calibration": {"method": "platt_log", "a": -1.0, "b": 0.0}},
        {"confidence_calibration": {"method": "platt_log", "a": "x", "b": 0.0}},
        {"min_plate_width_px": -3},
    ],
)
def test_a_bad_calibration_or_size_limit_is_refused_with_the_key(tmp_path: Path, bad: dict) -> None:
    from seedcam_firmware.errors import BundleError
    from seedcam_firmware.inference.manifest import load_manifest

    write_ocr_bundle(tmp_path / "ocr", **bad)
    with pytest.raises(BundleError, match=next(iter(bad))):
        OcrTask(load_manifest(tmp_path / "ocr", precision="float32"), num_threads=1)


def test_two_views_of_a_plate_are_read_and_the_more_confident_reading_is_kept(
    ocr: OcrTask, config: FirmwareConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    invoked: list[np.ndarray] = []
    real_invoke = ocr._model.invoke

    def counting_invoke(x: np.ndarray, names: tuple[str, ...]) -> dict[str, np.ndarray]:
        invoked.append(np.array(x))
        return real_invoke(x, names)

    monkeypatch.setattr(ocr._model, "invoke", counting_invoke)
    assert ocr.settings.views == 1  # one view by default: this test asks for the second
    ocr.configure(config_set(config, "ocr.views", 2))
    image = scene()
    # the box reaches well past the white plate: the rectified view is the plate alone, the second the box
    loose = (LEFT_PLATE[0] - 0.04, LEFT_PLATE[1] - 0.03, LEFT_PLATE[2] + 0.04, LEFT_PLATE[3] + 0.03)
    (line,) = ocr.run(image, prior(plate(loose))).text_lines
    assert len(invoked) == 2 and invoked[0].mean() > invoked[1].mean()  # the plate's crop is the brighter one
    assert line.text == "AB12" and line.box == box(loose)

    readings = {"first": TextReading("A1", 0.6, (0.8, 0.75)), "second": TextReading("AB1", 0.9, (1.0, 0.9, 1.0))}
    order: list[str] = []

    def decode(probs: np.ndarray, settings: object) -> TextReading:
        order.append("first" if len(order) % 2 == 0 else "second")
        return readings[order[-1]]

    monkeypatch.setattr(ocr, "_decode", decode)
    assert [t.text for t in ocr.run(image, prior(plate(loose))).text_lines] == ["AB1"]  # the more confident
    readings["first"] = TextReading("A1", 0.95, (0.95, 1.0))
    assert [t.text for t in ocr.run(image, prior(plate(loose))).text_lines] == ["A1"]
    ocr.configure(config_set(config, "ocr.views", 1))
    invoked.clear()
    readings["first"] = TextReading("A1", 0.6, (0.8, 0.75))
    assert [t.text for t in ocr.run(image, prior(plate(loose))).text_lines] == ["A1"]  # one view: no second reading
    assert len(invoked) == 1
    with pytest.raises(ConfigError, match="ocr.views"):
        config_set(config, "ocr.views", 3)

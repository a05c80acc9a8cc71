"""One preprocessing pass per frame shared by the tasks (issue 15): bit for bit the inputs each task made alone."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from helpers import MODELS

from seedcam_firmware.camera.base import Frame
from seedcam_firmware.inference import prepared as prepared_module
from seedcam_firmware.inference.manifest import ModelManifest, load_manifest
from seedcam_firmware.inference.prepared import PreparedFrame
from seedcam_firmware.inference.preprocess import (
    FLOAT_INPUT,
    InputSpec,
    PixelEncoding,
    crop_resize,
    encode_pixels,
    normalise,
    pixel_encoding,
    quantize,
)
from seedcam_firmware.scene import SceneObject, SceneSpec, random_scene, render
from seedcam_firmware.tasks.base import ModelTask, TaskOutput
from seedcam_firmware.tasks.classify import ClassifyTask
from seedcam_firmware.tasks.detect import DetectTask
from seedcam_firmware.tasks.lane import LaneTask
from seedcam_firmware.tasks.ocr import OcrTask
from seedcam_firmware.tasks.runner import TaskRunner

#: the shipped bundles whose tasks bring the camera frame to their input
FRAME_BUNDLES = {"lane": LaneTask, "detect": DetectTask, "road_scene": ClassifyTask}
PRECISIONS = ("int8", "float32")


def manifest(bundle: str, precision: str) -> ModelManifest:
    return load_manifest(MODELS / bundle / "manifest.json", precision=precision)


def frames() -> Iterator[np.ndarray]:
    """Camera frames: rendered scenes at the camera's size, noise, and a frame of another size."""
    rng = np.random.default_rng(15)
    for _ in range(3):
        yield render(random_scene(rng))[0]
    yield rng.integers(0, 256, (240, 320, 3), dtype=np.uint8)
    yield rng.integers(0, 256, (333, 517, 3), dtype=np.uint8)  # odd sizes: crop rows round


def old_takes_raw_pixels(task: ModelTask) -> bool:
    """The test the firmware made before inputs were shared (runtime.Model.takes_raw_pixels, as it was)."""
    details = task._model.input_details  # noqa: SLF001 - the reference needs the tensor's quantization
    spec = task.manifest.input
    if np.dtype(details["dtype"]) != np.uint8:
        return False
    scale, zero = details["quantization"]
    return bool(scale) and abs(spec.std * scale - 1.0) < 1e-6 and abs(zero + spec.mean / spec.std / scale) < 1e-6


def old_input_tensor(task: ModelTask, pixels: np.ndarray) -> np.ndarray:
    """ModelTask.input_tensor before inputs were shared."""
    batch = pixels[None]
    return batch if old_takes_raw_pixels(task) else normalise(batch, task.manifest.input)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("bundle", sorted(FRAME_BUNDLES))
def test_the_shared_input_of_every_shipped_bundle_is_bit_exact(bundle: str, precision: str) -> None:
    task = FRAME_BUNDLES[bundle](manifest(bundle, precision))
    other = LaneTask(manifest("lane", precision))  # a task of another input asks first, in the same frame
    for image in frames():
        shared = PreparedFrame(image)
        other.frame_tensor(shared)
        got = task.frame_tensor(shared)
        want = old_input_tensor(task, crop_resize(image, task.manifest.input))
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        assert task.frame_tensor(shared) is got  # made once
        np.testing.assert_array_equal(task.frame_tensor(image), want)  # an image alone: the same tensor
        outputs = task._model.invoke(got), task._model.invoke(want)  # noqa: SLF001 - what reaches the interpreter
        for name in outputs[1]:
            np.testing.assert_array_equal(outputs[0][name], outputs[1][name])


@pytest.mark.parametrize("precision", PRECISIONS)
def test_the_ocr_input_of_a_plate_crop_is_bit_exact(precision: str) -> None:
    ocr = OcrTask(manifest("ocr", precision))
    spec = ocr.manifest.input
    rng = np.random.default_rng(5)
    for crop in (rng.integers(0, 256, (40, 150, 3), dtype=np.uint8), render(random_scene(rng))[0][100:140, 60:200]):
        pixels = crop_resize(crop, spec)
        got, want = ocr.input_tensor(pixels), old_input_tensor(ocr, pixels)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_the_runner_reports_what_each_task_finds_alone(precision: str) -> None:
    lane = LaneTask(manifest("lane", precision))
    detect = DetectTask(manifest("detect", precision))
    ocr = OcrTask(manifest("ocr", precision), detector=detect)
    classify = ClassifyTask(manifest("road_scene", precision))
    runner = TaskRunner([lane, detect, ocr, classify], ["lane", "detect", "ocr", "classify"])
    plate = SceneSpec(objects=(SceneObject("plate", 0.5, 0.0, "AGV-042"), SceneObject("stop", 1.4, -0.3)))
    read = 0
    for i, image in enumerate([render(plate)[0], *frames()]):
        result = runner.process(Frame(i, 0, image))
        read += len(result.text_lines)
        alone = [task.run(image) for task in (lane, detect, classify)]
        assert result.lane == alone[0].lane
        assert result.detections == alone[1].detections
        assert result.classifications == alone[2].classifications
        prior = {"detect": TaskOutput(detections=alone[1].detections)}
        assert result.text_lines == ocr.run(image, prior).text_lines
    assert read  # the plate was read: the comparison covered all four tasks


class LaneTwin(LaneTask):
    """A second lane task (another name) on a bundle with the lane task's InputSpec."""

    name = "lanetwin"


def counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[Any]:
    """Count the calls of the PreparedFrame module's ``name``."""
    calls: list[Any] = []
    real: Callable[..., np.ndarray] = getattr(prepared_module, name)

    def wrapper(*args: Any) -> np.ndarray:
        calls.append(args[1])
        return real(*args)

    monkeypatch.setattr(prepared_module, name, wrapper)
    return calls


def test_tasks_with_one_input_spec_resize_once_per_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    resizes, encodings = counting(monkeypatch, "crop_resize"), counting(monkeypatch, "encode_pixels")
    lane_int8, lane_f32 = LaneTask(manifest("lane", "int8")), LaneTwin(manifest("lane", "float32"))
    classify = ClassifyTask(manifest("road_scene", "int8"))
    assert lane_int8.input_spec == lane_f32.input_spec != classify.input_spec
    assert lane_int8.input_encoding != lane_f32.input_encoding  # uint8 pixels, float32 tensor
    runner = TaskRunner([lane_int8, lane_f32, classify], ["lane", "lanetwin", "classify"])
    images = list(frames())
    for i, image in enumerate(images):
        result = runner.process(Frame(i, 0, image))
        assert result.lane is not None and {"lane:preprocess", "classify:preprocess"} <= set(result.timings_us)
    assert resizes == [lane_int8.input_spec, classify.input_spec] * len(images)  # lane's once for two tasks
    assert len(encodings) == 3 * len(images)  # the two lane encodings and the classifier's
    resizes.clear()
    lane_int8.run(images[0]), lane_f32.run(images[0])
    assert len(resizes) == 2  # each task on an image of its own resizes it itself


def test_a_prepared_frame_hands_out_one_read_only_array_per_input() -> None:
    image = next(frames())
    frame = PreparedFrame(image)
    spec = InputSpec(width=64, height=32, crop_top=0.25)
    again = InputSpec(width=64, height=32, crop_top=0.25)  # equal, another object
    pixels = frame.pixels(spec)
    assert frame.pixels(again) is pixels and not pixels.flags.writeable
    assert frame.pixels(InputSpec(width=64, height=32, crop_top=0.25, mean=127.5)) is pixels  # same geometry
    assert frame.pixels(InputSpec(width=64, height=32, crop_top=0.25, color_order="BGR")) is not pixels
    raw = frame.tensor(spec, PixelEncoding("uint8"))
    assert frame.tensor(again, PixelEncoding("uint8")) is raw and raw.base is pixels  # a view, no copy
    floats = frame.tensor(spec, FLOAT_INPUT)
    assert floats.dtype == np.float32 and not floats.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        raw[0, 0, 0, 0] = 1
    assert frame.image is image


ALL_PIXELS = np.arange(256, dtype=np.uint8).reshape(16, 16, 1).repeat(3, axis=2)
SCALE = float(np.float32(1 / 255))  # as a TFLite file stores it


@pytest.mark.parametrize(
    ("mean", "std", "dtype", "quantization", "encoding"),
    [
        (0.0, 255.0, np.uint8, (SCALE, 0), PixelEncoding("uint8", 0)),  # the shipped int8 files
        (0.0, 255.0, np.int8, (SCALE, -128), PixelEncoding("int8", -128)),  # a signed full-INT8 input
        (128.0, 255.0, np.int8, (SCALE, 0), PixelEncoding("int8", -128)),
        (0.0, 255.0, np.int8, (SCALE, 0), PixelEncoding("int8", 0)),  # 128..255 clip to 127
        (0.0, 255.0, np.uint8, (SCALE, 10), PixelEncoding("uint8", 10)),  # 246..255 clip to 255
        (0.0, 1.0, np.int8, (1.0, -128), PixelEncoding("int8", -128)),
        (0.0, 255.0, np.uint8, (2 * SCALE, 0), FLOAT_INPUT),  # a scale that is no shift
        (127.5, 127.5, np.int8, (1 / 127.5, 0), FLOAT_INPUT),  # a half-pixel shift
        (0.0, 255.0, np.float32, (0.0, 0), FLOAT_INPUT),
    ],
)
def test_a_pixel_shift_gives_exactly_the_integers_of_the_float_path(
    mean: float, std: float, dtype: type, quantization: tuple[float, int], encoding: PixelEncoding
) -> None:
    spec = InputSpec(width=16, height=16, crop_top=0.0, mean=mean, std=std)
    assert pixel_encoding(mean, std, np.dtype(dtype), quantization) == encoding
    got = encode_pixels(ALL_PIXELS, spec, encoding)
    if np.dtype(dtype) == np.float32:
        np.testing.assert_array_equal(got, normalise(ALL_PIXELS, spec)[None])
        return
    want = quantize(normalise(ALL_PIXELS, spec)[None], np.dtype(dtype), *quantization)  # the float path
    if encoding == FLOAT_INPUT:
        got = quantize(got, np.dtype(dtype), *quantization)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_a_model_task_must_implement_run_prepared_or_run() -> None:
    with pytest.raises(TypeError, match="run_prepared"):

        class Nothing(ModelTask):  # noqa: F841 - the class statement itself raises
            name = "nothing"


def test_a_plugin_task_that_implements_only_run_gets_the_image() -> None:
    seen: list[np.ndarray] = []

    class OldStyle(ModelTask):
        name = "old"

        def run(self, image: np.ndarray, prior: Any = None) -> TaskOutput:
            seen.append(image)
            self.frame_tensor(image)  # as docs/adding-a-task.md showed before frames were shared
            return TaskOutput()

    task = OldStyle(manifest("lane", "int8"))
    frame = Frame(0, 0, next(frames()))
    TaskRunner([task], ["old"]).process(frame)
    assert len(seen) == 1 and seen[0] is frame.image

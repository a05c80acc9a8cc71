"""Bring your own model: a bundle folder from any ``.tflite`` file, without TensorFlow.

:func:`bundle_from_tflite` reads the model with the firmware's own TFLite
runtime (``ai-edge-litert``, see :mod:`seedcam_firmware.inference.runtime`),
never TensorFlow: the input shape and type, the input quantisation, the outputs
under the names the firmware's :class:`~seedcam_firmware.inference.runtime.Model`
gives them (SignatureDef keys, else tensor names). It writes a folder the
firmware loads like its own models::

    manifest.json            schema 1 (see seedcam_firmware.inference.manifest)
    model.tflite             the file given, unchanged
    golden_input.npy         a sample frame, preprocessed by the manifest's InputSpec
    golden_output_<p>.npz    the model's outputs on it (the install self-test's reference)
    anchors.npy              ssd_anchors only: the anchors given

Normalisation: a quantised (uint8/int8) input is taken to hold the camera
pixels themselves (uint8) or shifted by 128 (int8), so ``mean`` and ``std``
follow from its quantisation and the firmware feeds the pixels with no float
arithmetic; a float input defaults to ``pixels / 255`` (``mean 0, std 255``,
what YOLO exporters expect). Both may be given.

Decoder settings the file cannot tell are guessed from the golden output and
may be given instead: YOLO ``coords`` (``normalized`` when every box value is
within 0..2) and ``score_activation`` (``none`` when the scores lie in 0..1,
else ``sigmoid``), a classifier's ``activation`` (``none`` when the output is
a probability vector, else ``softmax``).

Before anything is written the manifest is loaded back with the firmware's
loader and its decoder built, so a bundle the sensor would refuse is refused
here, with the firmware's message.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from seedcam.errors import BundleError
from seedcam_firmware import __version__ as FIRMWARE_VERSION
from seedcam_firmware.inference.manifest import load_manifest, sha256_file
from seedcam_firmware.inference.preprocess import InputSpec, preprocess
from seedcam_firmware.inference.runtime import Model

__all__ = ["BYO_TASKS", "IMAGE_SUFFIXES", "TfliteInfo", "bundle_from_tflite", "read_labels", "read_tflite"]

BYO_TASKS = ("detect", "classify")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")
_SYNTHETIC_FRAME = (240, 320)  # rows, columns: the sensor's default camera frame
_NAME_OK = re.compile(r"[^A-Za-z0-9._+-]+")


@dataclass(frozen=True)
class TfliteInfo:
    """What a ``.tflite`` file says about its input and outputs.

    Attributes:
        input_shape: ``(1, H, W, 3)``.
        input_dtype: ``"float32"``, ``"uint8"`` or ``"int8"``.
        input_quantization: ``(scale, zero_point)``; scale 0 when not quantised.
        outputs: output name (as the firmware names it) -> shape, in the firmware's order.
        output_dtypes: output name -> tensor type.
        output_scales: output name -> quantisation scale (0: a float output).
        has_signature: names are SignatureDef keys (else tensor names).
    """

    input_shape: tuple[int, ...]
    input_dtype: str
    input_quantization: tuple[float, int]
    outputs: dict[str, tuple[int, ...]]
    output_dtypes: dict[str, str]
    output_scales: dict[str, float]
    has_signature: bool

    @property
    def precision(self) -> str:
        """The manifest precision key: ``int8`` for a quantised input, else ``float32``."""
        return "int8" if self.input_dtype in ("uint8", "int8") else "float32"


def read_tflite(path: Path) -> TfliteInfo:
    """Read a model's input and outputs with the firmware's runtime (no TensorFlow).

    Raises:
        ModelError: not a TFLite file, the runtime rejects it, or its input is unusable
            (more than one input, a type other than float32/uint8/int8).
        BundleError: the input is not ``[1, H, W, 3]``.
    """
    model = Model(path, num_threads=1)
    details = model.input_details
    shape = tuple(int(v) for v in details["shape"])
    if len(shape) != 4 or shape[0] != 1 or shape[3] != 3:
        raise BundleError(f"{path}: the input is {list(shape)}; the sensor feeds [1, H, W, 3] images")
    scale, zero = details["quantization"]
    outs = model.output_details
    return TfliteInfo(
        input_shape=shape,
        input_dtype=np.dtype(details["dtype"]).name,
        input_quantization=(float(scale), int(zero)),
        outputs={name: tuple(int(v) for v in d["shape"]) for name, d in outs.items()},
        output_dtypes={name: np.dtype(d["dtype"]).name for name, d in outs.items()},
        output_scales={name: float(d["quantization"][0]) for name, d in outs.items()},
        has_signature=model.signature is not None,
    )


def read_labels(path: Path) -> list[str]:
    """Class names, one a line; blank lines and ``#`` comments skipped, ``0 person`` / ``0: person`` read as ``person``.

    Raises:
        BundleError: unreadable or empty.
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BundleError(f"cannot read labels {path}: {exc}") from exc
    labels = []
    for line in lines:
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        labels.append(re.sub(r"^\d+\s*[:\s]\s*", "", text) if re.match(r"^\d+\s*[:\s]\s*\S", text) else text)
    if not labels:
        raise BundleError(f"{path} lists no labels")
    return labels


def _normalisation(info: TfliteInfo, mean: float | None, std: float | None) -> tuple[float, float]:
    scale, zero = info.input_quantization
    if info.input_dtype in ("uint8", "int8") and scale > 0:
        shift = 0 if info.input_dtype == "uint8" else 128  # the tensor holds pixel - shift
        auto = (float(zero + shift), 1.0 / scale)
    else:
        auto = (0.0, 255.0)
    return (auto[0] if mean is None else float(mean), auto[1] if std is None else float(std))


def _sample_frame(sample_images: Path | None) -> tuple[np.ndarray, str]:
    """A BGR uint8 frame: the first image of the folder (or the file) given, else a synthetic one."""
    if sample_images is not None:
        import cv2

        folder = Path(sample_images)
        files = (
            [folder] if folder.is_file() else sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        )
        for path in files:
            image = cv2.imread(str(path), cv2.IMREAD_COLOR)
            if image is not None:
                return image, str(path)
        raise BundleError(f"no readable image ({', '.join(IMAGE_SUFFIXES)}) in {sample_images}")
    rows, cols = _SYNTHETIC_FRAME
    y, x = np.mgrid[0:rows, 0:cols]
    frame = np.stack([x * 255 // cols, y * 255 // rows, (x + y) * 255 // (rows + cols)], axis=-1)
    noise = np.random.default_rng(0).integers(0, 32, size=frame.shape)
    frame = (frame + noise).clip(0, 255).astype(np.uint8)
    frame[rows // 3 : rows // 2, cols // 4 : cols // 2] = (40, 40, 200)  # a red block: something to look at
    return frame, "synthetic"


def _one_output(outputs: Mapping[str, tuple[int, ...]], what: str) -> str:
    if len(outputs) != 1:
        raise BundleError(f"{what} reads one output, the model has {dict(outputs)}")
    return next(iter(outputs))


def _unit(values: np.ndarray, quantum: float) -> bool:
    """All within 0..1, give or take one quantisation step of the output."""
    return values.size == 0 or bool(values.min() >= -quantum - 1e-6 and values.max() <= 1.0 + quantum + 1e-6)


def _yolo_decoder(
    layout: str,
    outputs: Mapping[str, tuple[int, ...]],
    golden: Mapping[str, np.ndarray],
    options: Mapping[str, Any],
    quantum: float,
) -> dict[str, Any]:
    name = _one_output(outputs, f"layout {layout}")
    arr = np.asarray(golden[name], dtype=np.float32)[0]
    table = arr.T if layout == "yolov8" else arr  # rows: candidates
    boxes, scores = table[:, :4], table[:, 4:]
    coords = options.get("coords") or ("normalized" if boxes.size and np.abs(boxes).max() <= 2.0 else "pixels")
    activation = options.get("score_activation") or ("none" if _unit(scores, quantum) else "sigmoid")
    return {"layout": layout, "output_name": name, "coords": coords, "score_activation": activation}


def _role_names(
    outputs: Mapping[str, tuple[int, ...]], roles: Sequence[str], hints: Mapping[str, str]
) -> dict[str, str]:
    """Map roles to output names: by a name hint, else by order among the outputs left."""
    left = list(outputs)
    mapped: dict[str, str] = {}
    for role in roles:
        hit = next((n for n in left if re.search(hints[role], n, re.IGNORECASE)), None)
        if hit is not None:
            mapped[role] = hit
            left.remove(hit)
    for role in roles:
        if role not in mapped and left:
            mapped[role] = left.pop(0)
    return mapped


def _postprocess_decoder(outputs: Mapping[str, tuple[int, ...]]) -> dict[str, Any]:
    if len(outputs) != 4:
        raise BundleError(
            f"layout tflite_postprocess reads 4 outputs (boxes, classes, scores, count), got {dict(outputs)}"
        )
    by_shape = {"boxes": [n for n, s in outputs.items() if len(s) == 3 and s[-1] == 4]}
    by_shape["count"] = [n for n, s in outputs.items() if len(s) == 1]
    hints = {"boxes": "box", "classes": "class", "scores": "score", "count": "num|count"}
    names = _role_names(outputs, ("boxes", "classes", "scores", "count"), hints)
    for role in ("boxes", "count"):  # shapes are unambiguous for these two
        if len(by_shape[role]) == 1 and names.get(role) != by_shape[role][0]:
            names = _role_names(
                {n: s for n, s in outputs.items() if n not in (by_shape["boxes"] + by_shape["count"])},
                ("classes", "scores"),
                hints,
            )
            names.update(boxes=by_shape["boxes"][0], count=by_shape["count"][0])
            break
    return {"layout": "tflite_postprocess", "output_names": names}


def _ssd_decoder(
    outputs: Mapping[str, tuple[int, ...]],
    golden: Mapping[str, np.ndarray],
    labels: Sequence[str],
    options: Mapping[str, Any],
    info_scales: Mapping[str, float],
) -> dict[str, Any]:
    boxes = [n for n, s in outputs.items() if len(s) == 3 and s[-1] == 4]
    if len(outputs) != 2 or len(boxes) != 1:
        raise BundleError(f"layout ssd_anchors reads boxes [1, N, 4] and scores [1, N, K], got {dict(outputs)}")
    scores = next(n for n in outputs if n != boxes[0])
    values = np.asarray(golden[scores])
    quantum = max(info_scales.values(), default=0.0)
    activation = options.get("score_activation") or ("none" if _unit(values, quantum) else "sigmoid")
    return {
        "layout": "ssd_anchors",
        "output_names": {"boxes": boxes[0], "scores": scores},
        "anchors": {"file": "anchors.npy"},
        "score_activation": activation,
        "background_class": outputs[scores][-1] == len(labels) + 1,
    }


def _classify_decoder(
    outputs: Mapping[str, tuple[int, ...]],
    golden: Mapping[str, np.ndarray],
    labels: Sequence[str],
    options: Mapping[str, Any],
) -> dict[str, Any]:
    name = _one_output(outputs, "a classifier")
    values = np.asarray(golden[name], dtype=np.float64)
    probs = values.min() >= 0 and abs(values.sum() - 1.0) < 1e-2
    activation = options.get("activation") or ("none" if probs else "softmax")
    return {
        "type": "softmax",
        "labels": list(labels),
        "output_name": name,
        "activation": activation,
        "top_k": min(3, len(labels)),
    }


def bundle_from_tflite(
    model_path: Path,
    out_dir: Path,
    *,
    task: str,
    labels: Sequence[str],
    layout: str | None = None,
    sample_images: Path | None = None,
    anchors: Path | None = None,
    mean: float | None = None,
    std: float | None = None,
    color_order: str = "RGB",
    crop_top: float = 0.0,
    crop_bottom: float = 0.0,
    model_id: str | None = None,
    name: str | None = None,
    version: str = "1.0.0",
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write a self-testing bundle folder for a ``.tflite`` model (see the module docstring).

    Args:
        model_path: the ``.tflite`` file.
        out_dir: the bundle folder to write (created; files in it are replaced).
        task: ``detect`` or ``classify``.
        labels: the class names.
        layout: for ``detect``: ``yolov8``, ``yolov5``, ``ssd_anchors`` or ``tflite_postprocess``.
        sample_images: a folder of images (the first readable one is the golden frame) or
            one image; None: a synthetic frame.
        anchors: for ``ssd_anchors``: an ``N x 4`` ``(cy, cx, h, w)`` ``.npy`` file.
        mean, std: input normalisation (default: from the input's quantisation, or 0 and 255).
        color_order, crop_top, crop_bottom: the rest of the InputSpec.
        model_id, name, version: identity (default id: the file's stem).
        options: decoder settings that override the guesses: ``coords``,
            ``score_activation`` (detect), ``activation`` (classify), and
            ``score_threshold``, ``iou_threshold``, ``max_detections``.

    Returns:
        The manifest written.

    Raises:
        BundleError: an unknown task or layout, labels that do not fit the outputs,
            a missing anchors file, or a bundle the firmware's loader refuses.
        ModelError: the runtime cannot load or run the model.
    """
    opts = dict(options or {})
    if task not in BYO_TASKS:
        raise BundleError(f"task {task!r}: from-tflite makes {' or '.join(BYO_TASKS)} bundles")
    from seedcam_firmware.inference.detection import LAYOUTS, make_detection_decoder
    from seedcam_firmware.inference.validate import classifier_layout

    if task == "detect" and layout not in LAYOUTS:
        raise BundleError(f"a detector needs --layout, one of {LAYOUTS} (got {layout!r})")
    if layout == "ssd_anchors" and anchors is None:
        raise BundleError("layout ssd_anchors needs --anchors anchors.npy (N x 4 cy, cx, h, w, normalised)")
    model_path = Path(model_path)
    info = read_tflite(model_path)
    m, s = _normalisation(info, mean, std)
    _, height, width, _ = info.input_shape
    spec = InputSpec(
        width=width, height=height, crop_top=crop_top, crop_bottom=crop_bottom, color_order=color_order, mean=m, std=s
    )
    frame, frame_source = _sample_frame(sample_images)
    golden_in = preprocess(frame, spec)
    model = Model(model_path, input_shape=info.input_shape, outputs=info.outputs, num_threads=1)
    golden = model.invoke(golden_in)
    if task == "classify":
        decoder = _classify_decoder(info.outputs, golden, labels, opts)
    elif layout in ("yolov8", "yolov5"):
        quantum = max(info.output_scales.values(), default=0.0)
        decoder = _yolo_decoder(layout, info.outputs, golden, opts, quantum)
    elif layout == "tflite_postprocess":
        decoder = _postprocess_decoder(info.outputs)
    else:
        decoder = _ssd_decoder(info.outputs, golden, labels, opts, info.output_scales)
    if task == "detect":
        decoder["labels"] = list(labels)
        decoder.update({k: opts[k] for k in ("score_threshold", "iou_threshold", "max_detections") if k in opts})
    precision = info.precision
    ident = model_id or _NAME_OK.sub("-", model_path.stem).strip("-.") or "model"
    manifest: dict[str, Any] = {
        "schema": 1,
        "id": ident,
        "name": name or f"{ident} ({task}, brought from {model_path.name})",
        "version": version,
        "task": task,
        "min_firmware_version": FIRMWARE_VERSION,
        "default_precision": precision,
        "decoder": decoder,
        "files": {
            precision: {
                "file": "model.tflite",
                "sha256": sha256_file(model_path),
                "golden_output": f"golden_output_{precision}.npz",
            }
        },
        "golden_input": "golden_input.npy",
        "input": {
            **spec.to_dict(),
            "dtype": info.input_dtype,
            "quantization": {"scale": info.input_quantization[0], "zero_point": info.input_quantization[1]},
        },
        "outputs": {k: list(v) for k, v in info.outputs.items()},
        "byo": {"source": model_path.name, "golden_frame": frame_source, "output_dtypes": info.output_dtypes},
    }
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir.parent, prefix=f".{out_dir.name}-") as tmp:
        stage = Path(tmp)
        shutil.copyfile(model_path, stage / "model.tflite")
        if layout == "ssd_anchors" and anchors is not None:
            shutil.copyfile(anchors, stage / "anchors.npy")
        np.save(stage / "golden_input.npy", golden_in)
        # no pickles: the self-test loads it with allow_pickle=False
        np.savez(stage / f"golden_output_{precision}.npz", allow_pickle=False, **golden)
        (stage / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        _check_loads(stage, make_detection_decoder, classifier_layout)
        out_dir.mkdir(exist_ok=True)
        for path in stage.iterdir():
            shutil.copyfile(path, out_dir / path.name)
    return manifest


def _check_loads(folder: Path, make_detection_decoder: Any, classifier_layout: Any) -> None:
    """Load the folder as the firmware does: manifest, model against it, decoder against the outputs."""
    loaded = load_manifest(folder)
    Model(loaded.file, input_shape=loaded.input_shape, outputs=loaded.outputs, num_threads=1)
    if loaded.task == "detect":
        spec = loaded.input
        make_detection_decoder(
            loaded.decoder, input_width=spec.width, input_height=spec.height, outputs=loaded.outputs, bundle_dir=folder
        )
    else:
        classifier_layout(loaded)

"""Tiny TFLite detectors of each output layout, for tests and for checking manifests.

:func:`make_layout_model` writes a bundle folder (``<layout>.tflite`` and
``manifest.json``) whose model "detects" exactly the objects it is given, in
the output layout named (see :mod:`seedcam_firmware.inference.detection`):

``ssd_anchors``
    each object's box is encoded (:func:`~seedcam_firmware.inference.anchors.encode_boxes`)
    onto the unused anchor that overlaps it most and gets its score in its
    class column; all other anchors keep their own box and a low score.
``tflite_postprocess``
    the same anchor encodings and scores (with a background column 0) feed a REAL
    ``TFLite_Detection_PostProcess`` custom op: a ``tf.function`` whose
    ``experimental_implements`` names the op and its attributes, which the
    TFLite converter replaces by the op (the way the TensorFlow Object
    Detection API exports SSD models). The op decodes, runs its own per-class
    NMS and returns boxes, classes, scores and a count.
``yolov5`` / ``yolov8``
    rows of ``cx, cy, w, h`` in model-input pixels with (v5) an objectness and
    class scores whose product is the object's score; spare rows score near zero.

The network is a Keras model whose outputs are constant weights plus a term
computed from the input that is always zero (``min(relu(mean(x)), 0)``: the
converter folds a plain ``0 * x`` away, which would leave the input unused), so
the model runs like any other and ignores what it sees. It is converted with
:func:`seedcam_tools.export.to_tflite` (float32).

Example::

    manifest = make_layout_model("yolov8", Path("bundles/yolov8"), [(1, 0.9, (0.1, 0.2, 0.5, 0.6))])
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from seedcam_firmware import __version__ as FIRMWARE_VERSION
from seedcam_firmware.inference.anchors import AnchorLevel, encode_boxes, grid_anchors
from seedcam_firmware.inference.boxes import iou_matrix
from seedcam_firmware.inference.manifest import sha256_file
from seedcam_firmware.inference.preprocess import InputSpec

__all__ = ["LAYOUT_ANCHOR_LEVELS", "LAYOUTS", "Detection", "make_layout_model"]

log = logging.getLogger(__name__)

LAYOUTS = ("ssd_anchors", "tflite_postprocess", "yolov5", "yolov8")

#: ``(class_id, score, (x_min, y_min, x_max, y_max))``, box normalised to the model input
Detection = tuple[int, float, tuple[float, float, float, float]]

#: anchors of the SSD layouts: two levels, two shapes each
LAYOUT_ANCHOR_LEVELS = (
    AnchorLevel(stride=16, sizes=((16.0, 16.0), (24.0, 32.0))),
    AnchorLevel(stride=32, sizes=((32.0, 32.0), (48.0, 40.0))),
)

_LOW_SCORE = 0.01  # every spare anchor or row, per class
_YOLO_ROWS_PER_OBJECT = 4  # a YOLO layout has this many rows per given object (at least 8)
_POSTPROCESS_MAX = 10  # TFLite_Detection_PostProcess max_detections
_POSTPROCESS_SCORE_THRESHOLD = 0.05
_POSTPROCESS_IOU_THRESHOLD = 0.5


def _check(detections: Sequence[Detection], num_classes: int) -> list[Detection]:
    out = []
    for det in detections:
        try:
            cls, score, box = det
            x0, y0, x1, y1 = (float(v) for v in box)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"a detection is (class_id, score, (x0, y0, x1, y1)), got {det!r}") from exc
        if not 0 <= int(cls) < num_classes:
            raise ValueError(f"class_id {cls} out of range for {num_classes} classes")
        if not _LOW_SCORE < float(score) <= 1.0:
            raise ValueError(f"score {score} must be within ({_LOW_SCORE}, 1]")
        if not 0.0 <= x0 < x1 <= 1.0 or not 0.0 <= y0 < y1 <= 1.0:
            raise ValueError(f"box {box} must be normalised with x0 < x1 and y0 < y1")
        out.append((int(cls), float(score), (x0, y0, x1, y1)))
    return out


def _anchor_outputs(
    detections: list[Detection], anchors: np.ndarray, num_classes: int, background: bool
) -> tuple[np.ndarray, np.ndarray]:
    """``[1, N, 4]`` encodings and ``[1, N, C (+1)]`` scores that hold ``detections``."""
    n = len(anchors)
    if len(detections) > n:
        raise ValueError(f"at most {n} detections fit the {n} anchors")
    cy, cx, h, w = anchors.astype(np.float64).T
    anchor_boxes = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
    boxes = anchor_boxes.copy()  # spare anchors: their own box (encoding 0)
    scores = np.full((n, num_classes), _LOW_SCORE)
    free = np.ones(n, dtype=bool)
    for cls, score, box in detections:
        overlap = np.where(free, iou_matrix(np.asarray(box), anchor_boxes)[0], -1.0)
        i = int(np.argmax(overlap))
        free[i] = False
        boxes[i] = box
        scores[i] = 0.0
        scores[i, cls] = score
    enc = encode_boxes(boxes, anchors)
    if background:
        scores = np.concatenate([1.0 - scores.max(axis=1, keepdims=True), scores], axis=1)
    return enc[None].astype(np.float32), scores[None].astype(np.float32)


def _yolo_rows(detections: list[Detection], num_classes: int, width: int, height: int, version: int) -> np.ndarray:
    """``N x (5 + C)`` (v5) or ``N x (4 + C)`` (v8) rows, boxes in input pixels."""
    n = max(8, _YOLO_ROWS_PER_OBJECT * len(detections))
    # spare rows: small boxes on a diagonal with near-zero scores
    t = (np.arange(n) + 0.5) / n
    boxes = np.stack([t * width, t * height, np.full(n, 4.0), np.full(n, 4.0)], axis=1)
    cls_scores = np.full((n, num_classes), _LOW_SCORE)
    obj = np.full(n, _LOW_SCORE)
    for k, (cls, score, (x0, y0, x1, y1)) in enumerate(detections):
        i = k * _YOLO_ROWS_PER_OBJECT + 1
        boxes[i] = [(x0 + x1) / 2 * width, (y0 + y1) / 2 * height, (x1 - x0) * width, (y1 - y0) * height]
        cls_scores[i] = 0.0
        if version == 5:
            obj[i] = (1.0 + score) / 2  # objectness x class score = score
            cls_scores[i, cls] = score / obj[i]
        else:
            cls_scores[i, cls] = score
    if version == 5:
        return np.concatenate([boxes, obj[:, None], cls_scores], axis=1).astype(np.float32)
    return np.concatenate([boxes, cls_scores], axis=1).astype(np.float32)


def _postprocess_implements(num_classes: int) -> str:
    """The ``experimental_implements`` text the converter turns into ``TFLite_Detection_PostProcess``."""
    attrs: list[tuple[str, str]] = [
        ("max_detections", f"i: {_POSTPROCESS_MAX}"),
        ("max_classes_per_detection", "i: 1"),
        ("detections_per_class", f"i: {_POSTPROCESS_MAX}"),
        ("use_regular_nms", "b: true"),
        ("nms_score_threshold", f"f: {_POSTPROCESS_SCORE_THRESHOLD}"),
        ("nms_iou_threshold", f"f: {_POSTPROCESS_IOU_THRESHOLD}"),
        ("num_classes", f"i: {num_classes}"),
        ("y_scale", "f: 10.0"),
        ("x_scale", "f: 10.0"),
        ("h_scale", "f: 5.0"),
        ("w_scale", "f: 5.0"),
    ]
    return " ".join(
        ['name: "TFLite_Detection_PostProcess"'] + [f'attr {{ key: "{k}" value {{ {v} }} }}' for k, v in attrs]
    )


def _keras_model(constants: dict[str, np.ndarray], postprocess: str | None) -> Any:
    """A Keras model returning ``constants`` (plus an input-dependent zero), or the post-process op over them."""
    import keras
    import tensorflow as tf

    op = None
    if postprocess is not None:

        @tf.function(experimental_implements=postprocess)
        def op(box_encodings: Any, class_predictions: Any, anchors: Any) -> tuple[Any, Any, Any, Any]:
            # only the signature matters: the converter replaces this function by the custom op
            zero = tf.constant(0.0)
            return zero, zero, zero, zero

    class ConstantOutputs(keras.Model):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(name="layout_model")
            self.consts = {
                k: self.add_weight(
                    shape=v.shape, initializer=keras.initializers.Constant(v), trainable=False, name=k, dtype="float32"
                )
                for k, v in constants.items()
            }

        def call(self, image: Any) -> dict[str, Any]:
            zero = tf.minimum(tf.nn.relu(tf.reduce_mean(image)), 0.0)
            if op is None:
                return {k: tf.convert_to_tensor(v) + zero for k, v in self.consts.items()}
            boxes, classes, scores, count = op(
                self.consts["box_encodings"] + zero,
                self.consts["class_predictions"] + zero,
                tf.convert_to_tensor(self.consts["anchors"]),
            )
            return {"boxes": boxes, "classes": classes, "scores": scores, "count": count}

    return ConstantOutputs()


def make_layout_model(
    layout: str,
    out_dir: Path,
    detections: Sequence[Detection],
    *,
    num_classes: int = 3,
    input_size: tuple[int, int] = (64, 48),
) -> Path:
    """Write a bundle whose float32 model outputs ``detections`` in ``layout``.

    Args:
        layout: ``"ssd_anchors"``, ``"tflite_postprocess"``, ``"yolov5"`` or ``"yolov8"``.
        out_dir: the bundle folder (created); gets ``<layout>.tflite`` and ``manifest.json``.
        detections: ``(class_id, score, (x_min, y_min, x_max, y_max))`` with the box
            normalised to the model input and ``0.01 < score <= 1``. For
            ``tflite_postprocess`` at most 10 come out of the op.
        num_classes: ``C``; labels are ``class0 .. class{C-1}``.
        input_size: model input ``(width, height)``.

    Returns:
        The path of ``manifest.json``.

    Raises:
        ValueError: unknown layout, bad detections, more detections than anchors.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; expected one of {LAYOUTS}")
    if num_classes < 1:
        raise ValueError(f"num_classes must be >= 1, got {num_classes}")
    width, height = input_size
    spec = InputSpec(width=int(width), height=int(height), crop_top=0.0)
    dets = _check(detections, num_classes)
    labels = [f"class{i}" for i in range(num_classes)]
    decoder: dict[str, Any] = {"layout": layout, "labels": labels}
    postprocess = None
    if layout in ("ssd_anchors", "tflite_postprocess"):
        anchors = grid_anchors(spec.width, spec.height, LAYOUT_ANCHOR_LEVELS)
        background = layout == "tflite_postprocess"
        enc, scores = _anchor_outputs(dets, anchors, num_classes, background)
        if layout == "ssd_anchors":
            constants = {"boxes": enc, "scores": scores}
            decoder.update(
                anchors={"levels": [lv.to_dict() for lv in LAYOUT_ANCHOR_LEVELS]},
                box_scales=[10.0, 10.0, 5.0, 5.0],
                score_activation="none",
                background_class=False,
            )
        else:
            if len(dets) > _POSTPROCESS_MAX:
                raise ValueError(f"TFLite_Detection_PostProcess returns at most {_POSTPROCESS_MAX} detections")
            constants = {"box_encodings": enc, "class_predictions": scores, "anchors": anchors}
            postprocess = _postprocess_implements(num_classes)
            decoder["label_offset"] = 0
        outputs: dict[str, tuple[int, ...]] = (
            {"boxes": enc.shape, "scores": scores.shape}
            if layout == "ssd_anchors"
            else {
                "boxes": (1, _POSTPROCESS_MAX, 4),
                "classes": (1, _POSTPROCESS_MAX),
                "scores": (1, _POSTPROCESS_MAX),
                "count": (1,),
            }
        )
    else:
        version = 5 if layout == "yolov5" else 8
        rows = _yolo_rows(dets, num_classes, spec.width, spec.height, version)
        out = rows[None] if version == 5 else rows.T[None]
        constants = {"output": np.ascontiguousarray(out)}
        outputs = {"output": out.shape}
        decoder.update(coords="pixels", score_activation="none")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tflite = out_dir / f"{layout}.tflite"
    _convert(_keras_model(constants, postprocess), tflite, spec, outputs)
    manifest = {
        "schema": 1,
        "id": f"layout-{layout}",
        "name": f"seedcam {layout} layout check model (constant detections)",
        "version": "1.0.0",
        "task": "detect",
        "min_firmware_version": FIRMWARE_VERSION,
        "default_precision": "float32",
        "files": {"float32": {"file": tflite.name, "sha256": sha256_file(tflite)}},
        "input": spec.to_dict(),
        "outputs": {k: list(v) for k, v in outputs.items()},
        "decoder": decoder,
    }
    path = out_dir / "manifest.json"
    path.write_text(json.dumps(manifest, indent=2) + "\n")
    log.debug("wrote %s (%d detections)", path, len(dets))
    return path


def _convert(model: Any, path: Path, spec: InputSpec, outputs: dict[str, tuple[int, ...]]) -> None:
    """Build ``model`` on a zero input and convert it with our export path."""
    import tensorflow as tf

    from .export import to_tflite

    model(tf.zeros(spec.shape))
    to_tflite(model, path, int8=False, input_spec=spec, outputs=outputs)

"""Object-detection decoders: output tensors of four common layouts -> boxes.

A decoder is a pure function of the model's (dequantized) output tensors; it
returns :class:`RawDetection` records whose boxes are normalised to the MODEL
INPUT image, best first. Mapping them into the camera frame is the task's job.

Layouts (``decoder["layout"]`` in the manifest):

``ssd_anchors``
    ``boxes`` ``[1, N, 4]`` anchor encodings ``(ty, tx, th, tw)`` (see
    :mod:`.anchors`) and ``scores`` ``[1, N, K]``; ``K = C``, or ``C + 1`` when
    column 0 is a background class. Keys: ``anchors`` (``{"levels": [...]}``,
    generated with :func:`.anchors.grid_anchors`, or ``{"file": "anchors.npy"}``,
    an ``N x 4`` ``(cy, cx, h, w)`` array beside the manifest), ``box_scales``
    (default ``[10, 10, 5, 5]``), ``score_activation`` (``"none"``, ``"sigmoid"``,
    ``"softmax"``), ``background_class`` (bool), ``output_names``
    (``{"boxes": ..., "scores": ...}``).
``tflite_postprocess``
    the four outputs of the ``TFLite_Detection_PostProcess`` op: ``boxes``
    ``[1, M, 4]`` as normalised ``(y_min, x_min, y_max, x_max)``, ``classes``
    ``[1, M]``, ``scores`` ``[1, M]``, ``count`` ``[1]``. Keys: ``output_names``
    (``{"boxes", "classes", "scores", "count"}`` -> tensor names),
    ``label_offset`` (added to the class index; default 0).
``yolov5``
    one output ``[1, N, 5 + C]``: ``cx, cy, w, h``, objectness, ``C`` class
    scores; score = objectness x class score.
``yolov8``
    one output ``[1, 4 + C, N]``: ``cx, cy, w, h`` then ``C`` class scores.

Both YOLO layouts take ``coords`` (``"pixels"`` of the model input, the default,
or ``"normalized"``), ``score_activation`` (``"none"`` or ``"sigmoid"``) and
``output_name`` (default: the model's only output).

Every layout needs ``labels`` (the ``C`` class names) and may carry the default
:class:`DetectionParams` as ``score_threshold``, ``iou_threshold`` and
``max_detections``; any other key is an error, so that a misspelt key cannot go
unnoticed.

Selection, the same for every layout: keep (box, class) pairs scoring at least
``score_threshold`` (the :data:`MAX_CANDIDATES` best of them), clip boxes to
the image and drop those left empty, run greedy NMS per class, then keep the
``max_detections`` best.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from seedcam.errors import BundleError

from .anchors import BOX_SCALES, decode_boxes, grid_anchors, levels_from_manifest
from .boxes import nms
from .classify import ACTIVATIONS, activate
from .detection_select import MAX_CANDIDATES, DetectionParams, RawDetection, select_dense, select_detections
from .manifest import bundle_file_path

__all__ = [
    "LAYOUTS",
    "MAX_CANDIDATES",
    "DetectionDecoder",
    "DetectionParams",
    "PostProcessDecoder",
    "RawDetection",
    "SsdAnchorDecoder",
    "YoloDecoder",
    "make_detection_decoder",
    "nms",
]

log = logging.getLogger(__name__)

LAYOUTS = ("ssd_anchors", "tflite_postprocess", "yolov5", "yolov8")
_POSTPROCESS_OUTPUTS = ("boxes", "classes", "scores", "count")
_COMMON_KEYS = frozenset({"layout", "labels", "score_threshold", "iou_threshold", "max_detections"})
_LAYOUT_KEYS = {
    "ssd_anchors": frozenset({"anchors", "box_scales", "score_activation", "background_class", "output_names"}),
    "tflite_postprocess": frozenset({"output_names", "label_offset"}),
    "yolov5": frozenset({"output_name", "coords", "score_activation"}),
    "yolov8": frozenset({"output_name", "coords", "score_activation"}),
}


def _tensor(outputs: Mapping[str, np.ndarray], name: str, shape: tuple[int, ...]) -> np.ndarray:
    """``outputs[name]`` as float32 of ``shape`` (a leading batch of 1 may be present or not)."""
    if name not in outputs:
        raise ValueError(f"no output named {name!r} among {sorted(outputs)}")
    arr = np.asarray(outputs[name], dtype=np.float32)
    if arr.size != int(np.prod(shape)):
        raise ValueError(f"output {name!r} has shape {list(arr.shape)}, expected {[1, *shape]}")
    return arr.reshape(shape)


def _labels(labels: Sequence[str]) -> tuple[str, ...]:
    if isinstance(labels, str) or not all(isinstance(x, str) for x in labels) or not labels:
        raise ValueError("labels must be a non-empty list of strings")
    return tuple(labels)


class DetectionDecoder(Protocol):
    """What every layout's decoder offers."""

    #: the manifest layout name
    layout: str
    #: class names; ``RawDetection.class_id`` indexes them
    labels: tuple[str, ...]
    #: the output tensors :meth:`decode` reads
    output_names: tuple[str, ...]

    def decode(self, outputs: Mapping[str, np.ndarray], params: DetectionParams) -> list[RawDetection]:
        """Detections from the model outputs (name -> float array), best first."""
        ...


class SsdAnchorDecoder:
    """The ``ssd_anchors`` layout: box encodings against anchors plus per-anchor class scores.

    Args:
        labels: the ``C`` class names.
        anchors: ``N x 4`` normalised ``(cy, cx, h, w)``.
        box_scales: ``(y, x, h, w)`` scales of the encoding.
        score_activation: ``"none"``, ``"sigmoid"`` or ``"softmax"`` (over all ``K`` columns).
        background_class: the scores have ``C + 1`` columns, column 0 being background.
        boxes_name, scores_name: the output tensor names.

    Raises:
        ValueError: a bad argument.
    """

    layout = "ssd_anchors"

    def __init__(
        self,
        labels: Sequence[str],
        anchors: np.ndarray,
        *,
        box_scales: Sequence[float] = BOX_SCALES,
        score_activation: str = "none",
        background_class: bool = False,
        boxes_name: str = "boxes",
        scores_name: str = "scores",
    ) -> None:
        self.labels = _labels(labels)
        a = np.asarray(anchors, dtype=np.float32)
        if a.ndim != 2 or a.shape[1] != 4 or a.shape[0] == 0:
            raise ValueError(f"anchors must be N x 4 (cy, cx, h, w), got shape {list(a.shape)}")
        if not np.isfinite(a).all() or (a[:, 2:] <= 0).any():
            raise ValueError("anchors must be finite with positive heights and widths")
        scales = tuple(float(s) for s in box_scales)
        if len(scales) != 4 or any(s <= 0 for s in scales):
            raise ValueError(f"box_scales must be 4 positive numbers, got {list(box_scales)}")
        if score_activation not in ACTIVATIONS:
            raise ValueError(f"score_activation must be one of {ACTIVATIONS}, got {score_activation!r}")
        self.anchors = a
        self.box_scales = scales
        self.score_activation = score_activation
        self.background_class = bool(background_class)
        self.output_names: tuple[str, ...] = (boxes_name, scores_name)

    @property
    def num_anchors(self) -> int:
        """``N``."""
        return int(self.anchors.shape[0])

    @property
    def score_columns(self) -> int:
        """``K``: the classes, plus one for a background column."""
        return len(self.labels) + int(self.background_class)

    def decode(self, outputs: Mapping[str, np.ndarray], params: DetectionParams) -> list[RawDetection]:
        """See :class:`DetectionDecoder`.

        Raises:
            ValueError: an output is missing or has the wrong size.
        """
        n = self.num_anchors
        enc = _tensor(outputs, self.output_names[0], (n, 4))
        scores = activate(_tensor(outputs, self.output_names[1], (n, self.score_columns)), self.score_activation)
        if self.background_class:
            scores = scores[:, 1:]
        # only the candidates' anchors need their box: select_dense's candidates, in its order, at a fraction
        flat = np.flatnonzero(scores >= params.score_threshold)
        rows, cols = np.divmod(flat, scores.shape[1])
        boxes = decode_boxes(enc[rows], self.anchors[rows], self.box_scales)
        return select_detections(boxes, scores[rows, cols], cols, params)


class PostProcessDecoder:
    """The ``tflite_postprocess`` layout: outputs of ``TFLite_Detection_PostProcess``.

    The op has done its own NMS; :meth:`decode` applies the thresholds and a
    per-class NMS with ``params`` on top, so that they mean the same in every layout.
    A class index outside the labels (after ``label_offset``) is dropped.

    Args:
        labels: the class names.
        label_offset: added to the op's class index.
        names: the tensor names of ``boxes``, ``classes``, ``scores``, ``count``.
        max_boxes: ``M``, the op's ``max_detections``.

    Raises:
        ValueError: a bad argument.
    """

    layout = "tflite_postprocess"

    def __init__(
        self,
        labels: Sequence[str],
        *,
        max_boxes: int,
        label_offset: int = 0,
        names: Sequence[str] = _POSTPROCESS_OUTPUTS,
    ) -> None:
        self.labels = _labels(labels)
        if max_boxes < 1:
            raise ValueError(f"max_boxes must be >= 1, got {max_boxes}")
        if len(names) != 4:
            raise ValueError(f"need the names of 4 outputs {_POSTPROCESS_OUTPUTS}, got {list(names)}")
        self.max_boxes = int(max_boxes)
        self.label_offset = int(label_offset)
        self.output_names = tuple(names)

    def decode(self, outputs: Mapping[str, np.ndarray], params: DetectionParams) -> list[RawDetection]:
        """See :class:`DetectionDecoder`.

        Raises:
            ValueError: an output is missing or has the wrong size.
        """
        m = self.max_boxes
        bn, cn, sn, nn = self.output_names
        yxyx = _tensor(outputs, bn, (m, 4))
        classes = _tensor(outputs, cn, (m,))
        scores = _tensor(outputs, sn, (m,))
        count = int(np.clip(np.round(_tensor(outputs, nn, (1,))[0]), 0, m))
        ids = np.round(classes[:count]).astype(np.int64) + self.label_offset
        ok = (ids >= 0) & (ids < len(self.labels))
        if not ok.all():
            log.debug("dropped %d boxes of unknown classes %s", int((~ok).sum()), sorted(set(ids[~ok].tolist())))
        boxes = yxyx[:count][:, [1, 0, 3, 2]]
        return select_detections(boxes[ok], scores[:count][ok], ids[ok], params)


class YoloDecoder:
    """The ``yolov5`` (``[1, N, 5 + C]``) and ``yolov8`` (``[1, 4 + C, N]``) layouts.

    Args:
        labels: the ``C`` class names.
        version: 5 or 8.
        num_boxes: ``N``.
        input_width, input_height: the model input size (for ``coords="pixels"``).
        output_name: the output tensor's name.
        coords: ``"pixels"`` of the model input or ``"normalized"``.
        score_activation: ``"none"`` or ``"sigmoid"`` (objectness and class scores).

    Raises:
        ValueError: a bad argument.
    """

    def __init__(
        self,
        labels: Sequence[str],
        *,
        version: int,
        num_boxes: int,
        input_width: int,
        input_height: int,
        output_name: str,
        coords: str = "pixels",
        score_activation: str = "none",
    ) -> None:
        self.labels = _labels(labels)
        if version not in (5, 8):
            raise ValueError(f"version must be 5 or 8, got {version}")
        if num_boxes < 1 or input_width < 1 or input_height < 1:
            raise ValueError("num_boxes, input_width and input_height must be >= 1")
        if coords not in ("pixels", "normalized"):
            raise ValueError(f"coords must be 'pixels' or 'normalized', got {coords!r}")
        if score_activation not in ("none", "sigmoid"):
            raise ValueError(f"score_activation must be 'none' or 'sigmoid', got {score_activation!r}")
        self.layout = f"yolov{version}"
        self.version = version
        self.num_boxes = int(num_boxes)
        self.output_names: tuple[str, ...] = (output_name,)
        self.coords = coords
        self.score_activation = score_activation
        self._scale = (
            np.array([input_width, input_height] * 2, np.float32) if coords == "pixels" else np.ones(4, np.float32)
        )

    def decode(self, outputs: Mapping[str, np.ndarray], params: DetectionParams) -> list[RawDetection]:
        """See :class:`DetectionDecoder`.

        Raises:
            ValueError: the output is missing or has the wrong size.
        """
        c, n = len(self.labels), self.num_boxes
        if self.version == 5:
            rows = _tensor(outputs, self.output_names[0], (n, 5 + c))
            obj = activate(rows[:, 4], self.score_activation)
            scores = obj[:, None] * activate(rows[:, 5:], self.score_activation)
        else:
            rows = _tensor(outputs, self.output_names[0], (4 + c, n)).T
            scores = activate(rows[:, 4:], self.score_activation)
        cx, cy, w, h = (rows[:, :4] / self._scale).T
        boxes = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
        return select_dense(boxes, scores, params)


# --- the manifest factory ---------------------------------------------------------------------------------------


def _shape_text(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in shape) + "]"


def _outputs_text(outputs: Mapping[str, tuple[int, ...]]) -> str:
    return ", ".join(f"{k!r} {_shape_text(v)}" for k, v in outputs.items()) or "no outputs"


def _names(decoder: Mapping[str, Any], layout: str, roles: Sequence[str]) -> tuple[str, ...]:
    given = decoder.get("output_names", {})
    if not isinstance(given, Mapping) or not all(isinstance(v, str) for v in given.values()):
        raise BundleError(f"layout {layout}: 'output_names' must map {list(roles)} to output names")
    unknown = sorted(set(given) - set(roles))
    if unknown:
        raise BundleError(f"layout {layout}: unknown 'output_names' keys {unknown}; expected some of {list(roles)}")
    return tuple(str(given.get(r, r)) for r in roles)


def _load_anchors(spec: Any, layout: str, input_width: int, input_height: int, bundle_dir: Path | None) -> np.ndarray:
    if not isinstance(spec, Mapping) or len(set(spec) & {"levels", "file"}) != 1 or len(spec) != 1:
        raise BundleError(f'layout {layout}: \'anchors\' must be {{"levels": [...]}} or {{"file": "anchors.npy"}}')
    if "levels" in spec:
        try:
            return grid_anchors(input_width, input_height, levels_from_manifest(spec["levels"]))
        except (TypeError, ValueError) as exc:
            raise BundleError(f"layout {layout}: bad 'anchors' levels: {exc}") from exc
    if bundle_dir is None:
        raise BundleError(f"layout {layout}: anchors file {spec['file']!r} given but no bundle folder to read it from")
    path = bundle_file_path(Path(bundle_dir), spec["file"], "decoder anchors file")
    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise BundleError(f"layout {layout}: cannot read anchors file {path}: {exc}") from exc
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise BundleError(f"layout {layout}: anchors file {path.name} must hold N x 4 (cy, cx, h, w), got {arr.shape}")
    return arr.astype(np.float32)


def _make_ssd(
    decoder: Mapping[str, Any],
    labels: tuple[str, ...],
    input_width: int,
    input_height: int,
    outputs: Mapping[str, tuple[int, ...]],
    bundle_dir: Path | None,
) -> SsdAnchorDecoder:
    layout = "ssd_anchors"
    if "anchors" not in decoder:
        raise BundleError(f"layout {layout} needs 'anchors' in the decoder")
    anchors = _load_anchors(decoder["anchors"], layout, input_width, input_height, bundle_dir)
    background = decoder.get("background_class", False)
    if not isinstance(background, bool):
        raise BundleError(f"layout {layout}: 'background_class' must be true or false, got {background!r}")
    boxes_name, scores_name = _names(decoder, layout, ("boxes", "scores"))
    n, c = len(anchors), len(labels)
    k = c + int(background)
    k_text = f"K=C+1={k} ({c} labels + background)" if background else f"K=C={k} ({c} labels)"
    got = {name: outputs[name] for name in (boxes_name, scores_name) if name in outputs}
    if got.get(boxes_name) != (1, n, 4) or got.get(scores_name) != (1, n, k):
        raise BundleError(
            f"layout {layout} expects outputs {boxes_name!r} [1, N, 4] and {scores_name!r} [1, N, K] with "
            f"N={n} (the anchors) and {k_text}, i.e. [1, {n}, 4] and [1, {n}, {k}]; got {_outputs_text(outputs)}"
        )
    try:
        return SsdAnchorDecoder(
            labels,
            anchors,
            box_scales=decoder.get("box_scales", BOX_SCALES),
            score_activation=decoder.get("score_activation", "none"),
            background_class=background,
            boxes_name=boxes_name,
            scores_name=scores_name,
        )
    except (TypeError, ValueError) as exc:
        raise BundleError(f"layout {layout}: {exc}") from exc


def _make_postprocess(
    decoder: Mapping[str, Any], labels: tuple[str, ...], outputs: Mapping[str, tuple[int, ...]]
) -> PostProcessDecoder:
    layout = "tflite_postprocess"
    names = _names(decoder, layout, _POSTPROCESS_OUTPUTS)
    boxes = outputs.get(names[0])
    m = boxes[1] if boxes is not None and len(boxes) == 3 else -1
    want = ((1, m, 4), (1, m), (1, m))
    if (
        m < 1
        or any(outputs.get(nm) != w for nm, w in zip(names[:3], want, strict=True))
        or outputs.get(names[3]) not in ((1,), ())
    ):
        raise BundleError(
            f"layout {layout} expects outputs {names[0]!r} [1, M, 4], {names[1]!r} [1, M], {names[2]!r} [1, M] "
            f"and {names[3]!r} [1] with one M; got {_outputs_text(outputs)}"
        )
    offset = decoder.get("label_offset", 0)
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise BundleError(f"layout {layout}: 'label_offset' must be an integer, got {offset!r}")
    return PostProcessDecoder(labels, max_boxes=m, label_offset=offset, names=names)


def _make_yolo(
    decoder: Mapping[str, Any],
    layout: str,
    labels: tuple[str, ...],
    input_width: int,
    input_height: int,
    outputs: Mapping[str, tuple[int, ...]],
) -> YoloDecoder:
    version = 5 if layout == "yolov5" else 8
    name = decoder.get("output_name")
    if name is None:
        if len(outputs) != 1:
            raise BundleError(
                f"layout {layout} reads one output but the model has {_outputs_text(outputs)}; "
                "name it with 'output_name'"
            )
        name = next(iter(outputs))
    c = len(labels)
    shape = outputs.get(str(name))
    if version == 5:
        ok = shape is not None and len(shape) == 3 and shape[0] == 1 and shape[2] == 5 + c
        want = f"[1, N, 5+C] with C={c} (the labels), i.e. [1, N, {5 + c}]"
    else:
        ok = shape is not None and len(shape) == 3 and shape[0] == 1 and shape[1] == 4 + c
        want = f"[1, 4+C, N] with C={c} (the labels), i.e. [1, {4 + c}, N]"
    if not ok or shape is None:
        raise BundleError(f"layout {layout} expects one output {name!r} {want}; got {_outputs_text(outputs)}")
    try:
        return YoloDecoder(
            labels,
            version=version,
            num_boxes=shape[1] if version == 5 else shape[2],
            input_width=input_width,
            input_height=input_height,
            output_name=str(name),
            coords=decoder.get("coords", "pixels"),
            score_activation=decoder.get("score_activation", "none"),
        )
    except (TypeError, ValueError) as exc:
        raise BundleError(f"layout {layout}: {exc}") from exc


def make_detection_decoder(
    decoder: Mapping[str, Any],
    *,
    input_width: int,
    input_height: int,
    outputs: Mapping[str, tuple[int, ...]],
    bundle_dir: Path | None = None,
) -> DetectionDecoder:
    """The decoder a manifest's ``decoder`` section describes, checked against its ``outputs``.

    Args:
        decoder: the manifest's ``decoder`` section (see the module docstring).
        input_width, input_height: the model input size in pixels.
        outputs: the manifest's output name -> shape.
        bundle_dir: the bundle folder (for ``anchors: {"file": ...}``).

    Raises:
        BundleError: unknown layout or key, missing or malformed labels or
            anchors, or output shapes that disagree with the layout (the
            message says what the layout expects and what the manifest has).
    """
    if not isinstance(decoder, Mapping):
        raise BundleError("the manifest's 'decoder' must be an object")
    layout = decoder.get("layout")
    if layout not in LAYOUTS:
        raise BundleError(f"unknown detection layout {layout!r}; expected one of {LAYOUTS}")
    unknown = sorted(set(decoder) - _COMMON_KEYS - _LAYOUT_KEYS[layout])
    if unknown:
        allowed = sorted(_COMMON_KEYS | _LAYOUT_KEYS[layout])
        raise BundleError(f"layout {layout}: unknown decoder keys {unknown}; allowed: {allowed}")
    try:
        labels = _labels(decoder.get("labels") or [])
    except ValueError as exc:
        raise BundleError(f"layout {layout}: 'labels' must be a non-empty list of strings") from exc
    outs = {str(k): tuple(int(v) for v in s) for k, s in outputs.items()}
    if layout == "ssd_anchors":
        return _make_ssd(decoder, labels, input_width, input_height, outs, bundle_dir)
    if layout == "tflite_postprocess":
        return _make_postprocess(decoder, labels, outs)
    return _make_yolo(decoder, layout, labels, input_width, input_height, outs)

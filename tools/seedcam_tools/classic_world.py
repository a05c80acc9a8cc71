"""The classic world: the firmware renderer's random lane scenes with signs and plates in view.

A scene is a :func:`~seedcam_firmware.scene.random_scene` (look, lighting, blur,
noise) whose objects are replaced by 0-4 signs and plates at varied distance,
lateral position and yaw, some partly hidden by occluders. Objects are placed
fully in view and hardly overlapping each other, so every truth box is a fair
target. The detector trains on these scenes (:mod:`seedcam_tools.detect.data`)
and every evaluator reads them as the classic frames (:mod:`seedcam_tools.frames`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from seedcam_firmware.inference.boxes import box_iou
from seedcam_firmware.scene import DEFAULT_CAMERA, OBJECT_KINDS, SceneObject, object_corners, random_scene

__all__ = ["random_detection_scene"]

#: distance ranges (m, ahead of the camera) where objects are placed
SIGN_RANGE_M = (0.3, 1.6)
PLATE_RANGE_M = (0.3, 1.1)
MAX_OBJECTS = 4
_MAX_PAIR_IOU = 0.15


def _random_text(rng: np.random.Generator, kind: str) -> str:
    if kind == "speed_limit":
        return str(int(rng.choice([10, 20, 30, 50])))
    if kind != "plate":
        return ""
    if rng.random() < 0.5:
        letters = "".join(chr(65 + int(v)) for v in rng.integers(26, size=3))
        return f"{letters}-{int(rng.integers(1000)):03d}"
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return "".join(alphabet[int(v)] for v in rng.integers(len(alphabet), size=int(rng.integers(3, 8))))


def _pixel_box(obj: SceneObject) -> tuple[float, float, float, float] | None:
    """The object's box in frame pixels, or None when it is not fully in view."""
    uv, depth = DEFAULT_CAMERA.project(object_corners(obj))
    if np.any(depth < 0.05):
        return None
    x0, y0 = uv.min(axis=0)
    x1, y1 = uv.max(axis=0)
    if x0 < 1 or y0 < 1 or x1 > DEFAULT_CAMERA.width - 2 or y1 > DEFAULT_CAMERA.height * 0.62:
        return None
    return float(x0), float(y0), float(x1), float(y1)


def random_detection_scene(rng: np.random.Generator):  # noqa: ANN201 - returns a SceneSpec
    """A random lane scene holding 0..4 fully visible objects, some partly occluded."""
    spec = random_scene(rng)
    n_wanted = int(rng.choice([0, 1, 1, 2, 2, 3, 4]))
    objects: list[SceneObject] = []
    boxes: list[tuple[float, float, float, float]] = []
    for _ in range(n_wanted * 6):
        if len(objects) == n_wanted:
            break
        kind = OBJECT_KINDS[int(rng.integers(len(OBJECT_KINDS)))]
        lo, hi = PLATE_RANGE_M if kind == "plate" else SIGN_RANGE_M
        forward = float(np.exp(rng.uniform(np.log(lo), np.log(hi))))  # more samples near, where it is larger
        left = float(rng.uniform(-1.0, 1.0) * forward * 0.95)
        obj = SceneObject(kind, forward, left, _random_text(rng, kind), float(rng.uniform(-0.6, 0.6)))
        box = _pixel_box(obj)
        if box is None or any(box_iou(box, other) > _MAX_PAIR_IOU for other in boxes):
            continue
        objects.append(obj)
        boxes.append(box)
    occluders = []
    for x0, y0, x1, y1 in boxes:
        if rng.random() < 0.25:  # hide 10..35 % of the object from one side
            frac = float(rng.uniform(0.1, 0.35))
            w, h = x1 - x0, y1 - y0
            side = int(rng.integers(4))
            if side == 0:
                rect = (x0 - 2, y0 - 2, x0 + frac * w, y1 + 2)
            elif side == 1:
                rect = (x1 - frac * w, y0 - 2, x1 + 2, y1 + 2)
            elif side == 2:
                rect = (x0 - 2, y1 - frac * h, x1 + 2, y1 + 2)
            else:
                rect = (x0 - 2, y0 - 2, x1 + 2, y0 + frac * h)
            width, height = DEFAULT_CAMERA.width, DEFAULT_CAMERA.height
            occluders.append(
                (rect[0] / width, rect[1] / height, rect[2] / width, rect[3] / height, float(rng.uniform(0.1, 0.7)))
            )
    return dataclasses.replace(spec, objects=tuple(objects), occluders=tuple(occluders))

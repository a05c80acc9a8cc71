"""Shared by the dataset tests: tiny images, a detection item set and the checks both files use."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import pytest

from seedcam_tools.datasets import CameraInfo, DatasetFormatError, LabelledBox, load_image

__all__ = ["CAMERA", "H", "NAMES", "W", "assert_same_objects", "det_items", "img", "raises", "save", "Truth"]

W, H = 64, 48
NAMES = ("car", "sign", "plate")
CAMERA = CameraInfo(width=W, height=H, hfov_deg=95.0, pitch_deg=15.0, height_m=0.12)


def img(seed: int = 0, w: int = W, h: int = H) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(h, w, 3), dtype=np.uint8)


def save(path: Path, image: np.ndarray | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    ok, buf = cv2.imencode(path.suffix, img() if image is None else image)
    assert ok
    path.write_bytes(buf.tobytes())
    return path


def det_items() -> list[tuple[str, np.ndarray, list[LabelledBox]]]:
    return [
        (
            "f0",
            img(0),
            [LabelledBox("car", (1.5, 2.25, 30.125, 40.0)), LabelledBox("plate", (40, 10, 63.5, 20), True)],
        ),
        ("f1", img(1), []),
        ("f2", img(2), [LabelledBox("sign", (0.0, 0.0, 64.0, 48.0))]),
    ]


def assert_same_objects(folder, items) -> None:
    assert [i.image.stem for i in folder.items] == [stem for stem, _, _ in items]
    for got, (_, image, boxes) in zip(folder.items, items, strict=True):
        assert (got.width, got.height) == (image.shape[1], image.shape[0])
        assert [(o.label, o.difficult) for o in got.objects] == [(b.label, b.difficult) for b in boxes]
        for o, b in zip(got.objects, boxes, strict=True):
            assert o.box == pytest.approx(b.box, rel=1e-6, abs=1e-9)
        assert np.array_equal(load_image(got.image), image)  # PNG is lossless


def raises(match: str, fn, *args, **kwargs) -> str:
    with pytest.raises(DatasetFormatError, match=match) as info:
        fn(*args, **kwargs)
    return str(info.value)


@dataclass
class Truth:
    """Lane truth as a writer takes it (any object with these attributes)."""

    offset_m: float
    heading_rad: float
    curvature_per_m: float
    status: str

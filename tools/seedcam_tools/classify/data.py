"""Image-classification data: a folder of the user's images, one subfolder per class.

Layout::

    DATA/
      cat/   a.jpg b.png ...      (any size; jpg / jpeg / png / bmp, also in nested folders)
      dog/   ...

Class names are the sorted subfolder names. Images are decoded with OpenCV and
brought to the model input with the firmware's own :func:`crop_resize`, so
training sees exactly the pixels the sensor will feed the model.

The train / validation split is a pure function of each file's path relative
to its class folder (a SHA-256 bucket), so it never changes when files are
added elsewhere and never depends on the machine, the seed or the file order.

This module also renders the shipped example data set (road-scene classes for
an AGV) from the synthetic scene generator, see :func:`write_road_scene_folder`.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import cv2
import numpy as np

from seedcam.errors import SensorError
from seedcam_firmware.inference.preprocess import InputSpec, crop_resize
from seedcam_firmware.scene import SceneSpec, random_objects, random_scene, render_with_mask

from ..workers import map_in_workers

__all__ = [
    "HELDOUT_SEED_BASE",
    "IMAGE_SUFFIXES",
    "MIN_IMAGES_PER_CLASS",
    "MIN_LINE_COVERAGE",
    "ROAD_CLASSES",
    "TRAIN_SEED_BASE",
    "DatasetError",
    "ImageFolder",
    "LoadedImages",
    "line_coverage",
    "load_images",
    "render_road_scene",
    "road_scene_seed",
    "road_scene_spec",
    "scan_image_folder",
    "split_images",
    "write_road_scene_folder",
]

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp"})
#: fewer usable images than this in any class is an error (need some for training and validation)
MIN_IMAGES_PER_CLASS = 5

#: road-scene classes of the shipped example, in the (sorted) order the model outputs them
ROAD_CLASSES = ("curve_left", "curve_right", "no_lane", "straight")
#: curvature bands (1/m, + = bends left): straight |k| < 0.15; curves |k| > 0.45 (the band between is left out)
STRAIGHT_MAX_CURVATURE = 0.15
CURVE_MIN_CURVATURE = 0.45
#: a lane-class frame must show at least this much painted line (sum of coverage x contrast, 320x240 pixels)
MIN_LINE_COVERAGE = 250.0
TRAIN_SEED_BASE = 0
HELDOUT_SEED_BASE = 10_000_000


class DatasetError(SensorError, ValueError):
    """A training-image folder cannot be used (empty, one class, too few images...)."""


@dataclass(frozen=True)
class ImageFolder:
    """The image files of a class-per-subfolder data set.

    Attributes:
        root: the data folder.
        classes: class names (sorted subfolder names); the model's output order.
        files: per class, the image paths relative to ``root`` (sorted).
    """

    root: Path
    classes: tuple[str, ...]
    files: tuple[tuple[Path, ...], ...]

    @property
    def counts(self) -> dict[str, int]:
        """Class name -> number of image files."""
        return {c: len(f) for c, f in zip(self.classes, self.files, strict=True)}


def scan_image_folder(root: str | Path, *, min_per_class: int = MIN_IMAGES_PER_CLASS) -> ImageFolder:
    """List the classes and image files under ``root`` (nothing is decoded yet).

    Hidden files and folders (``.name``) and files with other suffixes are ignored.

    Args:
        root: the data folder, one subfolder per class.
        min_per_class: the fewest image files a class may have.

    Raises:
        DatasetError: ``root`` is not a folder, has no class folder with images,
            only one class, or a class with fewer than ``min_per_class`` images.
    """
    root = Path(root)
    if not root.is_dir():
        raise DatasetError(f"{root} is not a folder")
    classes: list[str] = []
    files: list[tuple[Path, ...]] = []
    for sub in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        found = sorted(
            p.relative_to(root)
            for p in sub.rglob("*")
            if p.is_file()
            and p.suffix.lower() in IMAGE_SUFFIXES
            and not any(part.startswith(".") for part in p.relative_to(root).parts)
        )
        if not found:
            log.warning("%s: no images, ignored", sub)
            continue
        classes.append(sub.name)
        files.append(tuple(found))
    if not classes:
        suffixes = ", ".join(sorted(IMAGE_SUFFIXES))
        raise DatasetError(f"{root}: no class subfolders with images ({suffixes}); expected DATA/<class>/<image>")
    if len(classes) < 2:
        raise DatasetError(f"{root}: only one class ({classes[0]!r}); a classifier needs at least two")
    small = [f"{c} ({len(f)})" for c, f in zip(classes, files, strict=True) if len(f) < min_per_class]
    if small:
        raise DatasetError(f"{root}: too few images (need >= {min_per_class} per class): {', '.join(small)}")
    return ImageFolder(root, tuple(classes), tuple(files))


def _bucket(rel: Path) -> float:
    """A stable number in [0, 1) from a file's path below its class folder."""
    key = "/".join(rel.parts[1:]).encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") / 2.0**64


@dataclass
class LoadedImages:
    """Decoded images at model-input size.

    Attributes:
        x: N x H x W x 3 uint8 model pixels (after :func:`crop_resize`, RGB/BGR per the spec).
        y: N int64 class indices.
        classes: class names.
        files: N paths relative to the data folder.
        unreadable: paths (relative) that could not be decoded and were skipped.
    """

    x: np.ndarray
    y: np.ndarray
    classes: tuple[str, ...]
    files: list[Path]
    unreadable: list[Path]


def _read(path: Path, spec: InputSpec) -> np.ndarray | None:
    """Decode one image file to model pixels, or None when OpenCV cannot read it."""
    data = np.fromfile(path, np.uint8)
    image = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    if image is None:
        return None
    return crop_resize(image, spec)


def load_images(
    folder: ImageFolder,
    spec: InputSpec,
    *,
    min_per_class: int = 1,
    progress: bool = False,
    desc: str = "images",
) -> LoadedImages:
    """Decode every file of ``folder`` and resize it to the model input.

    Unreadable files are skipped with a warning and listed in ``unreadable``.

    Raises:
        DatasetError: after skipping, a class has fewer than ``min_per_class`` images.
    """
    jobs = [(k, rel) for k, files in enumerate(folder.files) for rel in files]
    it = jobs
    if progress:
        from tqdm import tqdm

        it = tqdm(jobs, desc=desc, unit="img")
    xs: list[np.ndarray] = []
    ys: list[int] = []
    ok_files: list[Path] = []
    bad: list[Path] = []
    for k, rel in it:
        pixels = _read(folder.root / rel, spec)
        if pixels is None:
            log.warning("cannot decode %s; skipped", folder.root / rel)
            bad.append(rel)
            continue
        xs.append(pixels)
        ys.append(k)
        ok_files.append(rel)
    if bad:
        log.warning("%s: %d unreadable image(s) skipped", folder.root, len(bad))
    y = np.asarray(ys, np.int64)
    counts = np.bincount(y, minlength=len(folder.classes))
    small = [f"{c} ({n})" for c, n in zip(folder.classes, counts, strict=True) if n < min_per_class]
    if small:
        raise DatasetError(
            f"{folder.root}: too few readable images (need >= {min_per_class} per class): {', '.join(small)}"
            + (f"; {len(bad)} unreadable file(s) skipped" if bad else "")
        )
    x = np.stack(xs) if xs else np.zeros((0, spec.height, spec.width, 3), np.uint8)
    return LoadedImages(x=x, y=y, classes=folder.classes, files=ok_files, unreadable=bad)


def split_images(images: LoadedImages, val_fraction: float = 0.15) -> tuple[LoadedImages, LoadedImages]:
    """Split into (train, validation) by a hash of each file's path below its class folder.

    The same file always lands on the same side, whatever else is in the folder.
    Every class keeps at least one validation and one training image: when the
    hash sends none (or all) of a class's files to validation, the files with
    the smallest hashes make up the difference.

    Raises:
        ValueError: ``val_fraction`` not within (0, 1).
        DatasetError: a class has fewer than two images.
    """
    if not 0.0 < val_fraction < 1.0:
        raise ValueError("val_fraction must be within (0, 1)")
    buckets = np.asarray([_bucket(p) for p in images.files], np.float64)
    is_val = np.zeros(len(images.files), bool)
    for k, name in enumerate(images.classes):
        idx = np.flatnonzero(images.y == k)
        if len(idx) < 2:
            raise DatasetError(f"class {name!r} has {len(idx)} image(s); need >= 2 to split")
        ranked = idx[np.lexsort((np.asarray([str(images.files[i]) for i in idx]), buckets[idx]))]
        n_val = int(np.clip((buckets[idx] < val_fraction).sum(), 1, len(idx) - 1))
        is_val[ranked[:n_val]] = True

    def take(mask: np.ndarray) -> LoadedImages:
        sel = np.flatnonzero(mask)
        return LoadedImages(
            x=images.x[sel],
            y=images.y[sel],
            classes=images.classes,
            files=[images.files[i] for i in sel],
            unreadable=[],
        )

    return take(~is_val), take(is_val)


# --- the shipped example: synthetic road scenes ---------------------------------------------------------------


def road_scene_spec(label: str, rng: np.random.Generator) -> SceneSpec:
    """A random scene of road-scene class ``label`` (one of :data:`ROAD_CLASSES`).

    Starts from :func:`random_scene` (look, lighting, blur, distractors) and sets
    the curvature into the class band; ``no_lane`` hides both lines (removed or
    worn to a trace), the other classes keep both lines or, in one scene of
    eight, only one. Objects are re-placed along the new lane.

    Raises:
        ValueError: unknown ``label``.
    """
    if label not in ROAD_CLASSES:
        raise ValueError(f"unknown road-scene class {label!r}; expected one of {ROAD_CLASSES}")
    spec = random_scene(rng)
    if label == "straight":
        kappa = float(rng.uniform(-1.0, 1.0)) * STRAIGHT_MAX_CURVATURE * 0.999
    elif label == "curve_left":
        kappa = float(rng.uniform(CURVE_MIN_CURVATURE, 1.0))
    elif label == "curve_right":
        kappa = -float(rng.uniform(CURVE_MIN_CURVATURE, 1.0))
    else:
        kappa = spec.curvature_per_m
    styles = ["solid" if rng.random() < 0.6 else "dashed" for _ in range(2)]
    contrast = [float(rng.uniform(0.45, 1.0)) for _ in range(2)]
    hidden = [0, 1] if label == "no_lane" else ([int(rng.integers(2))] if rng.random() < 0.125 else [])
    for k in hidden:
        if rng.random() < 0.6:
            styles[k] = "none"
        else:
            contrast[k] = float(rng.uniform(0.0, 0.1))
    pose = (spec.offset_m, spec.heading_rad, kappa, spec.lane_width_m)
    return replace(
        spec,
        curvature_per_m=kappa,
        left_style=styles[0],
        right_style=styles[1],
        left_contrast=contrast[0],
        right_contrast=contrast[1],
        objects=random_objects(rng, pose, len(spec.objects)),
    )


def road_scene_seed(seed_base: int, label: str, k: int) -> list[int]:
    """The generator entropy of image ``k`` of class ``label``: ``[seed_base + k, class index]``."""
    return [seed_base + k, ROAD_CLASSES.index(label)]


def line_coverage(spec: SceneSpec, mask: np.ndarray) -> float:
    """How much visible line paint a rendered frame shows: the line masks weighted by their contrast."""
    left = spec.left_contrast if spec.left_style != "none" else 0.0
    right = spec.right_contrast if spec.right_style != "none" else 0.0
    return float((mask[..., 0] * np.float32(left) + mask[..., 1] * np.float32(right)).sum())


def render_road_scene(label: str, rng: np.random.Generator, *, attempts: int = 50) -> tuple[np.ndarray, SceneSpec]:
    """Render a frame of class ``label``: returns ``(320 x 240 BGR image, its spec)``.

    A lane class (``straight``, ``curve_*``) must show its lines: scenes whose
    lines leave the field of view (a tight curve with the car yawed away from
    it) are drawn again from ``rng`` until the frame holds at least
    :data:`MIN_LINE_COVERAGE` of line paint, so no label is a guess.

    Raises:
        ValueError: unknown ``label``.
        RuntimeError: no acceptable scene in ``attempts`` draws (does not happen with the shipped ranges).
    """
    for _ in range(attempts):
        spec = road_scene_spec(label, rng)
        image, _, mask = render_with_mask(spec)
        if label == "no_lane" or line_coverage(spec, mask) >= MIN_LINE_COVERAGE:
            return image, spec
    raise RuntimeError(f"no {label} scene with visible lines in {attempts} draws")


def _render_chunk(jobs: Sequence[tuple[str, int, int, str]]) -> list[bytes]:
    out = []
    for label, seed_base, k, ext in jobs:
        image, _ = render_road_scene(label, np.random.default_rng(road_scene_seed(seed_base, label, k)))
        params = [cv2.IMWRITE_JPEG_QUALITY, 95] if ext == ".jpg" else []
        ok, buf = cv2.imencode(ext, image, params)
        if not ok:  # pragma: no cover - OpenCV always encodes these
            raise RuntimeError(f"cannot encode a {ext} image")
        out.append(buf.tobytes())
    return out


def write_road_scene_folder(
    out_dir: str | Path,
    *,
    per_class: int,
    seed: int = TRAIN_SEED_BASE,
    image_format: str = "png",
    workers: int = 2,
    progress: bool = False,
) -> dict[str, int]:
    """Render ``per_class`` road scenes into ``out_dir/<class>/<class>_<seed>.<format>`` for each class.

    Image ``k`` of class ``c`` is ``render_road_scene(c, default_rng([seed + k, index of c]))``
    (the camera's 320 x 240 frame); ``out_dir/dataset.json`` records the
    parameters. Use ``seed=0`` for training folders and :data:`HELDOUT_SEED_BASE`
    (or above) for held-out folders. Deterministic: the files do not depend on ``workers``.

    Args:
        out_dir: the folder to fill (created).
        per_class: images per class.
        seed: seed base (see above).
        image_format: ``"png"`` (lossless) or ``"jpg"`` (quality 95).
        workers: rendering processes.
        progress: show a progress bar.

    Returns:
        Class name -> number of images written.

    Raises:
        ValueError: ``per_class`` < 1, a training range reaching into the held-out
            seeds, or an unknown format.
    """
    if per_class < 1:
        raise ValueError("per_class must be >= 1")
    if seed < HELDOUT_SEED_BASE < seed + per_class:
        raise ValueError(f"seeds {seed}..{seed + per_class - 1} would reach into the held-out range")
    if image_format not in ("png", "jpg"):
        raise ValueError("image_format must be 'png' or 'jpg'")
    ext = f".{image_format}"
    out = Path(out_dir)
    jobs = [(label, seed, k, ext) for label in ROAD_CLASSES for k in range(per_class)]
    names = [out / label / f"{label}_{seed + k:08d}{ext}" for label, _, k, _ in jobs]
    for label in ROAD_CLASSES:
        (out / label).mkdir(parents=True, exist_ok=True)
    chunks = [jobs[i : i + 64] for i in range(0, len(jobs), 64)]
    procs = workers if len(jobs) > 128 else 1
    i = 0
    for part in map_in_workers(_render_chunk, chunks, workers=procs, progress=progress, desc="render", unit="chunk"):
        for blob in part:
            names[i].write_bytes(blob)
            i += 1
    meta = {
        "generator": "seedcam_tools.classify.data.write_road_scene_folder",
        "classes": list(ROAD_CLASSES),
        "per_class": per_class,
        "seed_base": seed,
        "scene_entropy": "[seed_base + k, class index]",
        "format": image_format,
        "straight_max_abs_curvature_per_m": STRAIGHT_MAX_CURVATURE,
        "curve_min_abs_curvature_per_m": CURVE_MIN_CURVATURE,
        "min_line_coverage": MIN_LINE_COVERAGE,
    }
    (out / "dataset.json").write_text(json.dumps(meta, indent=2) + "\n")
    return dict.fromkeys(ROAD_CLASSES, per_class)

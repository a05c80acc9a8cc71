"""OCR training / evaluation data: plate crops from the synthetic scene renderer.

Sample ``k`` of a dataset: the look of ``random_scene(np.random.default_rng(k))``
(lane, floor, lighting, blur, noise; the blur scaled down, see
:data:`DEFOCUS_SCALE`) with its objects replaced by ONE plate
0.28..0.7 m ahead, fully in view; the same generator then draws the plate's
place, its text and a detector-like jitter of its truth box (+-8 % of the box
size, shifts and scales), and the crop is made by the firmware's own
:func:`~seedcam_firmware.inference.plate.crop_plate` followed by
:func:`~seedcam_firmware.inference.preprocess.crop_resize` -- exactly the pixels
the firmware feeds the OCR model.

Texts: half are ``"ABC-123"`` style (3 letters, ``-``, 3 digits), half random
strings of 3..8 characters from :data:`ALPHABET` with no leading or trailing
``-`` and no ``--``.

Seeds: training ``[0, n)``, validation from ``5_000_000``, held-out evaluation
from :data:`HELDOUT_SEED_BASE` (10_000_000), never used in training.

Rendering dominates the cost of training; :func:`generate_cached` keeps
rendered crops on disk, keyed by the seeds and the code that made them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from seedcam_firmware.inference.plate import crop_plate
from seedcam_firmware.inference.preprocess import InputSpec, crop_resize
from seedcam_firmware.scene import DEFAULT_CAMERA, SceneObject, random_scene, render
from seedcam_firmware.scene.textures import OBJECT_SIZE_M

from ..workers import map_in_workers

__all__ = [
    "ALPHABET",
    "BLANK_INDEX",
    "CACHE_BLOCK",
    "DEFOCUS_SCALE",
    "FORWARD_RANGE_M",
    "HELDOUT_SEED_BASE",
    "JITTER",
    "Look",
    "MAX_TEXT_LEN",
    "MOTION_BLUR_SCALE",
    "NUM_CLASSES",
    "OCR_INPUT",
    "OCR_OUTPUTS",
    "TIME_STEPS",
    "TRAIN_SEED_BASE",
    "VAL_SEED_BASE",
    "OcrData",
    "decode_labels",
    "encode_text",
    "data_key",
    "generate",
    "generate_cached",
    "jitter_box",
    "make_sample",
    "make_world_sample",
    "random_text",
]

log = logging.getLogger(__name__)

ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-"
#: the CTC blank is the LAST class
BLANK_INDEX = len(ALPHABET)
NUM_CLASSES = len(ALPHABET) + 1
#: CTC time steps of the model output (input width / 4)
TIME_STEPS = 32
MAX_TEXT_LEN = 8
OCR_INPUT = InputSpec(width=128, height=32, crop_top=0.0, color_order="RGB", mean=0.0, std=255.0)
#: exported model outputs: per-step class probabilities, blank last
OCR_OUTPUTS: dict[str, tuple[int, ...]] = {"probs": (1, TIME_STEPS, NUM_CLASSES)}
#: distance of the plate ahead of the camera, metres
FORWARD_RANGE_M = (0.28, 0.7)
#: detector-box jitter: centre shifts and size scales up to this fraction of the box size
JITTER = 0.08
#: OCR scenes keep random_scene's blur draws scaled by these factors (defocus sigma <= 0.75 px,
#: motion blur <= 2 px): random_scene's full blur (up to 1.5 px defocus, 5 px motion) smears
#: 4-px characters of a far plate past what anyone can read
DEFOCUS_SCALE = 0.5
MOTION_BLUR_SCALE = 0.4
#: the plate's projected corners stay this many pixels inside the frame
_EDGE_PX = 2.0
TRAIN_SEED_BASE = 0
VAL_SEED_BASE = 5_000_000
HELDOUT_SEED_BASE = 10_000_000

_LETTERS = ALPHABET[10:36]
_DIGITS = ALPHABET[:10]
_INDEX = {c: i for i, c in enumerate(ALPHABET)}


@dataclass
class OcrData:
    """A batch of plate crops.

    Attributes:
        x: N x 32 x 128 x 3 uint8 model pixels (RGB, after :func:`crop_resize`).
        labels: N x :data:`MAX_TEXT_LEN` int32 class indices, padded with -1.
        lengths: N int32 text lengths.
        seeds: N int64 scene seeds.
    """

    x: np.ndarray
    labels: np.ndarray
    lengths: np.ndarray
    seeds: np.ndarray

    @property
    def texts(self) -> list[str]:
        """The plate texts."""
        return [decode_labels(row[:n]) for row, n in zip(self.labels, self.lengths, strict=True)]

    def save(self, path: Path) -> None:
        """Write as an uncompressed .npz."""
        np.savez(path, x=self.x, labels=self.labels, lengths=self.lengths, seeds=self.seeds)

    @classmethod
    def load(cls, path: Path) -> OcrData:
        """Read a file written by :meth:`save`."""
        with np.load(path) as z:
            return cls(z["x"], z["labels"], z["lengths"], z["seeds"])


def encode_text(text: str) -> np.ndarray:
    """Text -> int32 class indices into :data:`ALPHABET`.

    Raises:
        ValueError: a character outside the alphabet.
    """
    try:
        return np.array([_INDEX[c] for c in text], np.int32)
    except KeyError as exc:
        raise ValueError(f"character {exc.args[0]!r} of {text!r} is not in the OCR alphabet") from exc


def decode_labels(labels: np.ndarray) -> str:
    """Class indices -> text; negative (padding) entries are skipped.

    Raises:
        ValueError: an index >= len(ALPHABET) (the blank is not a character).
    """
    out = []
    for v in np.asarray(labels).ravel():
        if v < 0:
            continue
        if v >= len(ALPHABET):
            raise ValueError(f"label {int(v)} is not a character index")
        out.append(ALPHABET[int(v)])
    return "".join(out)


def random_text(rng: np.random.Generator) -> str:
    """A plate text: half ``"ABC-123"`` style, half 3..8 random characters (no edge or double ``-``)."""
    if rng.random() < 0.5:
        letters = "".join(_LETTERS[int(i)] for i in rng.integers(len(_LETTERS), size=3))
        digits = "".join(_DIGITS[int(i)] for i in rng.integers(len(_DIGITS), size=3))
        return f"{letters}-{digits}"
    n = int(rng.integers(3, MAX_TEXT_LEN + 1))
    chars: list[str] = []
    for i in range(n):
        dash_ok = 0 < i < n - 1 and chars[-1] != "-"
        pool = ALPHABET if dash_ok else ALPHABET[:-1]
        chars.append(pool[int(rng.integers(len(pool)))])
    return "".join(chars)


def jitter_box(
    box: tuple[float, float, float, float], rng: np.random.Generator, amount: float = JITTER
) -> tuple[float, float, float, float]:
    """A detector-like version of ``box``: centre shifted and sides scaled by up to ``amount`` of its size."""
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    cx = (x0 + x1) / 2 + float(rng.uniform(-amount, amount)) * w
    cy = (y0 + y1) / 2 + float(rng.uniform(-amount, amount)) * h
    w *= 1.0 + float(rng.uniform(-amount, amount))
    h *= 1.0 + float(rng.uniform(-amount, amount))
    return (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)


def _max_lateral(forward_m: float) -> float:
    """Largest |left_m| that keeps a plate at ``forward_m`` fully in view."""
    ow, oh, oz = OBJECT_SIZE_M["plate"]
    cam = DEFAULT_CAMERA
    _, depth = cam.project(np.array([[forward_m, 0.0, oz + oh / 2], [forward_m, 0.0, oz - oh / 2]]))
    cx = cam.principal_point[0]
    return float((cx - _EDGE_PX) * depth.min() / cam.focal_px - ow / 2)


@dataclass(frozen=True)
class Look:
    """Variations of the data beyond the seeds (the defaults make the training data).

    Attributes:
        full_blur: keep random_scene's blur unscaled (a harder look than the
            training data's, see :data:`DEFOCUS_SCALE`).
        max_forward_m: the plate distance is drawn from
            ``FORWARD_RANGE_M[0] .. max_forward_m`` (the same random draw, so a
            sample's scene and text do not change).
    """

    full_blur: bool = False
    max_forward_m: float = FORWARD_RANGE_M[1]

    def __post_init__(self) -> None:
        if not FORWARD_RANGE_M[0] < self.max_forward_m <= FORWARD_RANGE_M[1]:
            raise ValueError(f"max_forward_m must be within ({FORWARD_RANGE_M[0]}, {FORWARD_RANGE_M[1]}]")

    @property
    def tag(self) -> str:
        """A short file-name tag; empty for the default look."""
        parts = (["blur"] if self.full_blur else []) + (
            [f"to{self.max_forward_m:g}m"] if self.max_forward_m != FORWARD_RANGE_M[1] else []
        )
        return "".join(f"-{p}" for p in parts)


def make_sample(seed: int, look: Look | None = None) -> tuple[np.ndarray, str]:
    """Render sample ``seed``: returns (32 x 128 x 3 uint8 RGB model pixels, plate text).

    Args:
        seed: the sample's seed.
        look: variations (see :class:`Look`); None: the training data's.
    """
    look = look or Look()
    rng = np.random.default_rng(seed)
    spec = random_scene(rng)
    forward = FORWARD_RANGE_M[0] + float(rng.random()) * (look.max_forward_m - FORWARD_RANGE_M[0])
    lateral = float(rng.uniform(-1.0, 1.0)) * _max_lateral(forward)
    text = random_text(rng)
    d, m = (1.0, 1.0) if look.full_blur else (DEFOCUS_SCALE, MOTION_BLUR_SCALE)
    spec = dataclasses.replace(
        spec,
        objects=(SceneObject("plate", forward, lateral, text=text),),
        defocus_sigma_px=spec.defocus_sigma_px * d,
        motion_blur_px=spec.motion_blur_px * m,
    )
    image, truth = render(spec, DEFAULT_CAMERA)
    box = jitter_box(truth.objects[0].box, rng)
    crop = crop_plate(image, box, OCR_INPUT.width, OCR_INPUT.height)
    return crop_resize(crop, OCR_INPUT), text


def make_world_sample(seed: int) -> tuple[np.ndarray, str]:
    """Like :func:`make_sample`, from the randomized world (:mod:`seedcam_tools.world`): any font,
    colours, border, text length and aspect, 0.22..0.75 m ahead, with the world's camera effects."""
    from ..world import render_world_scene

    rng = np.random.default_rng([seed, 0x0C7])
    scene = render_world_scene(seed, plate_focus=True)
    h, w = scene.image.shape[:2]
    plate = scene.objects[0]
    x0, y0, x1, y1 = plate.box
    box = jitter_box((x0 / w, y0 / h, x1 / w, y1 / h), rng)
    crop = crop_plate(scene.image, box, OCR_INPUT.width, OCR_INPUT.height)
    return crop_resize(crop, OCR_INPUT), plate.text


def _is_random(k: int, random_fraction: float) -> bool:
    """Sample ``k`` of a block comes from the randomized world (spread evenly)."""
    return int((k + 1) * random_fraction) > int(k * random_fraction)


def _chunk(job: tuple[list[int], Look, float]) -> list[tuple[np.ndarray, str]]:
    seeds, look, random_fraction = job
    return [make_world_sample(s) if _is_random(s, random_fraction) else make_sample(s, look) for s in seeds]


def generate(
    first_seed: int,
    count: int,
    *,
    workers: int = 2,
    progress: bool = False,
    look: Look | None = None,
    random_fraction: float = 0.0,
) -> OcrData:
    """Render samples with seeds ``first_seed .. first_seed + count - 1``.

    Deterministic: the result does not depend on ``workers``. ``look``: see
    :class:`Look` (the classic world's samples). ``random_fraction`` of the seeds
    (spread evenly) come from the randomized world.

    Raises:
        ValueError: ``count`` < 1.
    """
    if count < 1:
        raise ValueError("count must be >= 1")
    seeds = list(range(first_seed, first_seed + count))
    chunks = [(seeds[i : i + 256], look or Look(), random_fraction) for i in range(0, count, 256)]
    out: list[tuple[np.ndarray, str]] = []
    procs = workers if count >= 512 else 1
    for part in map_in_workers(_chunk, chunks, workers=procs, progress=progress, desc="render plates", unit="chunk"):
        out.extend(part)
    labels = np.full((count, MAX_TEXT_LEN), -1, np.int32)
    lengths = np.zeros(count, np.int32)
    for i, (_, text) in enumerate(out):
        enc = encode_text(text)
        labels[i, : len(enc)] = enc
        lengths[i] = len(enc)
    return OcrData(
        x=np.stack([o[0] for o in out]),
        labels=labels,
        lengths=lengths,
        seeds=np.asarray(seeds, np.int64),
    )


def data_key(first_seed: int, count: int, look: Look | None = None, random_fraction: float = 0.0) -> str:
    """A key that changes whenever the data of these seeds could.

    It hashes the seeds, this module's sample-making functions and constants,
    and the source of the plate crop, preprocessing, the scene renderer package
    and (when used) the randomized world package.
    """
    import importlib
    import inspect

    h = hashlib.sha256(f"{first_seed}:{count}:{look or Look()!r}:{random_fraction!r}".encode())
    if random_fraction > 0:
        from .. import world

        for f in sorted(Path(str(world.__file__)).parent.glob("*.py")):
            h.update(f.read_bytes())
    for fn in (make_sample, make_world_sample, _is_random, random_text, jitter_box, _max_lateral, encode_text):
        h.update(inspect.getsource(fn).encode())
    consts = (ALPHABET, MAX_TEXT_LEN, OCR_INPUT, FORWARD_RANGE_M, JITTER, DEFOCUS_SCALE, MOTION_BLUR_SCALE, _EDGE_PX)
    h.update(repr(consts).encode())
    mods = ("seedcam_firmware.inference.plate", "seedcam_firmware.inference.preprocess", "seedcam_firmware.scene")
    paths = [Path(str(importlib.import_module(m).__file__)) for m in mods]
    for f in [*paths[:2], *sorted(paths[2].parent.glob("*.py"))]:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


#: :func:`generate_cached` stores crops in blocks of this many seeds
CACHE_BLOCK = 5000


def generate_cached(
    cache_dir: Path,
    first_seed: int,
    count: int,
    *,
    workers: int = 2,
    progress: bool = False,
    look: Look | None = None,
    random_fraction: float = 0.0,
) -> OcrData:
    """:func:`generate`, reusing crops rendered before into ``cache_dir``.

    Crops are cached in blocks of :data:`CACHE_BLOCK` seeds (one ``.npz`` each,
    keyed by :func:`data_key`), so a rerun with the same or more seeds and
    unchanged code renders only what is new. Rendering dominates the cost of a
    training run. The result equals ``generate(first_seed, count)``.
    """
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    parts = []
    for start in range(first_seed, first_seed + count, CACHE_BLOCK):
        n = min(CACHE_BLOCK, first_seed + count - start)
        key = data_key(start, n, look, random_fraction)
        tag = (look or Look()).tag + (f"-random{random_fraction:g}" if random_fraction else "")
        path = cache_dir / f"crops-{start}-{n}{tag}.npz"
        part = None
        if path.is_file():
            with np.load(path) as z:
                if "key" in z and str(z["key"]) == key:
                    part = OcrData(z["x"], z["labels"], z["lengths"], z["seeds"])
        if part is None:
            part = generate(start, n, workers=workers, progress=progress, look=look, random_fraction=random_fraction)
            tmp = path.with_name(path.stem + ".tmp.npz")
            np.savez(tmp, x=part.x, labels=part.labels, lengths=part.lengths, seeds=part.seeds, key=np.array(key))
            tmp.replace(path)
        else:
            log.info("reusing rendered crops from %s", path)
        parts.append(part)
    return OcrData(
        x=np.concatenate([p.x for p in parts]),
        labels=np.concatenate([p.labels for p in parts]),
        lengths=np.concatenate([p.lengths for p in parts]),
        seeds=np.concatenate([p.seeds for p in parts]),
    )

"""Assets of the evaluation world: its own font families, backdrop images and noise.

Only the Debian packages listed in ``scripts/evalworld-assets.sh`` are used
(see README.md for their licences); everything else is generated here.
"""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path

import cv2
import numpy as np
from PIL import ImageFont

__all__ = [
    "FONT_STYLES",
    "AssetsMissingError",
    "assets_available",
    "backdrop",
    "backdrop_names",
    "fbm",
    "font",
    "font_path",
    "pick_font",
    "sample_points",
]

logger = logging.getLogger(__name__)

_FONT_ROOTS = (Path("/usr/share/fonts"), Path("/usr/share/texmf/fonts/opentype/public/tex-gyre"))
_BACKDROP_DIR = Path(os.environ.get("SEEDCAM_OTHERWORLD_BACKDROPS", "/usr/share/backgrounds/gnome"))

FONT_STYLES: dict[str, tuple[str, ...]] = {
    "sans_bold": (
        "texgyreheros-bold.otf",
        "Carlito-Bold.ttf",
        "Go-Bold.ttf",
        "B612-Bold.otf",
        "texgyreadventor-bold.otf",
        "Go-Medium.ttf",
    ),
    "sans": (
        "texgyreheros-regular.otf",
        "Carlito-Regular.ttf",
        "Go-Regular.ttf",
        "B612-Regular.otf",
        "texgyreadventor-regular.otf",
    ),
    "condensed": ("texgyreheroscn-bold.otf", "texgyreheroscn-regular.otf", "texgyreheroscn-bolditalic.otf"),
    "serif": (
        "texgyretermes-bold.otf",
        "texgyretermes-regular.otf",
        "Caladea-Bold.ttf",
        "Caladea-Regular.ttf",
        "texgyrepagella-bold.otf",
        "EBGaramond12-Regular.otf",
        "texgyrebonum-bold.otf",
        "texgyreschola-bold.otf",
    ),
    "mono": (
        "Go-Mono.ttf",
        "Go-Mono-Bold.ttf",
        "NotoSansMono-Bold.ttf",
        "NotoMono-Regular.ttf",
        "B612Mono-Bold.otf",
        "texgyrecursor-bold.otf",
    ),
    "fancy": (
        "texgyrechorus-mediumitalic.otf",
        "Carlito-BoldItalic.ttf",
        "Caladea-Italic.ttf",
        "EBGaramond12-Italic.otf",
        "Go-Smallcaps.ttf",
    ),
}
"""Font file names per style; all come from the evaluation world's own packages."""

_BACKDROPS = (
    "wood-l.webp",
    "wood-d.webp",
    "grid-l.webp",
    "grid-d.webp",
    "pixels-l.webp",
    "pixels-d.webp",
    "truchet-l.webp",
    "truchet-d.webp",
    "licorice-l.webp",
    "adwaita-l.webp",
    "adwaita-d.webp",
    "symbolic-l.webp",
    "symbolic-d.webp",
)


class AssetsMissingError(RuntimeError):
    """A font or backdrop of the evaluation world is not installed (run scripts/evalworld-assets.sh)."""


@functools.lru_cache(maxsize=1)
def _font_index() -> dict[str, str]:
    wanted = {name for names in FONT_STYLES.values() for name in names}
    found: dict[str, str] = {}
    for root in _FONT_ROOTS:
        if not root.is_dir():
            continue
        for dirpath, _dirs, files in os.walk(root):
            for name in files:
                if name in wanted and name not in found:
                    found[name] = os.path.join(dirpath, name)
    return found


def font_path(name: str) -> str:
    """Absolute path of one of the :data:`FONT_STYLES` font files.

    Args:
        name: a font file name from :data:`FONT_STYLES`.

    Returns:
        The installed path.

    Raises:
        AssetsMissingError: the font is not installed.
    """
    path = _font_index().get(name)
    if path is None:
        raise AssetsMissingError(f"font {name} is not installed; run scripts/evalworld-assets.sh")
    return path


@functools.lru_cache(maxsize=512)
def font(name: str, size: int) -> ImageFont.FreeTypeFont:
    """A cached Pillow font of the given file name and pixel size."""
    return ImageFont.truetype(font_path(name), max(4, int(size)))


def pick_font(rng: np.random.Generator, *styles: str) -> str:
    """Pick a font file name from the union of the given styles."""
    names = [n for s in styles for n in FONT_STYLES[s]]
    return names[int(rng.integers(len(names)))]


def backdrop_names() -> tuple[str, ...]:
    """File names of the backdrop images used for floors, walls and posters."""
    return _BACKDROPS


@functools.lru_cache(maxsize=len(_BACKDROPS))
def backdrop(name: str, size: int = 512) -> np.ndarray:
    """A backdrop image, decoded once and shrunk to ``size`` x ``size`` BGR uint8 (read-only).

    Args:
        name: a name from :func:`backdrop_names`.
        size: edge length of the returned square.

    Raises:
        AssetsMissingError: the image is not installed.
    """
    path = _BACKDROP_DIR / name
    img = cv2.imread(str(path), cv2.IMREAD_REDUCED_COLOR_4) if path.is_file() else None
    if img is None:
        raise AssetsMissingError(f"backdrop {path} is missing; run scripts/evalworld-assets.sh")
    img = cv2.resize(img, (size, size), interpolation=cv2.INTER_AREA)
    img.setflags(write=False)
    logger.debug("loaded backdrop %s", name)
    return img


def assets_available() -> bool:
    """Whether every font and backdrop of the world is installed."""
    try:
        for names in FONT_STYLES.values():
            for name in names:
                font_path(name)
        return all((_BACKDROP_DIR / n).is_file() for n in _BACKDROPS)
    except AssetsMissingError:
        return False


def fbm(
    rng: np.random.Generator, shape: tuple[int, int], base_cells: int = 4, octaves: int = 4, persistence: float = 0.5
) -> np.ndarray:
    """Fractal value noise in [0, 1] built from upsampled random grids.

    Args:
        rng: random generator.
        shape: (rows, cols) of the result.
        base_cells: cells across the coarsest octave.
        octaves: number of octaves.
        persistence: amplitude ratio between octaves.

    Returns:
        float32 array of ``shape`` normalised to [0, 1].
    """
    h, w = shape
    out = np.zeros(shape, np.float32)
    amp, total = 1.0, 0.0
    cells = base_cells
    for _ in range(octaves):
        grid = rng.random((cells + 1, cells + 1)).astype(np.float32)
        out += amp * cv2.resize(grid, (w, h), interpolation=cv2.INTER_CUBIC)
        total += amp
        amp *= persistence
        cells *= 2
    out /= total
    lo, hi = float(out.min()), float(out.max())
    return (out - lo) / max(hi - lo, 1e-6)


def sample_points(img: np.ndarray, u: np.ndarray, v: np.ndarray, border: int = cv2.BORDER_REFLECT) -> np.ndarray:
    """Bilinear samples of ``img`` at N points (``cv2.remap`` on a folded 2D map).

    Args:
        img: H x W or H x W x C float32 image.
        u, v: N column and row coordinates.
        border: OpenCV border mode.

    Returns:
        N (or N x C) float32 samples.
    """
    n = u.shape[0]
    cols = 1024
    rows = max(1, -(-n // cols))
    mu = np.zeros(rows * cols, np.float32)
    mv = np.zeros(rows * cols, np.float32)
    mu[:n] = u
    mv[:n] = v
    out = cv2.remap(img, mu.reshape(rows, cols), mv.reshape(rows, cols), cv2.INTER_LINEAR, borderMode=border)
    return out.reshape(rows * cols, *img.shape[2:])[:n]

"""Real assets of the randomized training world: font families and photographs.

Fonts come from Debian packages installed by ``scripts/world-assets.sh``
(DejaVu, Liberation, GNU FreeFont, URW base35, Roboto, Open Sans, Hack,
Inconsolata, Lato, Linux Libertine: serif, sans, condensed and mono families;
all under free licences: Bitstream Vera / SIL OFL / GPL with font exception /
AGPL with font exception / Apache 2.0). Photographs and textures come from the
data folder of the scikit-image wheel (PyPI; public domain or CC0/CC-BY as
listed in its ``README.txt``).

The independent evaluation world (:mod:`seedcam_tools.otherworld`) uses other
packages; nothing here may be used there, and the reverse.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
from pathlib import Path

import cv2
import numpy as np

from seedcam.errors import SensorError

__all__ = ["FONT_DIRS", "WorldAssetsMissing", "font_paths", "photos", "textures"]

log = logging.getLogger(__name__)

#: font folders of the training world's Debian packages
FONT_DIRS: tuple[str, ...] = (
    "/usr/share/fonts/truetype/dejavu",
    "/usr/share/fonts/truetype/liberation2",
    "/usr/share/fonts/truetype/freefont",
    "/usr/share/fonts/opentype/urw-base35",
    "/usr/share/fonts/truetype/roboto",
    "/usr/share/fonts/truetype/open-sans",
    "/usr/share/fonts/truetype/hack",
    "/usr/share/fonts/truetype/inconsolata",
    "/usr/share/fonts/truetype/lato",
    "/usr/share/fonts/opentype/linux-libertine",
)
#: fonts without Latin letters or too thin to read at sign sizes
_SKIP_FONTS = ("Symbol", "D050000L", "Z003", "MathTeX", "Hairline", "Thin", "ExtraLight", "Display")

#: scikit-image data files used as textures (floors, backgrounds) and as photographs (background clutter)
_TEXTURE_FILES = ("brick.png", "grass.png", "gravel.png")
_PHOTO_FILES = (
    "astronaut.png",
    "chelsea.png",
    "coffee.png",
    "rocket.jpg",
    "motorcycle_left.png",
    "hubble_deep_field.jpg",
    "camera.png",
    "page.png",
    "text.png",
    "coins.png",
    "color.png",
    "logo.png",
    "retina.jpg",
    "ihc.png",
    "clock_motion.png",
    "moon.png",
)


class WorldAssetsMissing(SensorError, FileNotFoundError):
    """The training world's fonts or images are not installed (run scripts/world-assets.sh)."""


@functools.lru_cache(maxsize=1)
def font_paths() -> tuple[str, ...]:
    """Every usable font file of :data:`FONT_DIRS`, sorted (stable across runs).

    Raises:
        WorldAssetsMissing: fewer than 20 fonts are installed.
    """
    found: list[str] = []
    for folder in FONT_DIRS:
        for path in sorted(Path(folder).glob("**/*")):
            if path.suffix.lower() in (".ttf", ".otf") and not any(s in path.name for s in _SKIP_FONTS):
                found.append(str(path))
    if len(found) < 20:
        raise WorldAssetsMissing(f"only {len(found)} training fonts found in {FONT_DIRS}: run scripts/world-assets.sh")
    return tuple(sorted(found))


def _skimage_data() -> Path:
    spec = importlib.util.find_spec("skimage")
    if spec is None or spec.origin is None:
        raise WorldAssetsMissing("scikit-image is not installed (pip install -e tools)")
    return Path(spec.origin).parent / "data"


def _load(names: tuple[str, ...]) -> tuple[np.ndarray, ...]:
    folder = _skimage_data()
    images = []
    for name in names:
        img = cv2.imread(str(folder / name), cv2.IMREAD_COLOR)
        if img is None:
            log.warning("training world: %s missing in %s", name, folder)
            continue
        images.append(img)
    if not images:
        raise WorldAssetsMissing(f"no images in {folder}")
    return tuple(images)


@functools.lru_cache(maxsize=1)
def textures() -> tuple[np.ndarray, ...]:
    """Texture photographs (BGR uint8) for floors and walls."""
    return _load(_TEXTURE_FILES)


@functools.lru_cache(maxsize=1)
def photos() -> tuple[np.ndarray, ...]:
    """Photographs (BGR uint8) for backgrounds and clutter."""
    return _load(_PHOTO_FILES)

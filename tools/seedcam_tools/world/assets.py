"""Real assets of the randomized training world: font families and photographs.

Fonts come from the Debian packages installed by ``scripts/world-assets.sh``
(which names them and their licences): about a hundred families of road-sign and
plate lettering, condensed, sans, serif, slab and mono faces, each file kept only
when it draws every character the world writes (read with fontTools). Photographs and textures come from the
data folder of the scikit-image wheel (PyPI; public domain or CC0/CC-BY as
listed in its ``README.txt``).

The independent evaluation world (:mod:`seedcam_tools.otherworld`) uses other
packages; nothing here may be used there, and the reverse.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
from pathlib import Path

import cv2
import numpy as np
from fontTools.ttLib import TTFont, TTLibError
from PIL import ImageFont

from seedcam.errors import SensorError

__all__ = [
    "FONT_DIRS",
    "MIN_FONT_FAMILIES",
    "REQUIRED_CHARACTERS",
    "WorldAssetsMissing",
    "font_families",
    "font_paths",
    "photos",
    "textures",
    "usable_fonts",
    "world_assets_id",
]

log = logging.getLogger(__name__)

#: font folders of the training world's Debian packages (scripts/world-assets.sh)
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
    # road-sign and plate lettering
    "/usr/share/fonts/truetype/roadgeek",
    "/usr/share/fonts/truetype/opendin",
    "/usr/share/fonts/truetype/tiresias",
    "/usr/share/fonts/truetype/beteckna",
    "/usr/share/fonts/truetype/routed-gothic",
    "/usr/share/fonts/opentype/national-park",
    "/usr/share/fonts/truetype/ocr-a",
    "/usr/share/fonts/opentype/ocr-b",
    # condensed
    "/usr/share/fonts/opentype/yanone-kaffeesatz",
    "/usr/share/fonts/opentype/bebas-neue",
    "/usr/share/fonts/opentype/league-spartan",
    "/usr/share/fonts/truetype/paratype",
    # sans
    "/usr/share/fonts/opentype/cantarell",
    "/usr/share/fonts/opentype/cabin",
    "/usr/share/fonts/truetype/karla",
    "/usr/share/fonts/truetype/manrope",
    "/usr/share/fonts/truetype/clear-sans",
    "/usr/share/fonts/truetype/tuffy",
    "/usr/share/fonts/opentype/play",
    "/usr/share/fonts/opentype/jura",
    "/usr/share/fonts/opentype/dosis",
    "/usr/share/fonts/opentype/sora",
    "/usr/share/fonts/truetype/oxygen",
    "/usr/share/fonts/truetype/comfortaa",
    "/usr/share/fonts/truetype/quicksand",
    # serif and slab
    "/usr/share/fonts/truetype/vollkorn",
    "/usr/share/fonts/truetype/cardo",
    "/usr/share/fonts/opentype/roboto/slab",
    "/usr/share/fonts/opentype/courier-prime",
    "/usr/share/fonts/truetype/fonts-oldstandard",
    "/usr/share/fonts/opentype/quattrocento",
    "/usr/share/fonts/truetype/charis",
    "/usr/share/fonts/opentype/sortsmill",
    "/usr/share/fonts/opentype/fonts-prociono",
    # mono
    "/usr/share/fonts/opentype/league-mono",
    "/usr/share/fonts/truetype/jetbrains-mono",
    "/usr/share/fonts/truetype/firacode",
    "/usr/share/fonts/truetype/mononoki",
    "/usr/share/fonts/truetype/anonymous-pro",
    "/usr/share/fonts/truetype/monofur",
    "/usr/share/fonts/truetype/3270",
    "/usr/share/fonts/truetype/agave",
    "/usr/share/fonts/truetype/hermit",
)
#: every training font must draw these (plate text, sign words, posters); fonts that lack one are left out
REQUIRED_CHARACTERS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz- "
#: fewer font families than this means scripts/world-assets.sh has not been run (or Debian moved a package)
MIN_FONT_FAMILIES = 80
#: fonts without Latin letters (symbols, Linux Biolinum's keycaps) or too thin to read at sign sizes
_SKIP_FONTS = ("Symbol", "Biolinum_K", "D050000L", "Z003", "MathTeX", "Hairline", "Thin", "ExtraLight", "Display")

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


def _family_of(path: Path) -> str | None:
    """The font's family name, or None when it is variable or cannot draw every one of :data:`REQUIRED_CHARACTERS`.

    A character must be in the font's character map (else a missing-glyph box is drawn) and its
    glyph must leave ink (some fonts map digits or letters to empty glyphs).
    """
    try:
        font = TTFont(path, lazy=True)
        cmap = font.getBestCmap() or {}
        family = font["name"].getDebugName(16) or font["name"].getDebugName(1)
        variable = "fvar" in font
        drawn = ImageFont.truetype(str(path), 24)
    except (OSError, KeyError, TTLibError, AssertionError) as exc:
        log.warning("training world: cannot read font %s: %s", path, exc)
        return None
    if variable or family is None or any(ord(ch) not in cmap for ch in REQUIRED_CHARACTERS):
        return None
    if any(drawn.getmask(ch).getbbox() is None for ch in REQUIRED_CHARACTERS.replace(" ", "")):
        return None
    return family


def usable_fonts(folders: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """The font files under ``folders`` that can draw :data:`REQUIRED_CHARACTERS`, by family name (sorted)."""
    families: dict[str, list[str]] = {}
    for folder in folders:
        for path in sorted(Path(folder).glob("**/*")):
            if path.suffix.lower() not in (".ttf", ".otf") or any(s in path.name for s in _SKIP_FONTS):
                continue
            family = _family_of(path)
            if family is not None:
                families.setdefault(family, []).append(str(path))
    return {family: tuple(sorted(files)) for family, files in sorted(families.items())}


@functools.lru_cache(maxsize=1)
def font_families() -> tuple[tuple[str, ...], ...]:
    """The training world's usable font files of :data:`FONT_DIRS`, grouped by family (stable across runs).

    The world draws a family first and then one of its styles, so that a family shipped in forty
    widths and weights is drawn as often as one shipped in a single file.

    Raises:
        WorldAssetsMissing: fewer than :data:`MIN_FONT_FAMILIES` families are installed.
    """
    families = usable_fonts(FONT_DIRS)
    if len(families) < MIN_FONT_FAMILIES:
        raise WorldAssetsMissing(
            f"only {len(families)} training font families in {len(FONT_DIRS)} folders: run scripts/world-assets.sh"
        )
    return tuple(families.values())


def font_paths() -> tuple[str, ...]:
    """Every usable font file of :data:`FONT_DIRS`, sorted."""
    return tuple(sorted(path for family in font_families() for path in family))


def world_assets_id() -> str:
    """What the training world draws with, as short text: font files and families, and a digest.

    The digest covers the font files' names (not their folders) and the photograph and texture
    names, so two machines with the same packages agree, and figures of "our randomized world"
    measured on another draw of the world (another font pool) can be told apart.

    Raises:
        WorldAssetsMissing: see :func:`font_families`.
    """
    families = font_families()
    names = sorted(Path(path).name for family in families for path in family)
    digest = hashlib.sha256("\n".join([*names, *_TEXTURE_FILES, *_PHOTO_FILES]).encode()).hexdigest()[:12]
    images = len(_TEXTURE_FILES) + len(_PHOTO_FILES)
    return f"{len(names)} font files in {len(families)} families, {images} images, {digest}"


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

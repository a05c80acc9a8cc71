"""Build hook of the firmware wheel: the factory defaults go into the package.

Everything else is declared in ``pyproject.toml``. A built wheel holds, under
``seedcam_firmware/_factory/`` (found at run time by ``seedcam_firmware.factory``):

* ``config/*.toml``: the shipped configs (``firmware/config/``),
* ``models/<bundle>/``: the built-in model bundles of the repository's ``models/``
  (:data:`BUNDLES`) — each manifest, the int8 and float32 models and golden files
  it names, and the bundle's README and metrics.

They are kept once in git and copied at build time: from the checkout around this
folder (``pip wheel firmware/``, ``python -m build firmware/``), or, when this
folder is an unpacked sdist, from the copies the sdist carries (the ``sdist``
command below puts them there). An editable install copies nothing: in a
checkout the firmware finds ``REPO/models`` itself.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
#: The model bundles of ``REPO/models`` the firmware ships with (``models.<task>`` defaults name them).
BUNDLES = ("lane", "detect", "ocr", "road_scene")
#: Where the factory defaults go, relative to the project folder (and to a wheel's root).
FACTORY = Path("seedcam_firmware") / "_factory"
_EXTRAS = ("manifest.json", "README.md", "metrics.json")


def _bundle_files(folder: Path) -> list[Path]:
    """The manifest of a bundle folder, every file it names, and its README and metrics."""
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    names = set(_EXTRAS)
    for variant in manifest.get("files", {}).values():
        names.update(variant.get(key) for key in ("file", "golden_output") if variant.get(key))
    if manifest.get("golden_input"):
        names.add(manifest["golden_input"])
    missing = sorted(n for n in names if n not in _EXTRAS[1:] and not (folder / n).is_file())
    if missing:
        raise SystemExit(f"factory model bundle {folder}: missing {', '.join(missing)}")
    return [folder / n for n in sorted(names) if (folder / n).is_file()]


def factory_files() -> dict[str, Path]:
    """Path below ``_factory/`` -> the source file to copy there.

    Raises:
        SystemExit: neither a checkout's ``models/`` nor an sdist's copies are there.
    """
    files: dict[str, Path] = {}
    if (REPO / "models").is_dir() and (HERE / "config").is_dir():  # a checkout
        for name in BUNDLES:
            for path in _bundle_files(REPO / "models" / name):
                files[f"models/{name}/{path.name}"] = path
        for path in sorted((HERE / "config").glob("*.toml")):
            files[f"config/{path.name}"] = path
    elif (HERE / FACTORY).is_dir():  # an unpacked sdist
        root = HERE / FACTORY
        files = {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*")) if p.is_file()}
    if not any(name.endswith("/manifest.json") for name in files):
        raise SystemExit(f"no factory model bundles: {REPO / 'models'} is not there and {HERE / FACTORY} is empty")
    return files


def _copy_factory(target: Path) -> list[str]:
    outputs = []
    for name, source in factory_files().items():
        dest = target / name
        if dest.resolve() == source.resolve():
            continue  # building in the unpacked sdist's own tree
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest)
        outputs.append(str(dest))
    return outputs


class BuildWithFactory(build_py):
    """``build_py`` that also copies the factory defaults into the built package."""

    def run(self) -> None:
        super().run()
        if not getattr(self, "editable_mode", False):
            target = Path(self.build_lib) / FACTORY
            shutil.rmtree(target, ignore_errors=True)  # no stale model from an earlier build
            _copy_factory(target)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = list(super().get_outputs(include_bytecode))
        if not getattr(self, "editable_mode", False):
            outputs += [str(Path(self.build_lib) / FACTORY / name) for name in factory_files()]
        return outputs


class SdistWithFactory(sdist):
    """``sdist`` that carries the factory defaults (they live outside this folder in the checkout)."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        _copy_factory(Path(base_dir) / FACTORY)


setup(cmdclass={"build_py": BuildWithFactory, "sdist": SdistWithFactory})

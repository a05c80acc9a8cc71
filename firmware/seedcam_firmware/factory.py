"""Where the factory defaults are: the model bundles and the config files the firmware ships with.

In a checkout (``firmware/seedcam_firmware`` two levels below a folder with
``models/``) they are the repository's own files, as they always were: the
models in ``REPO/models``, the configs in ``REPO/firmware/config``. An installed
wheel carries copies of them in the package, ``seedcam_firmware/_factory/``
(``models/<bundle>/`` and ``config/*.toml``; ``firmware/setup.py`` puts them there
at build time), and then those are the defaults. They are read only: the
firmware never writes into them. Writable state lives elsewhere — on a board
``updates.dir`` (the A/B slots, see :data:`BOARD_STATE_DIR`) and the config file
given with ``--config`` (docs/board.md).

``python -m seedcam_firmware.factory`` prints where the defaults are;
``python -m seedcam_firmware.factory board.toml`` prints that config file, to
start a board's own configuration from.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = [
    "BOARD_STATE_DIR",
    "FACTORY_DIR",
    "checkout_root",
    "config_dir",
    "factory_config",
    "main",
    "models_dir",
]

_PACKAGE_DIR = Path(__file__).resolve().parent
#: The factory defaults inside an installed package (absent in a checkout).
FACTORY_DIR = _PACKAGE_DIR / "_factory"
#: Where a board keeps its writable state (docs/board.md, ``firmware/config/board.toml``).
BOARD_STATE_DIR = "/var/lib/seedcam"


def checkout_root() -> Path | None:
    """The repository this package runs from, or None when it is installed (or unpacked into a slot)."""
    root = _PACKAGE_DIR.parents[1]
    firmware = root / "firmware"
    if _PACKAGE_DIR.parent == firmware and (firmware / "pyproject.toml").is_file() and (root / "models").is_dir():
        return root
    return None


def models_dir() -> Path:
    """The default ``models.dir``: the repository's ``models/``, else the package's factory models.

    A firmware slot unpacked from a wheel without factory defaults (``seedcam-tools``'
    development wheels) uses those of the installed package, found on ``sys.path``.
    """
    root = checkout_root()
    if root is not None:
        return root / "models"
    own = FACTORY_DIR / "models"
    if own.is_dir():
        return own
    for entry in filter(None, sys.path):  # not "" (the current folder)
        candidate = Path(entry) / "seedcam_firmware" / "_factory" / "models"
        if candidate.is_dir():
            return candidate.resolve()
    return own  # not there either: each task's "manifest not found" names this folder


def config_dir() -> Path:
    """The folder of the shipped config files (``default.toml``, ``board.toml``)."""
    root = checkout_root()
    return root / "firmware" / "config" if root is not None else FACTORY_DIR / "config"


def factory_config(name: str = "default.toml") -> Path:
    """The path of a shipped config file.

    Raises:
        FileNotFoundError: no such file among the factory defaults.
    """
    path = config_dir() / name
    if Path(name).name != name or not path.is_file():
        known = ", ".join(sorted(p.name for p in config_dir().glob("*.toml"))) or "none"
        raise FileNotFoundError(f"no factory config {name!r} in {config_dir()} (there are: {known})")
    return path


def main(argv: list[str] | None = None) -> int:
    """``python -m seedcam_firmware.factory [NAME]``: print the locations, or the config file NAME."""
    parser = argparse.ArgumentParser(prog="python -m seedcam_firmware.factory", description=__doc__.splitlines()[0])
    parser.add_argument("name", nargs="?", help="a shipped config file to print, e.g. board.toml")
    args = parser.parse_args(argv)
    if args.name is None:
        root = checkout_root()
        print(f"source  {'checkout ' + str(root) if root is not None else 'installed package'}")
        print(f"models  {models_dir()}")
        print(f"configs {config_dir()}")
        return 0
    try:
        sys.stdout.write(factory_config(args.name).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        print(f"seedcam_firmware.factory: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

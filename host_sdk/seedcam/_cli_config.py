"""The ``seedcam`` CLI's own config file: the defaults a user sets once, like esptool's ``esptool.cfg``.

The file is ``$SEEDCAM_CONFIG`` when set, else ``$XDG_CONFIG_HOME/seedcam/seedcam.toml``
(``~/.config/seedcam/seedcam.toml``); a missing file is no config. TOML (read with the
standard library's ``tomllib``)::

    port = "/dev/ttyUSB0"   # default port or URL
    baud = 115200           # default baud rate of a serial port
    catalog = "https://models.example.com/seedcam/"   # default model catalog (docs/catalog.md)
    catalog_keys = ["<64 hex digits>", "~/keys/release.pub"]   # keys a catalog must be signed by

What the command line says wins, then the environment (``$SEEDCAM_PORT``,
``$SEEDCAM_BAUD``), then this file, then the built-in defaults.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from seedcam._cli_common import EXIT_USER, CliError

__all__ = ["CONFIG_ENV", "ToolConfig", "load_tool_config", "tool_config_path"]

#: environment variable naming the config file (instead of the XDG location)
CONFIG_ENV = "SEEDCAM_CONFIG"
_KEYS = ("port", "baud", "catalog", "catalog_keys")


@dataclass(frozen=True)
class ToolConfig:
    """The defaults of the config file (None: not set there)."""

    path: Path | None = None
    port: str | None = None
    baud: int | None = None
    catalog: str | None = None
    catalog_keys: tuple[str, ...] = ()


def tool_config_path(env: Mapping[str, str] = os.environ) -> Path:
    """Where the config file is looked for (it need not exist)."""
    if env.get(CONFIG_ENV, "").strip():
        return Path(env[CONFIG_ENV].strip()).expanduser()
    base = env.get("XDG_CONFIG_HOME", "").strip() or str(Path(env.get("HOME", "~")) / ".config")
    return Path(base).expanduser() / "seedcam" / "seedcam.toml"


def load_tool_config(env: Mapping[str, str] = os.environ) -> ToolConfig:
    """The config file's defaults; an absent file gives none.

    Raises:
        CliError: the file is not TOML, names an unknown key, or a value has the wrong type (exit 1).
    """
    path = tool_config_path(env)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ToolConfig()
    except OSError as exc:
        raise CliError(f"cannot read the config file {path}: {exc.strerror or exc}", EXIT_USER) from exc
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CliError(f"config file {path} is not TOML: {exc}", EXIT_USER) from exc
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise CliError(f"config file {path}: unknown key {', '.join(unknown)} (known: {', '.join(_KEYS)})", EXIT_USER)
    port, baud = table.get("port"), table.get("baud")
    if port is not None and (not isinstance(port, str) or not port.strip()):
        raise CliError(f"config file {path}: port must be a non-empty string, got {port!r}", EXIT_USER)
    if baud is not None and (isinstance(baud, bool) or not isinstance(baud, int) or baud <= 0):
        raise CliError(f"config file {path}: baud must be a whole number above 0, got {baud!r}", EXIT_USER)
    catalog, keys = table.get("catalog"), table.get("catalog_keys", [])
    if catalog is not None and (not isinstance(catalog, str) or not catalog.strip()):
        raise CliError(f"config file {path}: catalog must be a non-empty string, got {catalog!r}", EXIT_USER)
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise CliError(f"config file {path}: catalog_keys must be a list of strings, got {keys!r}", EXIT_USER)
    return ToolConfig(path, port.strip() if port else None, baud, catalog.strip() if catalog else None, tuple(keys))

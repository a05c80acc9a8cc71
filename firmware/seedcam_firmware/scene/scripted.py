"""Scripted scenes: a SceneSpec written as a TOML file (for tests, demos and bench setups).

Example::

    offset_m = 0.05
    heading_rad = -0.1
    curvature_per_m = 0.3

    [[objects]]
    kind = "stop"
    forward_m = 1.2
    left_m = 0.35
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any

from seedcam_firmware.errors import ConfigError
from seedcam_firmware.scene.types import SceneObject, SceneSpec

__all__ = ["load_scene_file", "scene_from_dict"]

_SPEC_FIELDS = {f.name: f for f in dataclasses.fields(SceneSpec)}
_OBJECT_FIELDS = {f.name for f in dataclasses.fields(SceneObject)}


def scene_from_dict(data: dict[str, Any], source: str = "<dict>") -> SceneSpec:
    """Build a SceneSpec; lists become tuples.

    Raises:
        ConfigError: an unknown key or a bad value (naming the key and ``source``).
    """
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key == "objects":
            values["objects"] = tuple(_object(item, i, source) for i, item in enumerate(value))
        elif key in _SPEC_FIELDS:
            values[key] = _tupled(value)
        else:
            raise ConfigError(f"{source}: unknown scene key {key!r}")
    try:
        return SceneSpec(**values)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{source}: bad scene: {exc}") from exc


def load_scene_file(path: str | Path) -> SceneSpec:
    """Read a scene TOML file.

    Raises:
        ConfigError: the file is missing, not TOML, or not a valid scene.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"scene file {path} does not exist") from exc
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read scene: {exc}") from exc
    return scene_from_dict(data, str(path))


def _object(item: Any, index: int, source: str) -> SceneObject:
    if not isinstance(item, dict):
        raise ConfigError(f"{source}: objects[{index}] must be a table")
    unknown = set(item) - _OBJECT_FIELDS
    if unknown:
        raise ConfigError(f"{source}: unknown key objects[{index}].{sorted(unknown)[0]}")
    try:
        return SceneObject(**item)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{source}: objects[{index}]: {exc}") from exc


def _tupled(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tupled(v) for v in value)
    return value

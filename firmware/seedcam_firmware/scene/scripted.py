"""Scripted scenes: a SceneSpec written as a TOML file (for tests, demos and bench setups).

Example::

    offset_m = 0.05
    heading_rad = -0.1
    curvature_per_m = 0.3
    curvature_rate_per_m2 = -1.0   # optional: the curvature changes ahead (an S-bend)

    [[objects]]
    kind = "stop"
    forward_m = 1.2
    left_m = 0.35

A scene that changes over time lists its changes, each from a frame on (the frames
of the camera, counted from 0), with the keys that differ from the scene before it::

    [[changes]]
    at_frame = 90            # from the 91st frame on: the lane lines are gone
    left_style = "none"
    right_style = "none"

Such a file is read with :func:`load_scene_script`.
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seedcam_firmware.errors import ConfigError
from seedcam_firmware.scene.types import SceneObject, SceneSpec

__all__ = ["SceneScript", "load_scene_file", "load_scene_script", "scene_from_dict"]

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


@dataclass(frozen=True)
class SceneScript:
    """A scene and its changes over time: ``steps`` are (first frame, scene), by first frame."""

    steps: tuple[tuple[int, SceneSpec], ...]

    def at(self, frame_index: int) -> SceneSpec:
        """The scene of frame ``frame_index`` (0 = the first frame)."""
        scene = self.steps[0][1]
        for first, step in self.steps:
            if first > frame_index:
                break
            scene = step
        return scene


def load_scene_script(path: str | Path) -> SceneScript:
    """Read a scene TOML file that may list ``[[changes]]`` (a still scene is a script of one step).

    Raises:
        ConfigError: the file is missing, not TOML, or not a valid scene; a change without an
            ``at_frame`` above the one before it, or with a bad key or value.
    """
    data = _read(Path(path))
    changes = data.pop("changes", [])
    if not isinstance(changes, list) or not all(isinstance(c, dict) for c in changes):
        raise ConfigError(f"{path}: changes must be an array of tables ([[changes]])")
    base = scene_from_dict(data, str(path))
    steps = [(0, base)]
    values = dict(data)
    for index, change in enumerate(changes):
        change = dict(change)
        at = change.pop("at_frame", None)
        if not isinstance(at, int) or isinstance(at, bool) or at <= steps[-1][0]:
            raise ConfigError(f"{path}: changes[{index}].at_frame must be a frame number above the change before")
        values.update(change)
        steps.append((at, scene_from_dict(values, f"{path} changes[{index}]")))
    return SceneScript(tuple(steps))


def load_scene_file(path: str | Path) -> SceneSpec:
    """Read a scene TOML file (one still scene; a file with changes: :func:`load_scene_script`).

    Raises:
        ConfigError: the file is missing, not TOML, or not a valid scene.
    """
    path = Path(path)
    return scene_from_dict(_read(path), str(path))


def _read(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"scene file {path} does not exist") from exc
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read scene: {exc}") from exc
    return data


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

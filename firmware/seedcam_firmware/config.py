"""The firmware configuration: TOML in, frozen dataclasses out.

Precedence, highest first: ``overrides`` (the command line), environment
variables ``SEEDCAM_FW_<SECTION>_<KEY>`` (e.g. ``SEEDCAM_FW_CAMERA_FPS=15``),
the TOML file, the defaults. An empty file is a valid configuration.

Every section is a frozen dataclass that checks itself on construction, so a
``CameraConfig(width="x")`` fails as loudly as a bad file does. Error messages
name the dotted key and where the value came from::

    config.toml: unknown config key 'camera.fsp' (did you mean 'camera.fps'?)
    config.toml: camera.fps must be a number, got str 'fast'

Keys whose change the daemon applies at run time are marked ``live``; for the
others :func:`requires_restart` returns True.

This module reads, changes, checks and writes a configuration; the sections
themselves are declared in :mod:`seedcam_firmware.config_sections` (the
firmware's) and next to the tasks (a task's, named by the task catalog), and
re-exported here.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomli_w

from seedcam_firmware.config_schema import KeySpec, coerce_value, parse_text, section_keys, unknown_key_error
from seedcam_firmware.config_sections import (
    CAMERA_SOURCES,
    DEFAULT_MODELS_DIR,
    KEYS,
    LINK_PROTOCOLS,
    PRECISIONS,
    SECTIONS,
    CameraConfig,
    DeviceConfig,
    FirmwareConfig,
    LinkConfig,
    ModelsConfig,
    PipelineConfig,
    RuntimeConfig,
    TasksConfig,
    UpdatesConfig,
)
from seedcam_firmware.errors import ConfigError
from seedcam_firmware.host_policy import check_host_change, keep_local_keys
from seedcam_firmware.task_sections import ClassifyConfig, DetectConfig, OcrConfig

__all__ = [
    "CAMERA_SOURCES",
    "DEFAULT_MODELS_DIR",
    "ENV_PREFIX",
    "KEYS",
    "LINK_PROTOCOLS",
    "PRECISIONS",
    "SECTIONS",
    "CameraConfig",
    "ClassifyConfig",
    "DetectConfig",
    "DeviceConfig",
    "FirmwareConfig",
    "LinkConfig",
    "ModelsConfig",
    "OcrConfig",
    "PipelineConfig",
    "RuntimeConfig",
    "TasksConfig",
    "UpdatesConfig",
    "check_host_change",
    "config_from_dict",
    "config_get",
    "config_reset",
    "config_set",
    "config_to_dict",
    "host_reset",
    "load_config",
    "requires_restart",
    "to_toml",
]

_log = logging.getLogger(__name__)

#: Prefix of the environment variables that override config keys.
ENV_PREFIX = "SEEDCAM_FW_"


def _spec(key: str, source: str) -> KeySpec:
    spec = KEYS.get(key)
    if spec is None:
        raise unknown_key_error(key, KEYS if "." in key else SECTIONS, source)
    return spec


def config_from_dict(data: Mapping[str, Any], source: str = "<dict>") -> FirmwareConfig:
    """Build a config from nested ``{section: {key: value}}`` data (a parsed TOML).

    Missing sections and keys take their defaults.

    Args:
        data: the parsed document.
        source: the file name or origin, used in error messages.

    Raises:
        ConfigError: unknown section/key, wrong type or out-of-range value.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: the configuration must be a table, got {type(data).__name__}")
    sections: dict[str, Any] = {}
    for section, table in data.items():
        if section not in SECTIONS:
            raise unknown_key_error(str(section), SECTIONS, source)
        if not isinstance(table, Mapping):
            raise ConfigError(f"{source}: [{section}] must be a table, got {type(table).__name__}")
        values = {}
        for key, value in table.items():
            spec = _spec(f"{section}.{key}", source)
            values[key] = coerce_value(spec, value, source)
        sections[section] = SECTIONS[section](**values)
    return FirmwareConfig(**sections)


def config_to_dict(cfg: FirmwareConfig) -> dict[str, dict[str, Any]]:
    """Return the config as plain TOML/JSON-compatible nested dicts (tuples become lists)."""
    return {name: _section_dict(getattr(cfg, name)) for name in SECTIONS}


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _section_dict(section: Any) -> dict[str, Any]:
    return {f.name: _plain(getattr(section, f.name)) for f in dataclasses.fields(section)}


def config_get(cfg: FirmwareConfig, key: str) -> Any:
    """Read one key, one section (as a dict) or, with ``""``, the whole config.

    Values are plain data as in :func:`config_to_dict` (lists, not tuples).

    Raises:
        ConfigError: unknown key or section.
    """
    if key == "":
        return config_to_dict(cfg)
    if key in SECTIONS:
        return _section_dict(getattr(cfg, key))
    section, name = _spec(key, "config_get").key.split(".", 1)
    return _plain(getattr(getattr(cfg, section), name))


def config_set(cfg: FirmwareConfig, key: str, value: Any, *, source: str = "config_set") -> FirmwareConfig:
    """Return a copy of ``cfg`` with one key (or several) changed and validated.

    A string given for a non-string key is parsed as on the command line
    (``"15"`` for ``camera.fps``, ``"lane,ocr"`` for ``tasks.enabled``).
    A section name with a mapping sets several keys of that section at once.
    Check :func:`requires_restart` to learn whether the daemon must restart.

    Args:
        cfg: the current config.
        key: a dotted key, or a section name when ``value`` is a mapping.
        value: the new value.
        source: origin used in error messages.

    Raises:
        ConfigError: unknown key, wrong type or out-of-range value.
    """
    if key in SECTIONS and isinstance(value, Mapping):
        for sub, sub_value in value.items():
            cfg = config_set(cfg, f"{key}.{sub}", sub_value, source=source)
        return cfg
    if key in SECTIONS:
        raise ConfigError(f"{source}: {key} is a section; set it from a table of keys")
    spec = _spec(key, source)
    if isinstance(value, str) and spec.type is not str:
        value = parse_text(spec, value, source)
    value = coerce_value(spec, value, source)
    section, name = key.split(".", 1)
    new_section = dataclasses.replace(getattr(cfg, section), **{name: value})
    return dataclasses.replace(cfg, **{section: new_section})


def config_reset(cfg: FirmwareConfig, key: str = "") -> FirmwareConfig:
    """Return a copy of ``cfg`` with a key, a section or (``""``) everything at defaults.

    Raises:
        ConfigError: unknown key or section.
    """
    if key == "":
        return FirmwareConfig()
    if key in SECTIONS:
        defaults: dict[str, Any] = {key: SECTIONS[key]()}
        return dataclasses.replace(cfg, **defaults)
    spec = _spec(key, "config_reset")
    return config_set(cfg, key, spec.default(), source="config_reset")


def host_reset(current: FirmwareConfig, key: str = "") -> FirmwareConfig:
    """:func:`config_reset` as a host over the link may do it.

    Resetting everything or a section keeps the local-only keys as they are (see
    :mod:`seedcam_firmware.host_policy`); resetting only such keys (one, or a section of
    nothing else such as ``updates``) is refused when it would change them.

    Raises:
        ConfigError: unknown key or section.
        ReadOnlyConfigKey: the reset would change a key a host may not change.
    """
    new = config_reset(current, key)
    if key == "" or (key in SECTIONS and any(spec.host != "local" for spec in section_keys(SECTIONS[key]).values())):
        new = keep_local_keys(current, new)
    check_host_change(current, new, source=f"config_reset {key}")
    return new


def requires_restart(key: str) -> bool:
    """Tell whether a change to ``key`` needs a daemon restart to take effect.

    Args:
        key: a dotted key, a section name (True if any key in it needs a
            restart) or ``""`` for the whole config.

    Raises:
        ConfigError: unknown key or section.
    """
    if key == "":
        return True
    if key in SECTIONS:
        return any(not s.live for s in section_keys(SECTIONS[key]).values())
    return not _spec(key, "requires_restart").live


def to_toml(cfg: FirmwareConfig) -> str:
    """Serialise the whole config as TOML (``load_config`` reads it back equal)."""
    return tomli_w.dumps(config_to_dict(cfg))


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None


def _resolve_paths(data: dict[str, Any], base: Path) -> None:
    """Make relative path keys in file data relative to the file's folder."""
    for section, table in data.items():
        if not isinstance(table, dict):
            continue
        for key, value in table.items():
            spec = KEYS.get(f"{section}.{key}")
            if spec and spec.rules.is_path and isinstance(value, str) and value:
                path = Path(os.path.expanduser(value))
                table[key] = os.path.normpath(path if path.is_absolute() else base / path)


def _env_items(env: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """Pick the ``SEEDCAM_FW_<SECTION>_<KEY>`` variables: (dotted key, text, var name).

    Variables whose first word is not a section (``SEEDCAM_FW_LOG_LEVEL``) are
    left to other readers; a known section with an unknown key is an error.
    """
    items = []
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX):
            continue
        section, _, key = name[len(ENV_PREFIX) :].lower().partition("_")
        if section not in SECTIONS:
            _log.debug("ignoring %s: not a config section", name)
            continue
        items.append((f"{section}.{key}", env[name], name))
    return items


def load_config(
    path: Path | str | None,
    overrides: Mapping[str, object] = {},
    *,
    env: Mapping[str, str] | None = None,
) -> FirmwareConfig:
    """Load the configuration: defaults < file < environment < overrides.

    Relative paths in the file (``camera.path``, ``models.dir``,
    ``runtime.delegate``) are taken relative to the file's folder.

    Args:
        path: the TOML file, or None for defaults only.
        overrides: dotted key to value (typed, or text as from ``--set k=v``).
        env: environment to read ``SEEDCAM_FW_*`` from; default ``os.environ``.

    Returns:
        The validated config.

    Raises:
        ConfigError: missing/unreadable/invalid file or any invalid value; the
            message names the key and the file, variable or override.
    """
    if path is not None:
        path = Path(path)
        data = _read_toml(path)
        _resolve_paths(data, path.resolve().parent)
        cfg = config_from_dict(data, source=str(path))
    else:
        cfg = FirmwareConfig()
    for key, text, var in _env_items(os.environ if env is None else env):
        cfg = config_set(cfg, key, text, source=f"environment variable {var}")
    for key, value in overrides.items():
        cfg = config_set(cfg, key, value, source=f"override {key}")
    return cfg

"""What a host may change over the link: the one home of the per-key host policy.

Every config key declares a policy with :func:`~seedcam_firmware.config_schema.setting`
(``host="yes" | "local" | "allow-list"``). This module applies it to a change that comes from
a host (``config_set`` / ``config_reset`` on the native link, ``setConfig`` / ``resetConfig`` on
the VisionSeed one), and hides local paths from what a host reads:

- ``"local"`` keys (anything that loads code, names a file or a device, the board's identity and
  everything that guards updates) never change from the link, keys provisioned or not;
- ``"allow-list"`` keys (a task's ``models.<task>`` manifest) may only name a file inside the
  models folder or the update slots (after symlinks), so a task never runs a manifest that
  neither shipped with the board nor passed the bundle checks;
- ``"yes"`` keys change within their type and range, as the device's file may.

docs/security.md lists the local-only keys (a test keeps it in step with the declarations).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from seedcam_firmware.config_schema import KeySpec
from seedcam_firmware.config_sections import KEYS, SECTIONS, FirmwareConfig
from seedcam_firmware.errors import ReadOnlyConfigKey

__all__ = [
    "HIDDEN",
    "check_host_change",
    "hide_local_paths",
    "is_local_only",
    "keep_local_keys",
    "local_only_keys",
    "why_local",
]

#: What a host reads instead of a local-only path (``config_get``): the board's layout stays its own.
HIDDEN = "<local>"

_WHY: dict[str, str] = {
    "runtime.delegate": "it loads native code into the firmware",
    "camera.source": "it chooses the board's camera or files to read",
    "camera.device": "it names a device of the board",
    "camera.path": "it names files on the board",
    "camera.scene": "it names a file on the board",
    "models.dir": "it names a folder on the board",
    "link.url": "it opens a device or a network listener",
    "link.key_file": "it names the link key that requests must be signed with",
    "device.serial_number": "it is the board's identity",
}


def why_local(key: str) -> str:
    """The reason a key is local-only, for refusals and docs/security.md."""
    if key in _WHY:
        return _WHY[key]
    if key.startswith("updates."):
        return "it guards updates (trusted keys, slots, target board)"
    return "only the device's own config file sets it"


def local_only_keys() -> dict[str, KeySpec]:
    """Every key a host may not change over the link, in file order."""
    return {key: spec for key, spec in KEYS.items() if spec.host == "local"}


def is_local_only(key: str) -> bool:
    """True for a local-only key (an unknown key too: nothing a host may write)."""
    spec = KEYS.get(key)
    return spec is None or spec.host == "local"


def _value(cfg: FirmwareConfig, key: str) -> Any:
    section, name = key.split(".", 1)
    return getattr(getattr(cfg, section), name)


def check_host_change(current: FirmwareConfig, new: FirmwareConfig, *, source: str = "host") -> None:
    """Refuse a config change that a host may not make over the link.

    Args:
        current: the configuration in force.
        new: the configuration the host asks for.
        source: the request, for the message (``config_set camera.fps``).

    Raises:
        ReadOnlyConfigKey: a local-only key would change, or an allow-list key would name a file
            outside the models folder and the update slots; the message names the key and why.
    """
    roots = [Path(current.models.dir).resolve()]
    if current.updates.dir:
        roots.append((Path(current.updates.dir) / "slots").resolve())
    for key, spec in KEYS.items():
        value = _value(new, key)
        if value == _value(current, key):
            continue
        if spec.host == "local":
            raise ReadOnlyConfigKey(
                f"{source}: {key} is read-only over the link ({why_local(key)}); set it in the device's config file"
            )
        if spec.host == "allow-list":
            path = (Path(current.models.dir) / str(value)).resolve()
            if not any(path.is_relative_to(root) for root in roots):
                raise ReadOnlyConfigKey(
                    f"{source}: {key} may only name a manifest in the models folder or the update slots "
                    "(a host may not point a task at other files); set it in the device's config file"
                )


def keep_local_keys(current: FirmwareConfig, new: FirmwareConfig) -> FirmwareConfig:
    """``new`` with every local-only key as in ``current`` (what a host's reset may do)."""
    for name in SECTIONS:
        kept = {
            field.name: getattr(getattr(current, name), field.name)
            for field in dataclasses.fields(getattr(new, name))
            if KEYS[f"{name}.{field.name}"].host == "local"
        }
        if kept:
            new = dataclasses.replace(new, **{name: dataclasses.replace(getattr(new, name), **kept)})
    return new


def hide_local_paths(key: str, value: Any) -> Any:
    """What a host reads for ``key`` (``""``: the whole config, a section name: a table).

    A local-only path (``updates.dir``, ``models.dir``, ``runtime.delegate``, ``camera.path``,
    a ``camera.device`` or ``link.url`` with a path...) reads as :data:`HIDDEN` when set, so
    the link tells nothing of the board's files.

    Args:
        key: the key, section or ``""`` that ``value`` is the plain value of.
        value: the plain value (see :func:`seedcam_firmware.config.config_get`).
    """
    if key == "" and isinstance(value, dict):
        return {name: hide_local_paths(name, table) for name, table in value.items()}
    if key in SECTIONS and isinstance(value, dict):
        return {name: hide_local_paths(f"{key}.{name}", item) for name, item in value.items()}
    spec = KEYS.get(key)
    if spec is not None and spec.host == "local" and value:
        if spec.rules.is_path or (isinstance(value, str) and "/" in value):
            return HIDDEN
    return value

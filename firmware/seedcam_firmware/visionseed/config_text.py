"""getConfig / setConfig / resetConfig: our TOML configuration as VisionSeed's config "domain" text.

A domain is ``""`` (or ``"seedcam"``) for the whole configuration, a section
name (``"camera"``) or a dotted key (``"camera.fps"``). ``getConfig`` answers
TOML text that ``setConfig`` takes back: a whole document, or for a section or
key domain also the bare keys (``fps = 15`` for ``camera`` or ``camera.fps``).
``setConfig`` checks every key of the text before it changes anything, then sets
the keys whose value differs through the same service calls a native host
uses (live keys take effect at once, the others after a reboot; written back
to the config file when the firmware runs with ``--persist-config``).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from typing import Any, Protocol

import tomli_w

from seedcam.types import ConfigValue
from seedcam_firmware.config import KEYS, FirmwareConfig, check_host_change, config_get, config_set, requires_restart
from seedcam_firmware.errors import ConfigError, UnknownConfigKey
from seedcam_firmware.visionseed._proto import visionseed_pb2 as vs
from seedcam_firmware.visionseed.errors import VisionSeedRequestError

__all__ = ["ConfigServices", "WHOLE_CONFIG_DOMAINS", "config_text", "parse_config_text", "set_config_text"]

#: domains that mean the whole configuration
WHOLE_CONFIG_DOMAINS = ("", "seedcam")
_Code = vs.YtRpcResponse


class ConfigServices(Protocol):
    """The config part of the device services (the daemon)."""

    config: FirmwareConfig

    def config_get(self, key: str) -> ConfigValue: ...

    def config_set(self, key: str, value: object) -> ConfigValue: ...

    def config_reset(self, key: str) -> ConfigValue: ...


def _key(domain: str) -> str:
    domain = domain.strip()
    return "" if domain in WHOLE_CONFIG_DOMAINS else domain


def _plain(value: Any) -> Any:
    """TOML has no None; tuples become lists."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def config_text(services: ConfigServices, domain: str) -> str:
    """The TOML text of a domain (whole config, a section, or one key).

    Raises:
        UnknownConfigKey: no such section or key.
    """
    key = _key(domain)
    value = _plain(services.config_get(key).value)
    if not key:
        return tomli_w.dumps(value)
    section, _, name = key.partition(".")
    return tomli_w.dumps({section: value if not name else {name: value}})


def parse_config_text(domain: str, text: str) -> dict[str, Any]:
    """The dotted keys and values a setConfig text sets.

    Raises:
        VisionSeedRequestError: ERROR_PARAMETERS for text that is not TOML, or keys outside the domain.
    """
    key = _key(domain)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise VisionSeedRequestError(_Code.ERROR_PARAMETERS, f"config text is not TOML: {exc}") from exc
    except RecursionError as exc:  # tables or arrays nested thousands deep
        raise VisionSeedRequestError(_Code.ERROR_PARAMETERS, "config text is nested too deeply") from exc
    section, _, name = key.partition(".")
    if section and section not in doc:  # the bare keys of the domain's section
        doc = {section: doc}
    flat: dict[str, Any] = {}
    for table_name, table in doc.items():
        if not isinstance(table, dict):
            raise VisionSeedRequestError(
                _Code.ERROR_PARAMETERS, f"config text: {table_name!r} must be a [section] of keys"
            )
        for item, value in table.items():
            flat[f"{table_name}.{item}"] = value
    outside = [k for k in flat if section and (k.split(".")[0] != section or (name and k != key))]
    if outside:
        raise VisionSeedRequestError(_Code.ERROR_PARAMETERS, f"keys {outside} are outside the domain {domain!r}")
    return flat


def set_config_text(services: ConfigServices, domain: str, text: str) -> str:
    """Check every key of ``text``, then set the changed ones; returns a one-line summary.

    Raises:
        VisionSeedRequestError: ERROR_PARAMETERS for bad text, an unknown key or an invalid value
            (nothing changed then).
        ConfigError: a live key that cannot take effect (a task whose model did not load).
    """
    values = parse_config_text(domain, text)
    current = services.config
    trial = current
    try:
        for key, value in values.items():
            trial = config_set(trial, key, value, source=f"setConfig {domain or 'seedcam'}")
    except UnknownConfigKey as exc:
        raise VisionSeedRequestError(_Code.ERROR_PARAMETERS, str(exc)) from exc
    except ConfigError as exc:
        raise VisionSeedRequestError(_Code.ERROR_PARAMETERS, str(exc)) from exc
    check_host_change(current, trial, source=f"setConfig {domain or 'seedcam'}")  # before any key is set
    changed = [k for k in values if config_get(trial, k) != config_get(current, k)]
    changed.sort(key=lambda k: KEYS[k].live)  # restart-only keys first: a live key may depend on them
    restart = []
    for key in changed:
        services.config_set(key, config_get(trial, key))
        if requires_restart(key):
            restart.append(key)
    if restart:
        return f"set {len(changed)} keys; takes effect after a reboot: {','.join(restart)}"
    return f"set {len(changed)} keys"

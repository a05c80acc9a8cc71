"""Safe boot: a config file that does not boot falls back to the last one that did.

A host's persisted change (the default with ``--config``; ``--no-persist-config`` turns it off) must
not keep the sensor from booting (under systemd: a restart loop that needs local access to end). So
a firmware that persists host changes keeps a copy of the config file that last booted *and ran*
(its first frame processed) next to it, ``<config>.last-good``, written atomically. When the config
file fails at boot (the camera does not open, the scene file is unreadable, no enabled task's model
or delegate loads, the file itself is invalid), the firmware boots the last good copy instead, with
the same command-line options, logs an error that the host receives on the LOG channel and reports
the reason in Health (``config_fallback``) for as long as it runs. The config file itself is left as
it was: a host's next persisted change still goes into it, so a repaired file boots next time.

With ``--no-persist-config`` nothing but the device's owner changes the file, and nothing is
kept; without a last good copy (the first boot), or when the file is that copy, a failure stops
the boot as before. Link errors (``link.url`` is the device's own) are never a reason to fall back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path

from seedcam_firmware.config import FirmwareConfig, load_config
from seedcam_firmware.daemon import Daemon
from seedcam_firmware.errors import FirmwareError
from seedcam_firmware.storage.atomic import write_atomically

__all__ = ["boot", "last_good_path"]

log = logging.getLogger(__name__)

_REASON_CHARS = 300  # the reason travels in every Health message


def last_good_path(config_path: Path) -> Path:
    """Where the copy of the config file that last booted and ran is kept."""
    return config_path.with_name(config_path.name + ".last-good")


def boot(
    config_path: Path | None,
    overrides: Mapping[str, object] = {},
    *,
    persist: bool = False,
    env: Mapping[str, str] | None = None,
) -> Daemon:
    """Load the configuration and start the daemon, falling back to the last good config file.

    Args:
        config_path: the TOML config file, or None for defaults and overrides only.
        overrides: config keys from the command line (they apply to either file).
        persist: host changes are written back into ``config_path`` (``--persist-config``).
        env: environment for ``SEEDCAM_FW_*`` (default ``os.environ``).

    Returns:
        The started daemon; ``daemon.config_fallback`` is non-empty when it runs the last good copy.

    Raises:
        ConfigError, CameraError, ModelError: the configuration does not boot and there is no
            other last good copy to fall back to (or that fails too: the first error is raised).
        LinkBroken: the link cannot be opened.
    """
    if config_path is None or not persist:
        return _start(load_config(config_path, overrides, env=env), None)
    config_path = Path(config_path)
    good = last_good_path(config_path)
    try:
        text = config_path.read_bytes()
    except OSError:
        text = b""  # load_config names the problem
    try:
        config = load_config(config_path, overrides, env=env)
        return _start(config, config_path, on_running=lambda: _keep(good, text))
    except FirmwareError as exc:
        kept = _read(good)
        if kept is None or kept == text:
            raise
        reason = _one_line(f"{config_path.name} did not boot ({exc}); running the last configuration that booted")
        log.error("%s", reason)
        try:
            config = load_config(good, overrides, env=env)
            return _start(config, config_path, fallback=reason)
        except FirmwareError as again:
            log.error("the last good configuration %s does not boot either: %s", good, again)
            raise exc from None


def _start(
    config: FirmwareConfig,
    config_path: Path | None,
    *,
    on_running: Callable[[], None] | None = None,
    fallback: str = "",
) -> Daemon:
    daemon = Daemon(config, config_path=config_path, config_fallback=fallback, on_running=on_running)
    daemon.start()
    return daemon


def _keep(good: Path, text: bytes) -> None:
    """Keep ``text`` (the config file as it booted) as the last good copy, if it is new."""
    if _read(good) == text:
        return
    try:
        write_atomically(good, text)
    except OSError as exc:
        log.warning("cannot keep the last good configuration %s: %s", good, exc)
        return
    log.info("kept %s as the last configuration that booted and ran", good)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _REASON_CHARS else line[: _REASON_CHARS - 3] + "..."

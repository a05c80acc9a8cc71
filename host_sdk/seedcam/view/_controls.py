"""The viewer's controls: a tab's request becomes a sensor call, and the applied value comes back.

A control message from a tab is JSON ``{"type": "control", "id": N, "action": ..., ...}``:

* ``{"action": "tasks", "value": ["lane", "detect"]}``: run these tasks;
* ``{"action": "config", "key": "detect.score_threshold", "value": 0.4}``: change a config key
  (the device's host policy decides which keys a host may change);
* ``{"action": "preview", "fps": 5, "quality": 60, "max_width": 320}``: the preview stream;
* ``{"action": "get", "key": "ocr.pattern"}``: read a key;
* ``{"action": "save"}``: write the current tasks and watched keys into the device's config file
  (the device saves each change itself when it runs with ``--config FILE``; this saves them all
  again and says whether the device could);
* ``{"action": "install", "name": "detect", "version": null}``: install from the catalog (when the
  viewer has one), with ``progress`` messages on the way.

The answer to the tab is ``{"type": "applied", "id": N, "action": ..., "value": <what the device
stored>, ...}`` (``note`` says whether the device saved it) or ``{"type": "error", "id": N,
"message": ...}``; every tab also gets ``{"type": "state", ...}`` with the applied value, so
all of them show it. Calls run one at a time, off the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from typing import Any

from seedcam.errors import RpcError, SensorError
from seedcam.sensor import Sensor
from seedcam.types import ConfigValue

__all__ = ["READ_ONLY_MESSAGE", "ControlError", "Controls", "change_note"]

log = logging.getLogger(__name__)

READ_ONLY_MESSAGE = "this viewer is read-only (seedcam view --read-only): controls are disabled"
#: the config keys every tab shows (and keeps in step)
WATCHED_KEYS = ("detect.score_threshold", "ocr.pattern", "ocr.lexicon")


class ControlError(Exception):
    """A control message the viewer refuses (not a device error): its message goes back to the tab."""


def change_note(stored: ConfigValue) -> str:
    """Whether the device saved a change and when it takes effect, in words."""
    if stored.persisted:
        return "saved on the device" + ("; takes effect after a restart" if stored.restart_required else "")
    if stored.restart_required:
        return "not saved: takes effect after a restart, which loses it"
    return "applied; not saved (lasts until the firmware restarts)"


class Controls:
    """Carries out the tabs' control messages on the sensor (see the module docstring).

    Args:
        sensor: the open sensor.
        read_only: refuse every control.
        install: installs a catalog entry ``(name, version, progress)`` and returns what to echo
            (None: the viewer has no catalog).
    """

    def __init__(
        self,
        sensor: Sensor,
        *,
        read_only: bool = False,
        install: Callable[[str, str | None, Callable[[int, int], None]], dict[str, Any]] | None = None,
    ) -> None:
        self.sensor = sensor
        self.read_only = read_only
        self._install = install
        self._lock = asyncio.Lock()
        self.preview: dict[str, Any] = {}

    async def handle(self, message: dict[str, Any], progress: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Carry out one control message; returns the answer for the tab (``applied`` or ``error``).

        Args:
            message: the tab's message.
            progress: sends a progress message to the tab (from any thread).
        """
        ident = message.get("id")
        action = message.get("action")
        try:
            if action != "get" and self.read_only:
                raise ControlError(READ_ONLY_MESSAGE)
            async with self._lock:
                applied = await self._apply(str(action), message, progress)
        except ControlError as exc:
            return {"type": "error", "id": ident, "action": action, "message": str(exc)}
        except RpcError as exc:
            refusal = exc.detail or exc.status
            return {"type": "error", "id": ident, "action": action, "message": f"the sensor refused: {refusal}"}
        except (SensorError, ValueError) as exc:
            return {"type": "error", "id": ident, "action": action, "message": str(exc)}
        except Exception as exc:  # a bug here must not end the tab's socket
            log.exception("control %s failed", action)
            return {"type": "error", "id": ident, "action": action, "message": f"viewer error: {exc}"}
        return {"type": "applied", "id": ident, "action": action, **applied}

    async def _apply(
        self, action: str, message: dict[str, Any], progress: Callable[[dict[str, Any]], None]
    ) -> dict[str, Any]:
        sensor = self.sensor
        if action == "tasks":
            tasks = message.get("value")
            if not isinstance(tasks, list) or not all(isinstance(t, str) for t in tasks):
                raise ControlError("tasks: value must be a list of task names")
            listed = await asyncio.to_thread(sensor.select_tasks, tasks)
            return {"value": list(listed.enabled), "available": list(listed.available)}
        if action == "config":
            key = _key(message)
            if "value" not in message:
                raise ControlError(f"config {key}: no value")
            stored = await asyncio.to_thread(sensor.config_set, key, message["value"])
            return {"key": key, "value": stored.value, "persisted": stored.persisted, "note": change_note(stored)}
        if action == "get":
            key = _key(message)
            return {"key": key, "value": await asyncio.to_thread(sensor.config_get, key)}
        if action == "preview":
            fps, quality, width = message.get("fps"), message.get("quality", 70), message.get("max_width", 320)
            if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (fps, quality, width)):
                raise ControlError("preview: fps, quality and max_width must be numbers")
            assert isinstance(fps, int | float) and isinstance(quality, int | float) and isinstance(width, int | float)
            if not math.isfinite(quality) or not math.isfinite(width):
                raise ControlError("preview: quality and max_width must be finite")
            settings = await asyncio.to_thread(sensor.start_preview, float(fps), int(quality), int(width))
            self.preview = {
                "fps": settings.fps,
                "quality": settings.quality,
                "max_width": settings.max_width,
                "line_limited": settings.line_limited,
                "message": settings.message,
            }
            return {"value": self.preview}
        if action == "install":
            return await self._do_install(message, progress)
        if action == "save":
            return await self._save()
        raise ControlError(f"unknown control {action!r}")

    async def _do_install(self, message: dict[str, Any], progress: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        if self._install is None:
            raise ControlError("no catalog: start the viewer with --catalog URL")
        name, version = message.get("name"), message.get("version")
        if not isinstance(name, str) or not name or not (version is None or isinstance(version, str)):
            raise ControlError("install: name must be a catalog entry's name, version a string or null")
        ident = message.get("id")

        def report(sent: int, total: int) -> None:
            progress({"type": "progress", "id": ident, "name": name, "sent": sent, "total": total})

        return {"value": await asyncio.to_thread(self._install, name, version, report)}

    async def _save(self) -> dict[str, Any]:
        """Set the tasks and the watched keys to what they are, so the device persists them."""
        sensor = self.sensor
        saved: dict[str, bool] = {}
        for key in ("tasks.enabled", *WATCHED_KEYS):
            try:
                value = await asyncio.to_thread(sensor.config_get, key)
            except RpcError:  # a firmware without that task's section
                continue
            saved[key] = (await asyncio.to_thread(sensor.config_set, key, value)).persisted
        if saved and all(saved.values()):
            note = "saved on the device"
        elif any(saved.values()):
            note = "saved in part: " + ", ".join(k for k, ok in saved.items() if not ok) + " not saved"
        else:
            note = "not saved: the firmware has no config file to save into (run it with --config FILE)"
        return {"value": saved, "note": note}

    async def state(self) -> dict[str, Any]:
        """What every tab shows on arrival: the watched keys' values (absent keys left out)."""
        values: dict[str, Any] = {}
        for key in WATCHED_KEYS:
            try:
                values[key] = await asyncio.to_thread(self.sensor.config_get, key)
            except RpcError:  # a firmware without that task's section
                continue
            except SensorError as exc:
                log.debug("could not read %s: %s", key, exc)
        return values


def _key(message: dict[str, Any]) -> str:
    key = message.get("key")
    if not isinstance(key, str) or not key:
        raise ControlError("config: key must be a dotted config key such as detect.score_threshold")
    return key

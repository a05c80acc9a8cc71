"""What comes down to a bridge: ``config/set``, ``cmd/<name>`` and ``ota/set``, handled on one worker thread.

paho calls back on its network thread, which must keep running (keepalives, acks),
so requests are queued here and run one at a time against the sensor. A request with an
MQTT 5 response topic gets its answer there, with the request's correlation data:
``{"ok": true, "result": ...}`` or ``{"ok": false, "error": "<reason>", "message": "..."}``.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from seedcam._jsonable import to_jsonable
from seedcam.errors import CatalogError, RpcError, SensorError, SignatureError, UpdateRefused
from seedcam.fleet._snapshots import RateLimited, Snapshots
from seedcam.fleet.ota import install_ota, verify_ota_request
from seedcam.fleet.topics import Topics

__all__ = ["Bridge", "Incoming", "Refused", "Requests"]

log = logging.getLogger(__name__)

_QUEUE = 64  #: requests waiting for the worker; more are refused (``busy``)


@dataclass(frozen=True)
class Incoming:
    """A message paho received."""

    topic: str
    payload: bytes
    response_topic: str | None = None
    correlation: bytes | None = None
    retained: bool = False


class Refused(Exception):
    """A request the bridge will not carry out; ``reason`` is machine-readable."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _json(payload: bytes) -> Any:
    if not payload:
        return {}
    try:
        return json.loads(payload)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Refused("bad_request", f"the payload is not JSON: {exc}") from exc


class Bridge(Protocol):
    """What the request side needs of :class:`~seedcam.fleet.bridge.MqttBridge`."""

    sensor: Any
    topics: Topics
    stats: Any
    snapshots: Snapshots

    @property
    def options(self) -> Any: ...

    def publish(self, topic: str, payload: bytes | str, *, qos: int = 0, retain: bool = False, **props: Any) -> int: ...

    def publish_json(self, topic: str, value: Any, *, qos: int = 0, retain: bool = False, **props: Any) -> int: ...

    def health_payload(self, health: Any) -> dict[str, Any]: ...

    def info_payload(self) -> dict[str, Any]: ...


class Requests:
    """The bridge's request side (``bridge`` gives the sensor, topics, options and publishing)."""

    def __init__(self, bridge: Bridge) -> None:
        self._bridge = bridge
        self._queue: queue.Queue[Incoming | None] = queue.Queue(_QUEUE)
        self._thread = threading.Thread(target=self._run, name="seedcam-bridge-requests", daemon=True)
        self._config_version = 0
        self._config_state: dict[str, Any] | None = None
        self._ota_state: dict[str, Any] | None = None
        self._reported: dict[str, Any] = {}
        reads: dict[str, Callable[[dict[str, Any]], Any]] = {
            "ping": lambda a: {"rtt_ms": round(self._sensor.ping(timeout=a.get("timeout")) * 1000, 3)},
            "info": lambda a: self._sensor.info(),
            "health": lambda a: self._bridge.health_payload(self._sensor.health),
            "config_get": lambda a: {"key": a.get("key", ""), "value": self._sensor.config_get(str(a.get("key", "")))},
            "models": lambda a: self._sensor.models(),
            "snapshot": self._snapshot,
        }
        writes: dict[str, Callable[[dict[str, Any]], Any]] = {
            "select_tasks": self._select_tasks,
            "reboot": lambda a: {"boot_id": self._sensor.reboot().boot_id},
        }
        self._reads, self._writes = reads, writes

    @property
    def _sensor(self) -> Any:
        return self._bridge.sensor

    def commands(self, *, read_only: bool) -> list[str]:
        """The ``cmd/<name>`` names the bridge answers."""
        return [*self._reads, *([] if read_only else self._writes)]

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float) -> None:
        if self._thread.is_alive():
            try:
                self._queue.put(None, timeout=timeout)
            except queue.Full:
                return
            self._thread.join(timeout)

    def submit(self, message: Incoming) -> None:
        """From paho's thread: queue the request (refused as ``busy`` when the queue is full)."""
        try:
            self._queue.put_nowait(message)
        except queue.Full:
            self._answer(message, None, Refused("busy", f"{_QUEUE} requests wait already"))

    def republish_state(self) -> None:
        """After a (re)connection: the retained config and OTA states again."""
        if self._config_state is not None:
            self._bridge.publish_json(self._bridge.topics.config_state, self._config_state, qos=1, retain=True)
        if self._ota_state is not None:
            self._bridge.publish_json(self._bridge.topics.ota_state, self._ota_state, qos=1, retain=True)

    # ------------------------------------------------------------------ the worker

    def _run(self) -> None:
        while True:
            message = self._queue.get()
            if message is None:
                return
            self._bridge.stats.requests += 1
            try:
                result = self._handle(message)
            except Refused as exc:
                self._count(exc.reason)
                log.warning("%s refused (%s): %s", message.topic, exc.reason, exc)
                self._answer(message, None, exc)
            except Exception as exc:  # noqa: BLE001 - one bad request must not stop the bridge
                log.exception("request on %s failed", message.topic)
                self._answer(message, None, Refused("internal", f"{type(exc).__name__}: {exc}"))
            else:
                self._answer(message, result, None)

    def _count(self, reason: str) -> None:
        refusals = self._bridge.stats.refusals
        refusals[reason] = refusals.get(reason, 0) + 1

    def _handle(self, message: Incoming) -> Any:
        topics = self._bridge.topics
        read_only = self._bridge.options.read_only
        if message.topic == topics.config_set:
            if read_only:
                raise Refused("read_only", "this bridge runs read-only: config/set is refused")
            return self._config_set(_json(message.payload))
        if message.topic == topics.ota_set:
            return self._ota(message)
        name = message.topic.rpartition("/")[2]
        command = self._reads.get(name) or (None if read_only else self._writes.get(name))
        if command is None:
            known = ", ".join(sorted(self.commands(read_only=read_only)))
            why = "read-only bridge" if name in self._writes else "unknown command"
            raise Refused("unknown_command", f"{why} {name!r}; commands: {known}")
        args = _json(message.payload)
        if not isinstance(args, dict):
            raise Refused("bad_request", f"cmd/{name}: the arguments must be a JSON object")
        try:
            return command(args)
        except RpcError as exc:
            raise Refused(exc.status.lower(), str(exc)) from exc
        except (SensorError, ValueError, TypeError) as exc:
            raise Refused(type(exc).__name__, str(exc)) from exc

    def _answer(self, message: Incoming, result: Any, error: Refused | None) -> None:
        if not message.response_topic:
            return
        body = {"ok": True, "result": result} if error is None else {"ok": False, "error": error.reason}
        if error is not None:
            body["message"] = str(error)
        self._bridge.publish_json(message.response_topic, body, qos=1, correlation=message.correlation)

    # ------------------------------------------------------------------ the requests

    def _snapshot(self, args: dict[str, Any]) -> dict[str, Any]:
        try:
            return self._bridge.snapshots.take(int(args.get("quality", 0)))
        except RateLimited as exc:
            raise Refused("rate_limited", str(exc)) from exc

    def _select_tasks(self, args: dict[str, Any]) -> Any:
        tasks = args.get("tasks")
        if not isinstance(tasks, list) or not all(isinstance(t, str) for t in tasks):
            raise Refused("bad_request", 'select_tasks: {"tasks": ["lane", ...]} expected')
        return self._sensor.select_tasks(tasks)

    def _config_set(self, payload: Any) -> dict[str, Any]:
        """Apply a desired config, key by key; publish what the device reported (retained, versioned)."""
        if not isinstance(payload, dict):
            raise Refused("bad_request", 'config/set: {"version": N, "config": {"key": value}} expected')
        desired = payload.get("config", payload if "version" not in payload else None)
        if not isinstance(desired, dict) or not desired:
            raise Refused("bad_request", 'config/set: {"version": N, "config": {"key": value}} expected')
        version = payload.get("version")
        if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
            raise Refused("bad_request", "config/set: version must be an integer")
        if version is not None and version <= self._config_version:
            raise Refused("stale_version", f"config version {version} is not newer than {self._config_version}")
        refused: dict[str, str] = {}
        restart: list[str] = []
        for key, value in desired.items():
            try:
                stored = self._sensor.config_set(str(key), value)
            except RpcError as exc:
                refused[str(key)] = f"{exc.status}: {exc.detail}"
                continue
            except (SensorError, ValueError) as exc:
                refused[str(key)] = f"{type(exc).__name__}: {exc}"
                continue
            self._reported[str(key)] = stored.value
            if stored.restart_required:
                restart.append(str(key))
        self._config_version = version if version is not None else self._config_version + 1
        self._config_state = {
            "version": self._config_version,
            "desired": desired,
            "reported": dict(self._reported),
            "refused": refused,
            "restart_required": restart,
            "ts": round(time.time(), 3),
        }
        self._bridge.publish_json(self._bridge.topics.config_state, self._config_state, qos=1, retain=True)
        return self._config_state

    def _ota(self, message: Incoming) -> dict[str, Any]:
        policy = self._bridge.options.ota
        payload = _json(message.payload)
        entry = {k: payload.get(k) for k in ("name", "version", "sha256")} if isinstance(payload, dict) else {}

        def report(state: str, details: dict[str, Any]) -> None:
            self._ota_state = {"state": state, **entry, **details, "ts": round(time.time(), 3)}
            self._bridge.publish_json(self._bridge.topics.ota_state, self._ota_state, qos=1, retain=True)

        def refuse(reason: str, text: str) -> Refused:
            report("refused", {"reason": reason, "message": text})
            return Refused(reason, text)

        if self._bridge.options.read_only:
            raise refuse("read_only", "this bridge runs read-only: ota/set is refused")
        if policy is None:
            raise refuse("ota_disabled", "this bridge has no catalog for updates (seedcam bridge mqtt --catalog)")
        try:
            request = verify_ota_request(payload, policy.trusted_keys)
        except SignatureError as exc:
            raise refuse(exc.reason, str(exc)) from exc
        except ValueError as exc:
            raise refuse("bad_request", str(exc)) from exc
        report("verified", {"key_id": request.key_id})
        try:
            result = install_ota(self._sensor, policy, request, report)
        except CatalogError as exc:
            raise refuse("catalog", str(exc)) from exc
        except UpdateRefused as exc:
            raise refuse(exc.reason, str(exc)) from exc
        except SensorError as exc:
            report("failed", {"reason": type(exc).__name__, "message": str(exc)})
            raise Refused("failed", str(exc)) from exc
        done = to_jsonable(result)
        report("installed", {"already_installed": bool(getattr(result, "already_installed", False))})
        self._republish_info()
        return done

    def _republish_info(self) -> None:
        """The retained ``info`` again, with the device's models as they are now (after an install)."""
        try:
            self._sensor.info()  # refreshes sensor.device_info, which info_payload() reads
        except SensorError as exc:
            log.warning("could not read the device's info after the install: %s", exc)
            return
        self._bridge.publish_json(self._bridge.topics.info, self._bridge.info_payload(), qos=1, retain=True)

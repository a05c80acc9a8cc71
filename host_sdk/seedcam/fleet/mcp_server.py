"""``seedcam mcp``: the sensor as tools for an AI agent (the official ``mcp`` SDK, stdio; ``seedcam[mcp]``).

Read-only by default: the latest result as text with its age, device info, health,
a snapshot (JPEG image content) and ``wait_for(label, timeout)``. ``config_set`` and
``select_tasks`` exist only with ``allow_write``: without it they are not even listed,
and a call to them is an unknown tool. No tool runs code, names a file or reads one.
"""

# No ``from __future__ import annotations`` here: the SDK reads the tools' annotations, and the
# ones naming the lazily imported mcp types must be objects, not strings it cannot resolve.

import json
import threading
import time
from typing import Any

from seedcam._jsonable import to_jsonable
from seedcam.fleet.broker import MissingExtra
from seedcam.sensor import Sensor
from seedcam.types import Result

__all__ = ["MAX_WAIT_S", "build_server", "describe_result"]

MAX_WAIT_S = 60.0  #: the longest wait_for an agent may ask for


def describe_result(result: Result, now: float | None = None) -> str:
    """One line of text for an agent: frame, age, lane, detections, text, classes."""
    age = (time.monotonic() if now is None else now) - result.received_monotonic
    parts = [f"frame {result.frame_id}, received {age:.2f} s ago"]
    if result.lane is not None:
        lane = result.lane
        parts.append(
            f"lane {lane.status.value}: offset {lane.offset_m:+.3f} m, heading {lane.heading_deg:+.1f} deg, "
            f"confidence {lane.offset_confidence:.2f}"
        )
    parts.append("detections: " + (", ".join(f"{d.label} {d.score:.2f}" for d in result.detections) or "none"))
    if result.text_lines:
        parts.append("text: " + ", ".join(f"'{t.text}' {t.confidence:.2f}" for t in result.text_lines))
    if result.classifications:
        parts.append("classes: " + ", ".join(f"{c.label} {c.score:.2f}" for c in result.classifications))
    return "; ".join(parts)


def _labels(result: Result) -> set[str]:
    found = {d.label for d in result.detections} | {c.label for c in result.classifications}
    found |= {t.text for t in result.text_lines if t.text}
    if result.lane is not None:
        found.add(f"lane_{result.lane.status.value}")
    return found


class _Latest:
    """The newest result, kept by a callback on the sensor's reader thread; waiters are woken."""

    def __init__(self, sensor: Sensor) -> None:
        self.result: Result | None = None
        self._cond = threading.Condition()
        sensor.on_result(self._on_result)

    def _on_result(self, result: Result) -> None:
        with self._cond:
            self.result = result
            self._cond.notify_all()

    def wait_for(self, label: str, timeout: float) -> Result | None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if self.result is not None and label in _labels(self.result):
                    return self.result
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)


def build_server(sensor: Sensor, *, allow_write: bool = False) -> Any:
    """An ``MCPServer`` whose tools use ``sensor`` (run it with ``.run("stdio")``).

    Raises:
        MissingExtra: the ``mcp`` package is not installed.
    """
    try:
        import anyio.to_thread
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        from mcp.server.mcpserver.utilities.types import Image
    except ImportError as exc:
        raise MissingExtra("seedcam mcp needs the mcp SDK: pip install 'seedcam[mcp]'") from exc
    from seedcam.errors import SensorError

    latest = _Latest(sensor)
    server = MCPServer(
        "seedcam",
        instructions="A seedcam AI vision sensor: what its camera sees now (lane, signs, plates), its health, "
        "a snapshot." + (" It may also change the sensor's config and tasks." if allow_write else " Read-only."),
    )

    async def call(function: Any, *args: Any) -> Any:
        try:
            return await anyio.to_thread.run_sync(function, *args)
        except (SensorError, ValueError) as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    @server.tool()
    async def latest_result() -> str:
        """The sensor's latest result as text, with how long ago it arrived."""
        result = latest.result
        if result is None:
            return "no result received yet"
        return describe_result(result)

    @server.tool()
    async def device_info() -> str:
        """Who the sensor is: firmware, board, serial number, camera, tasks and models (JSON)."""
        return json.dumps(to_jsonable(await call(sensor.info)))

    @server.tool()
    async def health() -> str:
        """The sensor's latest health report: fps, frames dropped, link errors, uptime (JSON)."""
        report = sensor.health
        if report is None:
            return "no health report received yet"
        return json.dumps(to_jsonable(report))

    @server.tool()
    async def snapshot() -> Image:
        """A JPEG of what the camera sees now."""
        snap = await call(sensor.snapshot)
        return Image(data=snap.jpeg, format="jpeg")

    @server.tool()
    async def wait_for(label: str, timeout: float = 10.0) -> str:
        """Wait until a result shows ``label`` (a detection or class label, a plate's text, or
        ``lane_ok`` / ``lane_one_line`` / ``lane_lost``); at most 60 s."""
        if not 0 < timeout <= MAX_WAIT_S:
            raise ToolError(f"timeout must be in (0, {MAX_WAIT_S:g}] s")
        result = await anyio.to_thread.run_sync(latest.wait_for, label, timeout)
        if result is None:
            return f"{label!r} not seen within {timeout:g} s"
        return f"{label!r} seen: " + describe_result(result)

    if allow_write:

        @server.tool()
        async def config_set(key: str, value: str | int | float | bool) -> str:
            """Change one config key of the sensor (e.g. camera.fps = 15); the host-changeable keys only."""
            stored = await call(sensor.config_set, key, value)
            return json.dumps(to_jsonable(stored))

        @server.tool()
        async def select_tasks(tasks: list[str]) -> str:
            """Choose which tasks the sensor runs (lane, detect, ocr ...); an empty list turns all off."""
            return json.dumps(to_jsonable(await call(sensor.select_tasks, tasks)))

    return server

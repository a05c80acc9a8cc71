"""The viewer's hub: one sensor connection fanned out to every open tab.

The sensor's reader thread hands results and preview JPEGs to the hub, which pairs them
by frame id (a JPEG goes out only with the Result of the same frame, so overlays are drawn
on the image they belong to) and queues each message for every tab. A tab's queue is
bounded and latest-wins: a slow tab misses frames, it never holds up the sensor or the
other tabs. Results without a JPEG still go out (as JSON) for the HUD and the panels.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from seedcam._frame_pairs import FramePairs
from seedcam._jsonable import to_jsonable
from seedcam.errors import SensorError
from seedcam.sensor import ReconnectEvent, Sensor
from seedcam.types import DeviceInfo, Health, PreviewFrame, Result

__all__ = ["Client", "ViewHub", "pack_frame", "result_json"]

log = logging.getLogger(__name__)

_RECENT_RESULTS = 256  # results kept for pairing with a JPEG that arrives after them
_PENDING_PREVIEWS = 8  # JPEGs kept for a Result that has not arrived yet
_CLIENT_QUEUE = 16
_RATE_WINDOW_S = 2.0
_PING_EVERY_S = 2.0

#: one message for a tab: text (JSON) or bytes (a frame: header length, JSON header, JPEG)
Message = str | bytes


def result_json(result: Result) -> dict[str, Any]:
    """A Result as plain JSON values (the page's overlays read these names)."""
    data: dict[str, Any] = to_jsonable(result)
    data.pop("received_monotonic", None)
    return data


def pack_frame(header: dict[str, Any], jpeg: bytes) -> bytes:
    """A binary frame message: 4-byte big-endian header length, the JSON header, then the JPEG."""
    encoded = json.dumps(header).encode()
    return struct.pack(">I", len(encoded)) + encoded + jpeg


@dataclass(eq=False)
class Client:
    """One tab: its outgoing queue (latest-wins) and what it missed."""

    queue: asyncio.Queue[Message] = field(default_factory=lambda: asyncio.Queue(_CLIENT_QUEUE))
    dropped: int = 0

    def offer(self, message: Message) -> None:
        """Queue a message, dropping the oldest when the tab is behind (call on the event loop)."""
        if self.queue.full():
            self.queue.get_nowait()
            self.dropped += 1
        self.queue.put_nowait(message)


class _Rate:
    """Events per second over the last :data:`_RATE_WINDOW_S`."""

    def __init__(self) -> None:
        self._times: collections.deque[float] = collections.deque()

    def tick(self, now: float) -> None:
        self._times.append(now)

    def per_second(self, now: float) -> float:
        while self._times and now - self._times[0] > _RATE_WINDOW_S:
            self._times.popleft()
        return len(self._times) / _RATE_WINDOW_S


class ViewHub:
    """Pairs a sensor's results with its preview JPEGs and fans them out to the tabs.

    Args:
        sensor: the open sensor (the viewer's one connection to it).
    """

    def __init__(self, sensor: Sensor) -> None:
        self.sensor = sensor
        self._loop: asyncio.AbstractEventLoop | None = None
        self._clients: set[Client] = set()
        self._lock = threading.Lock()
        self._pairs = FramePairs(results_kept=_RECENT_RESULTS, previews_kept=_PENDING_PREVIEWS)  # under _lock
        self._results = _Rate()
        self._frames = _Rate()
        self._rtt_s: float | None = None
        self._latency_ms: float | None = None
        self._started = time.monotonic()
        self._unsubscribe: list[Callable[[], None]] = []
        self._tasks: list[asyncio.Task[None]] = []
        self.connection = "connected"

    # ------------------------------------------------------------------ lifecycle (event loop)

    async def start(self) -> None:
        """Subscribe to the sensor and start the HUD's clock (on the server's event loop)."""
        self._loop = asyncio.get_running_loop()
        sensor = self.sensor
        self._unsubscribe = [
            sensor.on_result(self._on_result),
            sensor.on_preview(self._on_preview),
            sensor.on_health(self._on_health),
            sensor.on_reconnect(self._on_reconnect),
            sensor.session.on_link_lost(lambda _: self._set_connection("reconnecting")),
        ]
        self._tasks = [asyncio.create_task(self._hud_loop()), asyncio.create_task(self._ping_loop())]

    async def stop(self) -> None:
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def add_client(self) -> Client:
        client = Client()
        self._clients.add(client)
        return client

    def remove_client(self, client: Client) -> None:
        self._clients.discard(client)

    @property
    def clients(self) -> int:
        return len(self._clients)

    def broadcast(self, message: dict[str, Any]) -> None:
        """Send a JSON message to every tab (call on the event loop)."""
        text = json.dumps(message)
        for client in list(self._clients):
            client.offer(text)

    # ------------------------------------------------------------------ from the sensor's reader thread

    def _post(self, message: Message) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        def deliver() -> None:
            for client in list(self._clients):
                client.offer(message)

        try:
            loop.call_soon_threadsafe(deliver)
        except RuntimeError:  # the loop closed meanwhile
            pass

    def _on_result(self, result: Result) -> None:
        now = time.monotonic()
        capture_to_send = result.timings_us.get("capture_to_send")
        rtt = self._rtt_s
        if capture_to_send is not None and rtt is not None:
            self._latency_ms = capture_to_send / 1000 + rtt * 500
        with self._lock:
            self._results.tick(now)
            preview = self._pairs.add_result(result)
        if preview is not None:
            self._send_pair(result, preview)
        else:
            self._post(json.dumps({"type": "result", "result": result_json(result)}))

    def _on_preview(self, preview: PreviewFrame) -> None:
        with self._lock:
            result = self._pairs.add_preview(preview)
        if result is not None:  # else it waits for its result
            self._send_pair(result, preview)

    def _send_pair(self, result: Result, preview: PreviewFrame) -> None:
        with self._lock:
            self._frames.tick(time.monotonic())
        header = {
            "type": "frame",
            "frame_id": preview.frame_id,
            "width": preview.width,
            "height": preview.height,
            "timestamp_us": preview.timestamp_us,
            "result": result_json(result),
        }
        self._post(pack_frame(header, preview.jpeg))

    def _on_health(self, health: Health) -> None:
        self._set_connection("connected")

    def _on_reconnect(self, event: ReconnectEvent) -> None:
        self._set_connection("connected")
        self._post(
            json.dumps({"type": "event", "message": "device rebooted" if event.device_rebooted else "link back"})
        )

    def _set_connection(self, state: str) -> None:
        self.connection = state

    # ------------------------------------------------------------------ the HUD

    def hud(self) -> dict[str, Any]:
        """The figures of the heads-up display (the page adds the fps it shows)."""
        sensor = self.sensor
        now = time.monotonic()
        health = sensor.health
        stats = sensor.stats
        link = stats.link
        with self._lock:
            link_fps, preview_fps = self._results.per_second(now), self._frames.per_second(now)
        info = sensor.device_info
        return {
            "type": "hud",
            "sensor_fps": health.fps if health else None,
            "link_fps": round(link_fps, 2),
            "preview_fps": round(preview_fps, 2),
            "latency_ms": round(self._latency_ms, 1) if self._latency_ms is not None else None,
            "link_errors": {
                "crc": link.crc_errors,
                "drops": link.seq_lost + stats.results_dropped,
                "resyncs": link.resyncs,
                "decode": link.decode_errors,
                "device_dropped": health.results_dropped if health else 0,
            },
            "uptime_s": round(health.uptime_s if health else 0.0, 1),
            "viewer_uptime_s": round(now - self._started, 1),
            "connection": self.connection if sensor.connected else "reconnecting",
            "firmware": info.firmware_version if info else "",
            "models": _model_versions(info, health),
            "tabs": len(self._clients),
        }

    async def _hud_loop(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            try:
                self.broadcast(self.hud())
            except Exception:  # a HUD figure must not end the loop
                log.exception("HUD update failed")

    async def _ping_loop(self) -> None:
        """Measure the link's round trip, for the capture->host latency estimate."""
        while True:
            try:
                self._rtt_s = await asyncio.to_thread(self.sensor.ping, b"", 2.0)
            except SensorError as exc:
                log.debug("ping failed: %s", exc)
            await asyncio.sleep(_PING_EVERY_S)


def _model_versions(info: DeviceInfo | None, health: Health | None) -> list[str]:
    """The running models with their versions (``lane-v3-int8 3.1.0``), as far as the device told."""
    active = set(health.active_models) if health else set()
    models = info.models if info else ()
    shown = [f"{m.id} {m.version}" for m in models if (m.id in active if active else m.active)]
    return shown or sorted(active)

"""The viewer's web app: the page, its static files and one WebSocket per tab (Starlette).

WebSocket protocol (``/ws``), server to tab:

* text ``{"type": "hello", ...}`` on arrival: read-only or not, the device, tasks, the watched
  config values, the preview settings, the catalog and the sensor's models (when there is one);
* binary frames: 4-byte big-endian length, a JSON header ``{"type": "frame", "frame_id",
  "width", "height", "timestamp_us", "result": {...}}``, then the preview JPEG of that frame;
* text ``{"type": "result", "result": {...}}`` for a Result without a JPEG; ``{"type": "hud"}``
  once a second; ``{"type": "applied" | "error" | "state" | "progress" | "event"}`` for controls.

Tab to server: control messages (:mod:`seedcam.view._controls`).

Security: on a loopback address the page and the socket answer only requests whose ``Host`` is
a loopback name (no DNS rebinding); on any other address every request needs the token (the
``?token=`` the CLI prints). A WebSocket whose ``Origin`` is not the page's own is refused, and
``read_only`` refuses every control.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections.abc import AsyncIterator, Callable
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.requests import HTTPConnection, Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from seedcam._jsonable import to_jsonable
from seedcam.errors import SensorError
from seedcam.sensor import Sensor
from seedcam.view._controls import Controls
from seedcam.view._hub import ViewHub

__all__ = ["LOOPBACK_NAMES", "ViewOptions", "create_app"]

log = logging.getLogger(__name__)

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
#: WebSocket close code for a refused connection (policy violation)
POLICY_VIOLATION = 1008
STATIC = Path(str(resources.files("seedcam.view") / "static"))
KNOWN_TASKS = ("lane", "detect", "ocr", "classify")


class ViewOptions:
    """How the viewer serves.

    Args:
        token: required on every request (None: loopback only, checked by Host).
        read_only: refuse every control.
        preview: (fps, quality, max_width) to start the preview with; None: leave it off.
        catalog: a loaded :class:`seedcam.catalog.Catalog` to list and install from.
    """

    def __init__(
        self,
        *,
        token: str | None = None,
        read_only: bool = False,
        preview: tuple[float, int, int] | None = (10.0, 70, 320),
        catalog: Any = None,
    ) -> None:
        self.token = token
        self.read_only = read_only
        self.preview = preview
        self.catalog = catalog


def create_app(sensor: Sensor, options: ViewOptions | None = None) -> Starlette:
    """The viewer's Starlette app for an open sensor (the caller closes the sensor)."""
    options = options or ViewOptions()
    hub = ViewHub(sensor)
    install = _installer(sensor, options.catalog) if options.catalog is not None else None
    controls = Controls(sensor, read_only=options.read_only, install=install)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await hub.start()
        if options.preview is not None:
            fps, quality, width = options.preview
            answer = await controls.handle(
                {"action": "preview", "fps": fps, "quality": quality, "max_width": width}, lambda _: None
            )
            if answer["type"] == "error":
                log.warning("preview not started: %s", answer["message"])
        yield
        await hub.stop()

    def allowed(connection: HTTPConnection) -> str | None:
        """None when the request may go on, else why not."""
        if options.token is not None:
            given = connection.query_params.get("token", "")
            if not secrets.compare_digest(given.encode(), options.token.encode()):
                return "a token is required: open the URL seedcam view printed"
        else:
            host = urlsplit(f"//{connection.headers.get('host', '')}").hostname or ""
            if host not in LOOPBACK_NAMES:
                return f"this viewer answers on loopback names only, not {host!r}"
        return None

    async def index(request: Request) -> Response:
        refusal = allowed(request)
        if refusal is not None:
            return PlainTextResponse(refusal, status_code=403)
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    async def socket(websocket: WebSocket) -> None:
        refusal = allowed(websocket) or _origin_refusal(websocket)
        if refusal is not None:
            log.warning("refused a viewer connection: %s", refusal)
            await websocket.close(code=POLICY_VIOLATION, reason=refusal[:120])
            return
        await websocket.accept()
        client = hub.add_client()
        try:
            await websocket.send_text(json.dumps(await _hello(sensor, hub, controls, options)))
            await _serve(websocket, client.queue, hub, controls)
        except WebSocketDisconnect:
            pass
        finally:
            hub.remove_client(client)

    routes = [
        Route("/", index),
        WebSocketRoute("/ws", socket),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.hub = hub
    app.state.controls = controls
    return app


def _origin_refusal(websocket: WebSocket) -> str | None:
    """A browser's WebSocket must come from the viewer's own page (no cross-site socket hijacking)."""
    origin = websocket.headers.get("origin")
    if origin is None:
        return None  # not a browser: nothing to forge on its behalf
    if urlsplit(origin).netloc != websocket.headers.get("host", ""):
        return f"WebSocket from another origin ({origin}) refused"
    return None


async def _serve(websocket: WebSocket, queue: asyncio.Queue[str | bytes], hub: ViewHub, controls: Controls) -> None:
    """Send the tab its queue while reading its control messages, until it goes away."""

    writing = asyncio.Lock()  # the queue's sender and the control answers take turns on the socket

    async def sender() -> None:
        while True:
            message = await queue.get()
            async with writing:
                if isinstance(message, bytes):
                    await websocket.send_bytes(message)
                else:
                    await websocket.send_text(message)

    loop = asyncio.get_running_loop()

    def progress(message: dict[str, Any]) -> None:  # from the thread a control runs on
        loop.call_soon_threadsafe(_queue_text, queue, message)

    send_task = asyncio.create_task(sender())
    try:
        while True:
            text = await websocket.receive_text()
            answer = await _answer(text, controls, progress)
            async with writing:
                await websocket.send_text(json.dumps(answer))
            if answer["type"] == "applied" and answer.get("action") != "get":
                hub.broadcast({"type": "state", **{k: v for k, v in answer.items() if k not in ("type", "id")}})
    finally:
        send_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await send_task


def _queue_text(queue: asyncio.Queue[str | bytes], message: dict[str, Any]) -> None:
    if queue.full():
        queue.get_nowait()
    queue.put_nowait(json.dumps(message))


async def _answer(text: str, controls: Controls, progress: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    try:
        message = json.loads(text)
    except json.JSONDecodeError as exc:
        return {"type": "error", "id": None, "message": f"not JSON: {exc}"}
    if not isinstance(message, dict) or message.get("type") != "control":
        return {"type": "error", "id": None, "message": 'expected {"type": "control", "action": ...}'}
    return await controls.handle(message, progress)


async def _hello(sensor: Sensor, hub: ViewHub, controls: Controls, options: ViewOptions) -> dict[str, Any]:
    info = sensor.device_info
    enabled = list(info.tasks_enabled) if info else []
    hello: dict[str, Any] = {
        "type": "hello",
        "read_only": controls.read_only,
        "device": to_jsonable(info) if info else None,
        "tasks": {"enabled": enabled, "available": sorted(set(KNOWN_TASKS) | set(enabled))},
        "config": await controls.state(),
        "preview": controls.preview,
        "hud": hub.hud(),
    }
    if options.catalog is not None:
        hello["catalog"] = catalog_listing(options.catalog)
        try:
            hello["models"] = to_jsonable(await asyncio.to_thread(sensor.models))
        except SensorError as exc:
            log.debug("could not list the sensor's models: %s", exc)
    return hello


def catalog_listing(catalog: Any) -> list[dict[str, Any]]:
    """The catalog's entries as JSON (every version, newest last per name)."""
    return [to_jsonable(entry) for name in catalog.names() for entry in catalog.versions(name)]


def _installer(sensor: Sensor, catalog: Any) -> Callable[[str, str | None, Callable[[int, int], None]], dict[str, Any]]:
    from seedcam import catalog as catalog_api

    def install(name: str, version: str | None, progress: Callable[[int, int], None]) -> dict[str, Any]:
        entry = catalog.find(name, version)  # CatalogError naming what the catalog has
        report = catalog_api.install(sensor, catalog, entry.name, entry.version, progress=progress)
        info = sensor.info()  # the device info (and so the HUD's model versions) of the new model
        return {"installed": entry.id, "report": to_jsonable(report), "models": to_jsonable(info.models)}

    return install

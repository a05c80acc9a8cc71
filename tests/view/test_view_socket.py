"""The viewer's WebSocket protocol (Starlette's TestClient) against a device with a real preview stream."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterator
from typing import Any

import cv2
import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from preview_device import SQUARE, PreviewDevice  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402
from starlette.websockets import WebSocketDisconnect  # noqa: E402

from seedcam.view import ViewOptions, create_app  # noqa: E402
from seedcam.view._controls import READ_ONLY_MESSAGE  # noqa: E402

BASE = "http://127.0.0.1:8765"
WS = "ws://127.0.0.1:8765/ws"
_MAX_MESSAGES = 400


@pytest.fixture
def device() -> Iterator[PreviewDevice]:
    dev = PreviewDevice()
    dev.services.config["detect.score_threshold"] = 0.5
    dev.services.config["ocr.pattern"] = ""
    yield dev
    dev.close()


@pytest.fixture
def serve(device: PreviewDevice) -> Iterator[Callable[..., TestClient]]:
    """``serve(**ViewOptions)`` -> a TestClient of the viewer of ``device`` (lifespan running)."""
    clients: list[TestClient] = []

    def start(**options: Any) -> TestClient:
        options.setdefault("preview", (20.0, 70, 320))
        client = TestClient(create_app(device.connect(), ViewOptions(**options)), base_url=BASE)
        client.__enter__()
        clients.append(client)
        return client

    yield start
    for client in clients:
        client.__exit__(None, None, None)


def _unpack(data: bytes) -> tuple[dict[str, Any], bytes]:
    (length,) = struct.unpack(">I", data[:4])
    return json.loads(data[4 : 4 + length]), data[4 + length :]


def _next(ws: Any, want: Callable[[dict[str, Any]], bool], *, binary: bool = False) -> Any:
    """The next message that matches (text: its JSON; binary: (header, jpeg)); fails after many."""
    for _ in range(_MAX_MESSAGES):
        message = ws.receive()
        if message.get("type") == "websocket.close":
            pytest.fail(f"socket closed: {message}")
        if message.get("bytes") is not None:
            if binary:
                header, jpeg = _unpack(message["bytes"])
                if want(header):
                    return header, jpeg
            continue
        text = json.loads(message["text"])
        if not binary and want(text):
            return text
    pytest.fail("no such message")


def _control(ws: Any, ident: int, **fields: Any) -> dict[str, Any]:
    ws.send_text(json.dumps({"type": "control", "id": ident, **fields}))
    return _next(ws, lambda m: m.get("id") == ident and m["type"] in ("applied", "error"))


def test_each_jpeg_comes_with_the_result_of_its_own_frame(serve, device: PreviewDevice) -> None:  # noqa: ANN001
    client = serve(preview=(5.0, 70, 320))
    with client.websocket_connect(f"{WS}") as ws:
        hello = _next(ws, lambda m: m["type"] == "hello")
        assert hello["read_only"] is False and hello["device"]["serial_number"] == "SC-TEST-0001"
        assert hello["config"]["detect.score_threshold"] == 0.5 and hello["preview"]["fps"] == 5
        device.start_streaming(0.02)  # 50 results a second, 5 JPEGs
        for _ in range(3):
            header, jpeg = _next(ws, lambda h: h["type"] == "frame", binary=True)
            assert header["result"]["frame_id"] == header["frame_id"]
            assert header["result"]["detections"][0]["box"]["x_min"] == pytest.approx(SQUARE.x_min, abs=0.002)
            image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_GRAYSCALE)
            assert image.shape == (header["height"], header["width"]) == (240, 320)
            x0, y0, x1, y1 = SQUARE.to_pixels(320, 240)
            assert image[(y0 + y1) // 2, (x0 + x1) // 2] > 230  # the JPEG is the frame the box was found in
        alone = _next(ws, lambda m: m["type"] == "result")  # results without a JPEG still come, as JSON
        assert alone["result"]["detections"][0]["label"] == "stop"
        hud = _next(ws, lambda m: m["type"] == "hud")
        assert hud["link_fps"] > 10 and hud["connection"] == "connected" and hud["firmware"] == "0.1.0-test"
    assert len(device.sensors) == 1


def test_many_tabs_share_one_sensor_connection(serve, device: PreviewDevice) -> None:  # noqa: ANN001
    client = serve()
    with client.websocket_connect(f"{WS}") as one, client.websocket_connect(f"{WS}") as two:
        _next(one, lambda m: m["type"] == "hello")
        _next(two, lambda m: m["type"] == "hello")
        device.start_streaming(0.02)
        first = _next(one, lambda h: h["type"] == "frame", binary=True)[0]
        second = _next(two, lambda h: h["type"] == "frame", binary=True)[0]
        assert first["result"]["frame_id"] == first["frame_id"] and second["result"]["frame_id"] == second["frame_id"]
        assert _next(one, lambda m: m["type"] == "hud")["tabs"] == 2
    assert len(device.sensors) == 1 and client.app.state.hub.clients == 0  # type: ignore[attr-defined]


def test_a_control_round_trips_and_every_tab_sees_the_applied_value(serve, device: PreviewDevice) -> None:  # noqa: ANN001
    client = serve()
    with client.websocket_connect(f"{WS}") as ws, client.websocket_connect(f"{WS}") as other:
        _next(ws, lambda m: m["type"] == "hello")
        _next(other, lambda m: m["type"] == "hello")
        answer = _control(ws, 1, action="config", key="detect.score_threshold", value=0.35)
        assert answer == {
            "type": "applied",
            "id": 1,
            "action": "config",
            "key": "detect.score_threshold",
            "value": 0.35,
            "persisted": False,
            "note": "applied; not saved (lasts until the firmware restarts)",
        }
        assert device.services.config["detect.score_threshold"] == 0.35
        state = _next(other, lambda m: m["type"] == "state")
        assert (state["key"], state["value"]) == ("detect.score_threshold", 0.35)
        tasks = _control(ws, 2, action="tasks", value=["lane", "ocr"])
        assert tasks["value"] == ["lane", "ocr"] and device.services.tasks_enabled == ("lane", "ocr")
        preview = _control(ws, 3, action="preview", fps=4, quality=50, max_width=160)
        assert preview["value"]["fps"] == 4 and preview["value"]["quality"] == 50
        assert device.stream.active
        read = _control(ws, 4, action="get", key="detect.score_threshold")
        assert read["value"] == 0.35
        saved = _control(ws, 5, action="save")  # the fake device has no config file to save into
        assert saved["value"] == {"detect.score_threshold": False, "ocr.pattern": False}
        assert saved["note"].startswith("not saved: the firmware has no config file")


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("not json", "not JSON"),
        (json.dumps({"type": "hello"}), "expected"),
        (json.dumps({"type": "control", "id": 5, "action": "launch"}), "unknown control 'launch'"),
        (json.dumps({"type": "control", "id": 6, "action": "config", "key": 3, "value": 1}), "dotted config key"),
        (json.dumps({"type": "control", "id": 7, "action": "config", "key": "no.such", "value": 1}), "sensor refused"),
        (json.dumps({"type": "control", "id": 8, "action": "tasks", "value": ["warp"]}), "no such task: warp"),
        (json.dumps({"type": "control", "id": 9, "action": "preview", "fps": "fast"}), "must be numbers"),
        (json.dumps({"type": "control", "id": 10, "action": "preview", "fps": 500}), "at most 60"),
        (json.dumps({"type": "control", "id": 11, "action": "install", "name": "x"}), "no catalog"),
    ],
)
def test_bad_messages_get_a_clear_error_and_the_socket_stays_up(serve, message: str, expected: str) -> None:  # noqa: ANN001
    client = serve()
    with client.websocket_connect(f"{WS}") as ws:
        _next(ws, lambda m: m["type"] == "hello")
        ws.send_text(message)
        error = _next(ws, lambda m: m["type"] == "error")
        assert expected in error["message"]
        assert _control(ws, 99, action="get", key="ocr.pattern")["type"] == "applied"


def test_read_only_refuses_every_control_but_reading(serve, device: PreviewDevice) -> None:  # noqa: ANN001
    client = serve(read_only=True)
    with client.websocket_connect(f"{WS}") as ws:
        assert _next(ws, lambda m: m["type"] == "hello")["read_only"] is True
        for ident, fields in enumerate(
            [
                {"action": "config", "key": "detect.score_threshold", "value": 0.9},
                {"action": "tasks", "value": []},
                {"action": "preview", "fps": 1},
            ]
        ):
            answer = _control(ws, ident, **fields)
            assert answer["type"] == "error" and answer["message"] == READ_ONLY_MESSAGE
        assert _control(ws, 50, action="get", key="detect.score_threshold")["value"] == 0.5
    assert device.services.config["detect.score_threshold"] == 0.5 and device.services.tasks_enabled == ("lane",)


def test_a_token_viewer_refuses_requests_without_it(serve) -> None:  # noqa: ANN001
    client = serve(token="s3cret")
    assert client.get("/").status_code == 403
    assert client.get("/?token=wrong").status_code == 403
    page = client.get("/?token=s3cret")
    assert page.status_code == 200 and "<canvas" in page.text
    with pytest.raises(WebSocketDisconnect) as refused, client.websocket_connect(f"{WS}"):
        pass
    assert refused.value.code == 1008
    with client.websocket_connect(f"{WS}?token=s3cret") as ws:
        assert _next(ws, lambda m: m["type"] == "hello")["type"] == "hello"


def test_a_socket_from_another_origin_is_refused(serve) -> None:  # noqa: ANN001
    client = serve()
    with pytest.raises(WebSocketDisconnect) as refused:
        with client.websocket_connect(f"{WS}", headers={"origin": "http://evil.example"}):
            pass
    assert refused.value.code == 1008
    with client.websocket_connect(f"{WS}", headers={"origin": BASE}) as ws:
        assert _next(ws, lambda m: m["type"] == "hello")["type"] == "hello"


def test_on_loopback_a_foreign_host_name_is_refused(serve) -> None:  # noqa: ANN001
    client = serve()
    assert client.get("/", headers={"host": "attacker.example:8765"}).status_code == 403  # DNS rebinding
    assert client.get("/").status_code == 200
    assert client.get("/static/view.js").status_code == 200

"""The MQTT bridge against a real mosquitto: many sensors, retained state, QoS 1 sequences, commands, config, OTA.

The sensors are in-process devices (tests/sdk/fake_device.py: the firmware's real link
server and dispatcher and the real SDK over pair://, the camera side faked); 20 firmware
processes would not fit on two cores. The SIGKILL test runs the bridge CLI as its own
process against the real firmware on a pty (tests/fleet/test_bridge_process.py).
"""

# ruff: noqa: F811  (tests take the fixtures imported from fake_device as parameters)

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
from fake_device import FakeDevice, make_device  # noqa: F401 - fixture
from mqtt_broker import PASSWORD, USERNAME, Mosquitto
from mqtt_watch import Watcher

from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import BrokerError
from seedcam.fleet import BridgeOptions, MqttBridge, OtaPolicy, parse_broker_url, sign_ota_request
from seedcam.types import Box, Detection, LaneState, LaneStatus, Result

pytestmark = pytest.mark.timeout(120)

Bridges = Callable[..., MqttBridge]


@pytest.fixture
def bridges() -> Iterator[Bridges]:
    """``bridges(sensor, url, **options)``: started bridges, all stopped at teardown."""
    made: list[MqttBridge] = []

    def start(sensor: object, url: str, **options: object) -> MqttBridge:
        bridge = MqttBridge(sensor, parse_broker_url(url), BridgeOptions(**options))  # type: ignore[arg-type]
        made.append(bridge)
        return bridge.start()

    yield start
    for bridge in made:
        bridge.stop()


def result(frame_id: int, *, sign: bool = False, lane: LaneStatus = LaneStatus.OK) -> Result:
    detections = (Detection(0, "stop", 0.9, Box(0.1, 0.1, 0.3, 0.3)),) if sign else ()
    return Result(
        frame_id=frame_id,
        capture_timestamp_us=1_000_000 + frame_id * 33_333,
        lane=LaneState(lane, 0.05, 0.01, 0.0, 0.9, 0.9, 0.9, 0.6),
        detections=detections,
        frame_width=320,
        frame_height=240,
    )


def seqs(messages: list[object], key: str = "seq") -> list[int]:
    return [int(m.user[key]) for m in messages]  # type: ignore[attr-defined]


def test_twenty_sensors_one_broker_every_stream_in_sequence(
    mqtt_broker: Mosquitto, make_device: Callable[..., FakeDevice], bridges: Bridges, topic_base: str
) -> None:
    watcher = Watcher(mqtt_broker.plain_port, f"{topic_base}/#", f"{topic_base}-ha/#")
    devices = [make_device() for _ in range(20)]
    for index, device in enumerate(devices):
        bridges(
            device.sensor,
            mqtt_broker.url,
            base=topic_base,
            device_id=f"dev{index:02d}",
            results_qos=1,
            health_interval=0.5,
            discovery_prefix=f"{topic_base}-ha",
        )
    frames = 25
    for frame in range(frames):
        for device in devices:
            # a stop sign shows in frames 5..9: appeared + stop_sign, then ended
            assert device.server.send_result(result(frame, sign=5 <= frame < 10, lane=LaneStatus.OK))
    for index, device in enumerate(devices):
        root = f"{topic_base}/dev{index:02d}"
        watcher.wait(lambda root=root: len(watcher.on(f"{root}/results")) >= frames, 30, f"{root}'s results")
        results = watcher.on(f"{root}/results")
        assert seqs(results) == list(range(1, frames + 1)), f"{root}: results out of sequence"
        assert [pb.Result.FromString(m.payload).frame_id for m in results] == list(range(frames))
        status = watcher.wait_json(f"{root}/status", lambda s: s["state"] == "online")
        assert status["boot_id"] == device.services.boot_id
        watcher.wait_json(f"{root}/health", lambda h: h["seq"] >= 2, 10)
        health = [m.json()["seq"] for m in watcher.on(f"{root}/health")]
        assert health == list(range(1, len(health) + 1))
        watcher.wait(lambda root=root: len(watcher.on(f"{root}/events")) >= 3, 10, f"{root}'s events")
        events = [m.json() for m in watcher.on(f"{root}/events")]
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert [e["kind"] for e in events] == ["detection_appeared", "stop_sign", "detection_ended"]
        assert events[0]["frame_id"] == 5 and events[2]["last_frame"] == 9
        info = watcher.last(f"{root}/info")
        assert info is not None and info.json()["device"]["firmware_version"] == "0.1.0-test"
    watcher.close()
    late = Watcher(mqtt_broker.plain_port, f"{topic_base}-ha/#", f"{topic_base}/+/status")  # retained only
    node = "seedcam_dev00"
    late.wait(lambda: len(late.on(f"{topic_base}-ha/image/{node}/snapshot/config")) == 1, what="retained discovery")
    config = late.last(f"{topic_base}-ha/sensor/{node}/lane_offset/config")
    assert config is not None and config.retain
    assert json.loads(config.payload)["state_topic"] == f"{topic_base}/dev00/summary"
    late.wait(lambda: len({m.topic for m in late.messages if m.topic.endswith("/status")}) == 20, what="20 statuses")
    assert all(m.retain for m in late.messages)
    late.close()


def test_config_set_reaches_the_device_and_config_state_reports_it(
    mqtt_broker: Mosquitto, make_device: Callable[..., FakeDevice], bridges: Bridges, topic_base: str
) -> None:
    device = make_device()
    # a rate limit no slow machine outlasts between the two snapshot requests below
    bridges(
        device.sensor, mqtt_broker.url, base=topic_base, device_id="cam", discovery=False, snapshot_min_interval=600
    )
    watcher = Watcher(mqtt_broker.plain_port, f"{topic_base}/#")
    root = f"{topic_base}/cam"
    watcher.publish(f"{root}/config/set", {"version": 3, "config": {"camera.fps": 15, "no.such": 1}}, retain=True)
    state = watcher.wait_json(f"{root}/config/state", lambda s: s["version"] == 3)
    assert device.services.config["camera.fps"] == 15
    assert state["reported"] == {"camera.fps": 15}
    assert "NOT_FOUND" in state["refused"]["no.such"]
    answer = watcher.request(f"{root}/config/set", {"version": 2, "config": {"camera.fps": 10}})
    assert answer == {"ok": False, "error": "stale_version", "message": "config version 2 is not newer than 3"}
    assert device.services.config["camera.fps"] == 15
    # commands: MQTT 5 request / response with correlation data
    assert watcher.request(f"{root}/cmd/ping")["ok"]
    assert watcher.request(f"{root}/cmd/select_tasks", {"tasks": ["detection"]})["result"]["enabled"] == ["detection"]
    unknown = watcher.request(f"{root}/cmd/format_disk")
    assert unknown["error"] == "unknown_command" and "ping" in unknown["message"]
    assert "snapshot" not in device.services.calls  # no periodic snapshots unless asked for
    snap = watcher.request(f"{root}/cmd/snapshot")
    assert snap["ok"] and snap["result"]["bytes"] == len(device.services.snapshot(0).jpeg)
    watcher.wait(lambda: watcher.last(f"{root}/snapshot") is not None, what="the snapshot JPEG")
    assert watcher.last(f"{root}/snapshot").payload.startswith(b"\xff\xd8")  # type: ignore[union-attr]
    assert watcher.request(f"{root}/cmd/snapshot")["error"] == "rate_limited"
    watcher.publish(f"{root}/config/set", {}, retain=True)  # clear the retained desired state
    watcher.close()


def test_read_only_bridge_refuses_writes(
    mqtt_broker: Mosquitto, make_device: Callable[..., FakeDevice], bridges: Bridges, topic_base: str
) -> None:
    device = make_device()
    bridges(device.sensor, mqtt_broker.url, base=topic_base, device_id="ro", discovery=False, read_only=True)
    watcher = Watcher(mqtt_broker.plain_port, f"{topic_base}/#")
    answer = watcher.request(f"{topic_base}/ro/config/set", {"camera.fps": 5})
    assert answer["error"] == "read_only"
    assert watcher.request(f"{topic_base}/ro/cmd/select_tasks", {"tasks": []})["error"] == "unknown_command"
    assert device.services.config["camera.fps"] == 30 and "config_set" not in device.services.calls
    watcher.close()


def test_ota_set_with_a_bad_signature_is_refused_and_reported(
    mqtt_broker: Mosquitto, make_device: Callable[..., FakeDevice], bridges: Bridges, topic_base: str, tmp_path
) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    trusted = ed25519.Ed25519PrivateKey.generate()
    seed = trusted.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    public = trusted.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    device = make_device()
    policy = OtaPolicy(tmp_path.as_uri(), (public,))
    bridges(device.sensor, mqtt_broker.url, base=topic_base, device_id="ota", discovery=False, ota=policy)
    watcher = Watcher(mqtt_broker.plain_port, f"{topic_base}/#")
    root = f"{topic_base}/ota"
    good = sign_ota_request("lane", "2.0.0", "ab" * 32, seed)
    tampered = {**good, "sha256": "cd" * 32}
    answer = watcher.request(f"{root}/ota/set", tampered)
    assert answer["error"] == "bad_signature"
    state = watcher.wait_json(f"{root}/ota/state", lambda s: s["state"] == "refused")
    assert state["reason"] == "bad_signature" and state["sha256"] == "cd" * 32
    other = sign_ota_request("lane", "2.0.0", "ab" * 32, bytes(32))
    assert watcher.request(f"{root}/ota/set", other)["error"] == "unknown_key"
    assert watcher.request(f"{root}/ota/set", {"bundle": "AAAA"})["error"] == "bad_request"
    # signed right, but the catalog (an empty folder) cannot be trusted: refused before anything is sent
    refused = watcher.request(f"{root}/ota/set", good)
    assert refused["error"] == "catalog"
    assert not [c for c in device.services.calls if "update" in c or "transfer" in c]
    watcher.close()


def test_tls_with_the_test_ca_and_a_wrong_password_refused(
    mqtt_broker: Mosquitto, make_device: Callable[..., FakeDevice], bridges: Bridges, topic_base: str
) -> None:
    device = make_device()
    watcher = Watcher(mqtt_broker.plain_port, f"{topic_base}/#")
    tls = f"mqtts://127.0.0.1:{mqtt_broker.tls_port}"
    bridges(device.sensor, tls, base=topic_base, device_id="tls", discovery=False, ca_file=str(mqtt_broker.ca_file))
    watcher.wait_json(f"{topic_base}/tls/status", lambda s: s["state"] == "online")
    with pytest.raises(BrokerError, match="certificate verify failed") as unverified:
        bridges(device.sensor, tls, base=topic_base, device_id="tls2", discovery=False)  # the system's CAs
    assert not unverified.value.refused
    with pytest.raises(BrokerError, match="refused") as wrong:
        bridges(device.sensor, f"mqtt://{USERNAME}:wrong@127.0.0.1:{mqtt_broker.auth_port}", base=topic_base)
    assert wrong.value.refused
    good = f"mqtt://{USERNAME}:{PASSWORD}@127.0.0.1:{mqtt_broker.auth_port}"
    bridges(device.sensor, good, base=topic_base, device_id="auth", discovery=False)
    watcher.wait_json(f"{topic_base}/auth/status", lambda s: s["state"] == "online")
    watcher.close()


def test_clean_stop_publishes_offline(
    mqtt_broker: Mosquitto, make_device: Callable[..., FakeDevice], bridges: Bridges, topic_base: str
) -> None:
    device = make_device()
    bridge = bridges(device.sensor, mqtt_broker.url, base=topic_base, device_id="stop", discovery=False)
    watcher = Watcher(mqtt_broker.plain_port, f"{topic_base}/#")
    watcher.wait_json(f"{topic_base}/stop/status", lambda s: s["state"] == "online")
    bridge.stop()
    offline = watcher.wait_json(f"{topic_base}/stop/status", lambda s: s["state"] == "offline")
    assert offline["reason"] == "stopped"
    watcher.close()

"""A broker restart under running bridges: they reconnect, republish retained state, and deliver the outage's events.

The broker here is a dedicated one (restarting the shared one would break the other
tests), with persistence in its folder so that the consumer's persistent session (and the
QoS 1 messages queued for it) survives the restart, as a fleet backend's would.
"""

# ruff: noqa: F811

from __future__ import annotations

from collections.abc import Callable

import pytest
from fake_device import FakeDevice, make_device, wait_until  # noqa: F401 - fixture
from mqtt_broker import Mosquitto
from mqtt_watch import Watcher

from seedcam.fleet import BridgeOptions, MqttBridge, parse_broker_url
from seedcam.types import Box, Detection, Result

pytestmark = pytest.mark.timeout(120)


def with_sign(frame_id: int, x: float) -> Result:
    """A result with one stop sign at ``x`` (a jump of it is a ``detection_changed`` event)."""
    box = Box(x, 0.1, x + 0.2, 0.3)
    return Result(frame_id=frame_id, capture_timestamp_us=frame_id, detections=(Detection(0, "stop", 0.9, box),))


def test_broker_restart_reconnects_republishes_and_delivers_queued_events(
    make_broker: Callable[..., Mosquitto], make_device: Callable[..., FakeDevice]
) -> None:
    broker = make_broker(persistence=True)
    watcher = Watcher(broker.plain_port, "fleet/#", persistent=True)
    devices = [make_device() for _ in range(5)]
    bridges = []
    for index, device in enumerate(devices):
        options = BridgeOptions(
            base="fleet", device_id=f"d{index}", discovery=False, reconnect_min_s=0.2, reconnect_max_s=1.0
        )
        bridges.append(MqttBridge(device.sensor, parse_broker_url(broker.url), options).start())
    try:
        for device in devices:
            assert device.server.send_result(with_sign(0, 0.0))  # appeared + stop_sign: events 1, 2
        for index in range(5):
            watcher.wait(lambda i=index: len(watcher.on(f"fleet/d{i}/events")) == 2, what=f"d{index}'s events")
        broker.stop()
        wait_until(lambda: not any(b.connected for b in bridges), 10, "every bridge to see the broker gone")
        for frame in range(1, 6):  # the sign jumps each frame: one detection_changed each, 5 queued per bridge
            for device in devices:
                assert device.server.send_result(with_sign(frame, frame * 0.08))
        wait_until(lambda: all(b.stats.events_published == 7 for b in bridges), 10, "the outage's events queued")
        broker.start()
        for index, bridge in enumerate(bridges):
            root = f"fleet/d{index}"
            status = watcher.wait_json(f"{root}/status", lambda s: s["state"] == "online" and s["connection"] == 2)
            assert status["bridge_id"] == bridge.bridge_id
            watcher.wait(
                lambda r=root: len({m.json()["seq"] for m in watcher.on(f"{r}/events")}) == 7,
                20,
                f"{root}'s outage events",
            )
            events = {m.json()["seq"]: m.json() for m in watcher.on(f"{root}/events")}  # a resend may repeat one
            assert sorted(events) == list(range(1, 8))
            assert [events[s]["kind"] for s in range(3, 8)] == ["detection_changed"] * 5
            assert [events[s]["frame_id"] for s in range(3, 8)] == [1, 2, 3, 4, 5]
            assert bridge.stats.events_dropped == 0 and bridge.stats.connections == 2
        late = Watcher(broker.plain_port, "fleet/+/info")  # the retained state is there again
        late.wait(lambda: len(late.messages) == 5, what="5 retained infos")
        late.close()
    finally:
        for bridge in bridges:
            bridge.stop()
        watcher.close()


def test_outage_queue_is_bounded_and_drops_are_counted(
    make_broker: Callable[..., Mosquitto], make_device: Callable[..., FakeDevice]
) -> None:
    broker = make_broker()
    device = make_device()
    options = BridgeOptions(base="q", device_id="d", discovery=False, queue_limit=3, reconnect_min_s=0.2)
    bridge = MqttBridge(device.sensor, parse_broker_url(broker.url), options).start()
    try:
        # the connection's own QoS 1 messages (status, info) acknowledged: the queue is empty before the outage
        assert bridge.wait_acknowledged(10), f"{bridge.unacknowledged} messages not acknowledged"
        broker.stop()
        wait_until(lambda: not bridge.connected, 10, "the bridge to see the broker gone")
        for frame in range(6):  # appeared + stop_sign, then 5 changes: 7 events
            assert device.server.send_result(with_sign(frame, frame * 0.08))
        wait_until(lambda: bridge.stats.events_published + bridge.stats.events_dropped == 7, 10, "7 events")
        assert (bridge.stats.events_published, bridge.stats.events_dropped) == (3, 4)  # exactly the limit fits
        assert bridge.unacknowledged == 3
    finally:
        bridge.stop()


def test_an_event_reusing_the_message_id_of_a_result_is_waited_for_through_an_outage(
    make_broker: Callable[..., Mosquitto], make_device: Callable[..., FakeDevice]
) -> None:
    """paho numbers QoS 0 and QoS 1 messages from one counter (1..65535, then again) and calls
    ``on_publish`` for both: after a whole round of result ids, an event still counts until its PUBACK."""
    broker = make_broker()
    device = make_device()
    options = BridgeOptions(base="ids", device_id="d", discovery=False, reconnect_min_s=0.2)
    bridge = MqttBridge(device.sensor, parse_broker_url(broker.url), options).start()
    watcher = Watcher(broker.plain_port, "ids/d/last")
    try:
        assert bridge.wait_acknowledged(10), f"{bridge.unacknowledged} messages not acknowledged"
        for _ in range(65535):  # QoS 0, as results: every message id once
            assert bridge.publish("ids/d/results", b"r") == 0
        assert bridge.publish("ids/d/last", b"r") == 0  # written after all of them
        watcher.wait(lambda: watcher.on("ids/d/last"), 30, "the last QoS 0 message")
        broker.stop()
        wait_until(lambda: not bridge.connected, 10, "the bridge to see the broker gone")
        assert bridge.publish("ids/d/events", b"{}", qos=1) == 4  # queued by paho (MQTT_ERR_NO_CONN)
        assert bridge.unacknowledged == 1
        assert not bridge.wait_acknowledged(0)
        broker.start()
        assert bridge.wait_acknowledged(20), f"{bridge.unacknowledged} messages not acknowledged"
    finally:
        bridge.stop()
        watcher.close()

"""Periodic snapshots (``snapshot_interval``): rate-limited, published on ``snapshot``, never holding up results.

The sensors are in-process devices (tests/sdk/fake_device.py) whose snapshot can be held
on the device side (``snapshot_gate``), so a test sees what the bridge does while a JPEG is
still coming.
"""

# ruff: noqa: F811

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from fake_device import FAKE_JPEG, FakeDevice, make_device, make_result, wait_until  # noqa: F401 - fixture
from mqtt_broker import Mosquitto
from mqtt_watch import Watcher

from seedcam.fleet import BridgeOptions, MqttBridge, parse_broker_url

pytestmark = pytest.mark.timeout(120)


def test_results_keep_flowing_while_a_periodic_snapshot_comes_and_the_rate_holds(
    mqtt_broker: Mosquitto, make_device: Callable[..., FakeDevice], topic_base: str
) -> None:
    interval = 0.2
    device = make_device()
    gate = threading.Event()
    device.services.snapshot_gate = gate  # the device holds the first snapshot until the test lets it go
    root = f"{topic_base}/snap"
    watcher = Watcher(mqtt_broker.plain_port, f"{root}/snapshot", f"{root}/results")
    options = BridgeOptions(
        base=topic_base, device_id="snap", discovery=False, snapshot_interval=interval, snapshot_min_interval=interval
    )
    started = time.monotonic()
    bridge = MqttBridge(device.sensor, parse_broker_url(mqtt_broker.url), options).start()
    try:
        wait_until(device.services.snapshot_entered.is_set, what="the first periodic snapshot to be under way")
        for frame in range(20):
            assert device.server.send_result(make_result(frame))
        watcher.wait(lambda: len(watcher.on(f"{root}/results")) == 20, what="the results sent during the snapshot")
        assert watcher.on(f"{root}/snapshot") == [] and device.services.calls.count("snapshot") == 1
        gate.set()
        watcher.wait(lambda: len(watcher.on(f"{root}/snapshot")) >= 4, what="four periodic snapshots")
        snapshots = watcher.on(f"{root}/snapshot")
        assert all(m.payload == FAKE_JPEG for m in snapshots)
        assert [int(m.user["seq"]) for m in snapshots] == list(range(1, len(snapshots) + 1))
        assert {(m.user["source"], m.user["frame_id"], m.user["width"]) for m in snapshots} == {
            ("periodic", "42", "320")
        }
        taken = device.services.calls.count("snapshot")
        assert taken <= (time.monotonic() - started) / interval + 1  # never more often than the interval
    finally:
        bridge.stop()
    assert bridge.stats.snapshots_published >= 4


def test_a_request_within_the_rate_limit_of_a_periodic_snapshot_is_refused(
    mqtt_broker: Mosquitto, make_device: Callable[..., FakeDevice], topic_base: str
) -> None:
    device = make_device()
    root = f"{topic_base}/slow"
    watcher = Watcher(mqtt_broker.plain_port, f"{root}/#")
    options = BridgeOptions(base=topic_base, device_id="slow", discovery=False, snapshot_interval=60.0)
    bridge = MqttBridge(device.sensor, parse_broker_url(mqtt_broker.url), options).start()
    try:
        watcher.wait(lambda: watcher.last(f"{root}/snapshot") is not None, what="the first periodic snapshot")
        first = watcher.last(f"{root}/snapshot")
        assert first is not None and first.user["source"] == "periodic" and first.payload[:2] == b"\xff\xd8"
        refused = watcher.request(f"{root}/cmd/snapshot")
        assert refused["ok"] is False and refused["error"] == "rate_limited" and "retry in" in refused["message"]
        assert device.services.calls.count("snapshot") == 1
    finally:
        bridge.stop()
    watcher.close()
    with pytest.raises(ValueError, match="at least the rate limit"):
        BridgeOptions(snapshot_interval=0.5, snapshot_min_interval=2.0)

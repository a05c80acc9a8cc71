"""Which QoS 1 messages the bridge still waits for, with paho driven as it drives the bridge.

paho-mqtt 2 numbers every publish from one counter (1..65535, then 1 again), QoS 0 ones
included, and calls ``on_publish`` for a QoS 0 message too, once written. A QoS 1
message's PUBACK may be handled on paho's network thread before the publishing thread
is back from ``publish()``. :class:`FakePaho` does both, without a broker.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

import seedcam.fleet.bridge as bridge_module
from seedcam.fleet import BridgeOptions, MqttBridge, parse_broker_url
from seedcam.fleet._acks import Unacked

_MAX_MID = 65535  #: paho's message ids wrap after this one


class FakePaho:
    """paho's ``Client`` as far as publishing and ``on_publish`` go.

    Args:
        ack_in_publish: a QoS 1 message is acknowledged before ``publish()`` returns (the
            PUBACK outruns the publishing thread); otherwise it waits for :meth:`puback`.
    """

    def __init__(self, *, ack_in_publish: bool = False) -> None:
        self.ack_in_publish = ack_in_publish
        self.on_publish: Any = None
        self.on_connect: Any = None
        self.on_disconnect: Any = None
        self.on_message: Any = None
        self.in_flight: list[int] = []  #: QoS 1 ids sent and not acknowledged yet
        self._last_mid = 0

    def will_set(self, *args: Any, **kwargs: Any) -> None:
        pass

    def reconnect_delay_set(self, *args: Any) -> None:
        pass

    def max_queued_messages_set(self, *args: Any) -> None:
        pass

    def publish(
        self, topic: str, payload: Any = None, qos: int = 0, retain: bool = False, properties: Any = None
    ) -> mqtt.MQTTMessageInfo:
        self._last_mid = self._last_mid % _MAX_MID + 1
        info = mqtt.MQTTMessageInfo(self._last_mid)
        info.rc = mqtt.MQTT_ERR_SUCCESS
        if qos == 0 or self.ack_in_publish:
            self._acknowledge(info.mid)  # a QoS 0 message: once written
        else:
            self.in_flight.append(info.mid)
        return info

    def puback(self, mid: int) -> None:
        """The broker's PUBACK for ``mid``."""
        self.in_flight.remove(mid)
        self._acknowledge(mid)

    def _acknowledge(self, mid: int) -> None:
        self.on_publish(self, None, mid, ReasonCode(PacketTypes.PUBACK), Properties(PacketTypes.PUBACK))


def make_bridge(monkeypatch: pytest.MonkeyPatch, paho: FakePaho) -> MqttBridge:
    """A bridge on ``paho`` (never started: publishing needs no connection here)."""
    monkeypatch.setattr(bridge_module, "make_client", lambda *args, **kwargs: paho)
    sensor = SimpleNamespace(device_info=None)
    options = BridgeOptions(base="acks", device_id="d", discovery=False)
    return MqttBridge(sensor, parse_broker_url("mqtt://127.0.0.1:1883"), options)  # type: ignore[arg-type]


def test_a_qos1_message_reusing_the_id_of_a_written_qos0_one_is_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    paho = FakePaho()
    bridge = make_bridge(monkeypatch, paho)
    for _ in range(_MAX_MID):  # results at QoS 0: every id once, each "acknowledged" by on_publish
        assert bridge.publish("acks/d/results", b"r") == 0
    assert bridge.publish_json("acks/d/events", {"seq": 1}, qos=1) == 0  # id 1 again
    assert paho.in_flight == [1]
    assert bridge.unacknowledged == 1
    assert not bridge.wait_acknowledged(0)
    paho.puback(1)
    assert bridge.unacknowledged == 0
    assert bridge.wait_acknowledged(0)


def test_a_puback_that_outruns_the_publishing_thread_is_not_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    paho = FakePaho(ack_in_publish=True)
    bridge = make_bridge(monkeypatch, paho)
    for seq in range(3):
        assert bridge.publish_json("acks/d/events", {"seq": seq}, qos=1) == 0
    assert bridge.unacknowledged == 0
    assert bridge.wait_acknowledged(0)


def test_an_id_acknowledged_before_a_publish_began_is_not_that_publish_s_acknowledgement() -> None:
    acks = Unacked()
    first = acks.begin()
    acks.acknowledged(7)  # a QoS 0 message written while the first publish is under way
    second = acks.begin()
    acks.end(second, 7)  # paho gave 7 again: that acknowledgement was not this message's
    acks.end(first, 8)
    assert acks.count == 2
    acks.acknowledged(7)
    acks.acknowledged(8)
    assert acks.wait_empty(0)


def test_pubacks_that_outrun_concurrent_publishes_are_matched_to_them() -> None:
    acks = Unacked()
    first, second = acks.begin(), acks.begin()
    acks.acknowledged(3)  # second's PUBACK, before second is back from paho
    acks.end(second, 3)
    acks.end(first, 2)
    assert acks.count == 1
    acks.acknowledged(2)
    assert acks.wait_empty(0)

"""A test's MQTT 5 subscriber (paho-mqtt): keeps every message it got, waits on conditions, asks commands."""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

__all__ = ["Message", "Watcher"]


@dataclass(frozen=True)
class Message:
    topic: str
    payload: bytes
    retain: bool
    user: dict[str, str]
    received: float  #: time.monotonic() on arrival

    def json(self) -> Any:
        return json.loads(self.payload)


class Watcher:
    """Subscribe to ``topics`` on the plain listener of a broker at 127.0.0.1:``port``.

    ``persistent=True`` keeps the session (and its QoS 1 messages) across a broker restart
    when the broker has persistence; the client reconnects by itself either way.
    """

    def __init__(self, port: int, *topics: str, persistent: bool = False) -> None:
        self._cond = threading.Condition()
        self.messages: list[Message] = []
        self.topics = topics
        self.client = mqtt.Client(
            callback_api_version=mqtt.CallbackAPIVersion.VERSION2,
            client_id=f"watch-{uuid.uuid4().hex[:10]}",
            protocol=mqtt.MQTTv5,
        )
        self.client.reconnect_delay_set(0.05, 0.2)  # type: ignore[arg-type]
        self.client.on_connect = self._on_connect
        self.client.on_message = self._on_message
        self._subscribed = threading.Event()
        properties = None
        if persistent:
            properties = Properties(PacketTypes.CONNECT)
            properties.SessionExpiryInterval = 600
        self.client.connect("127.0.0.1", port, keepalive=10, clean_start=not persistent, properties=properties)
        self.client.loop_start()
        if not self._subscribed.wait(10):
            pytest.fail("the watcher did not get its subscription acknowledged")

    def _on_connect(self, client: Any, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        if reason.is_failure:
            return
        if not flags.session_present or not self._subscribed.is_set():
            client.subscribe([(t, 1) for t in self.topics])
        client.on_subscribe = lambda *a: self._subscribed.set()

    def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
        user = dict(getattr(message.properties, "UserProperty", None) or [])
        with self._cond:
            self.messages.append(
                Message(message.topic, bytes(message.payload), bool(message.retain), user, time.monotonic())
            )
            self._cond.notify_all()

    def on(self, topic: str) -> list[Message]:
        with self._cond:
            return [m for m in self.messages if m.topic == topic]

    def last(self, topic: str) -> Message | None:
        found = self.on(topic)
        return found[-1] if found else None

    def wait(self, condition: Any, timeout: float = 10.0, what: str = "messages") -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not condition():
                left = deadline - time.monotonic()
                if left <= 0:
                    pytest.fail(f"timed out after {timeout} s waiting for {what}")
                self._cond.wait(left)

    def wait_json(self, topic: str, predicate: Any, timeout: float = 10.0) -> Any:
        """The first JSON message on ``topic`` for which ``predicate(value)`` holds."""
        found: list[Any] = []

        def check() -> bool:
            for message in self.on(topic):
                value = message.json()
                if predicate(value):
                    found.append(value)
                    return True
            return False

        self.wait(check, timeout, f"a matching message on {topic}")
        return found[0]

    def request(self, topic: str, args: Any = None, timeout: float = 10.0) -> Any:
        """Publish a request with an MQTT 5 response topic and correlation data; return the answer's JSON."""
        reply = f"{topic}/reply-{uuid.uuid4().hex[:8]}"
        correlation = uuid.uuid4().bytes
        got: list[Any] = []
        done = threading.Event()

        def on_reply(client: Any, userdata: Any, message: Any) -> None:
            if getattr(message.properties, "CorrelationData", None) == correlation:
                got.append(json.loads(message.payload))
                done.set()

        self.client.message_callback_add(reply, on_reply)
        acked = threading.Event()
        self.client.on_subscribe = lambda *a: acked.set()
        self.client.subscribe(reply, 1)
        assert acked.wait(timeout), "no SUBACK for the reply topic"
        properties = Properties(PacketTypes.PUBLISH)
        properties.ResponseTopic = reply
        properties.CorrelationData = correlation
        payload = json.dumps(args) if args is not None else ""
        self.client.publish(topic, payload, qos=1, properties=properties)
        if not done.wait(timeout):
            pytest.fail(f"no answer to {topic} within {timeout} s")
        self.client.message_callback_remove(reply)
        return got[0]

    def publish(self, topic: str, value: Any, *, retain: bool = False) -> None:
        self.client.publish(topic, json.dumps(value), qos=1, retain=retain).wait_for_publish(10)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()

"""The MQTT bridge of one sensor: its results, events, health and state on a broker; config, commands, OTA back.

::

    import seedcam
    from seedcam.fleet import BridgeOptions, MqttBridge, parse_broker_url

    with seedcam.open("/dev/ttyACM0") as sensor:
        with MqttBridge(sensor, parse_broker_url("mqtt://broker:1883"), BridgeOptions(base="plant1")) as bridge:
            bridge.wait_closed()  # until stop() or a fatal broker refusal

The bridge runs where the sensor is plugged in. It speaks MQTT 5 through paho-mqtt
(the ``seedcam[mqtt]`` extra): the ``status`` topic is retained at QoS 1 with a
broker-side Last Will (``offline``), so a bridge that dies is marked offline by the
broker within 1.5 keepalives; a clean stop publishes ``offline`` itself. paho
reconnects with exponential backoff; on every connection the bridge republishes its
retained state (status, info, Home Assistant discovery, config state). QoS 1 messages
(events, config state, answers) published while the broker is away wait in paho's
bounded queue and go out after the reconnect; what does not fit is counted
(:attr:`BridgeStats.events_dropped`) and leaves a gap in the sequence numbers, so a
consumer sees the loss. Every stream carries a per-device sequence number: results in
the MQTT 5 user property ``seq`` (and in the JSON form), events and health in their JSON.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from dataclasses import replace
from typing import Any

from seedcam._jsonable import to_jsonable
from seedcam.errors import BrokerError
from seedcam.fleet._acks import Unacked
from seedcam.fleet._options import BridgeOptions, BridgeStats
from seedcam.fleet._requests import Incoming, Requests
from seedcam.fleet._snapshots import Snapshots
from seedcam.fleet.broker import BrokerUrl, make_client
from seedcam.fleet.events import EventTracker, FleetEvent
from seedcam.fleet.ha_discovery import discovery_messages
from seedcam.fleet.topics import Topics, device_id_from_serial
from seedcam.protocol import codec
from seedcam.sensor import ReconnectEvent, Sensor
from seedcam.types import Health, LaneStatus, Result

__all__ = ["BridgeOptions", "BridgeStats", "MqttBridge", "RESULT_CONTENT_TYPE"]

log = logging.getLogger(__name__)

RESULT_CONTENT_TYPE = "application/x-protobuf; messageType=seedcam.v1.Result"
_REFUSALS = {133, 134, 135, 138, 140}  #: CONNACK reasons that retrying does not cure (client id, login, banned)
_ERR_QUEUE_SIZE = 15  #: paho's MQTT_ERR_QUEUE_SIZE: the bounded queue of QoS > 0 messages is full
_ERR_NO_CONN = 4  #: paho's MQTT_ERR_NO_CONN (a QoS 0 message while the broker is away: not sent)


class MqttBridge:
    """Publish one sensor on an MQTT broker and take its commands from there.

    Args:
        sensor: an open sensor (it keeps reconnecting to the device by itself).
        broker: the broker's URL (:func:`seedcam.fleet.parse_broker_url`).
        options: topics and rates.

    Raises:
        MissingExtra: paho-mqtt is not installed.
        ValueError: a base or device id that cannot be a topic level.
    """

    def __init__(self, sensor: Sensor, broker: BrokerUrl, options: BridgeOptions | None = None) -> None:
        self.options = options or BridgeOptions()
        self.sensor = sensor
        self.broker = broker
        info = sensor.device_info
        device_id = self.options.device_id or device_id_from_serial(info.serial_number if info else "")
        self.topics = Topics(self.options.base, device_id)
        self.bridge_id = uuid.uuid4().hex[:12]
        self.stats = BridgeStats()
        self._lock = threading.Lock()
        self._result_seq = 0
        self._event_seq = 0
        self._health_seq = 0
        self._tracker = EventTracker()
        self._summary: dict[str, Any] = {"lane_offset_m": None, "lane_status": "unknown", "detections": 0}
        self._summary["last_plate"] = ""
        self._summary_sent = 0.0
        self._closed = threading.Event()
        self._stopped = False
        self._connected = threading.Event()
        self._first_connack = threading.Event()
        self._fatal: BrokerError | None = None
        self._client_lock = threading.Lock()  #: one of stop() and a Will renewal at a time
        self._renewing = False  #: the disconnection under way is a Will renewal, not a lost broker
        self._disconnected = threading.Event()
        self._unacked = Unacked()
        self._unsubscribe: list[Any] = []
        self._client = make_client(
            broker,
            f"seedcam-{device_id}-{self.bridge_id}",
            ca_file=self.options.ca_file,
            insecure=self.options.tls_insecure,
        )
        self.snapshots = Snapshots(self)
        self._requests = Requests(self)
        self._health_thread = threading.Thread(target=self._health_loop, name="seedcam-bridge-health", daemon=True)
        client = self._client
        self._set_will()
        client.reconnect_delay_set(self.options.reconnect_min_s, self.options.reconnect_max_s)  # type: ignore[arg-type]
        client.max_queued_messages_set(self.options.queue_limit)
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_message = self._on_message
        client.on_publish = lambda client, userdata, mid, reason, properties: self._unacked.acknowledged(mid)

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 10.0) -> MqttBridge:
        """Connect to the broker and start publishing; returns once the broker accepted the connection.

        Raises:
            BrokerError: the broker cannot be reached (``refused=False``), or refused the login
                (``refused=True``: a bad user name or password, not authorized), or did not answer in time.
        """
        client = self._client
        try:
            client.connect(self.broker.host, self.broker.port, keepalive=self.options.keepalive)
        except (OSError, ValueError) as exc:
            raise BrokerError(f"cannot reach the MQTT broker {self.broker}: {exc}") from exc
        client.loop_start()
        if not self._first_connack.wait(timeout):
            self._shutdown_client()
            raise BrokerError(f"the MQTT broker {self.broker} did not answer the connection within {timeout:g} s")
        if self._fatal is not None:
            self._shutdown_client()
            raise self._fatal
        self._unsubscribe = [
            self.sensor.on_result(self._on_result),
            self.sensor.on_reconnect(self._on_device_back),
        ]
        self._requests.start()
        self._health_thread.start()
        self.snapshots.start()
        return self

    def stop(self, timeout: float = 3.0) -> None:
        """Publish ``offline`` (retained), wait for it to go out, and disconnect. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        self._closed.set()
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self.snapshots.stop(timeout)
        self._requests.stop(timeout)
        if self._health_thread.is_alive():
            self._health_thread.join(timeout)
        with self._client_lock:
            if self._connected.is_set():
                self._publish_and_wait(self._status_payload("offline", "stopped"), timeout)
            self._shutdown_client()

    def wait_closed(self, timeout: float | None = None) -> bool:
        """Block until :meth:`stop` (or a fatal refusal); True when closed."""
        return self._closed.wait(timeout)

    @property
    def fatal(self) -> BrokerError | None:
        """The refusal that stopped the bridge after a reconnect (the login no longer accepted), or None."""
        return self._fatal

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    @property
    def unacknowledged(self) -> int:
        """QoS 1 messages the broker has not acknowledged yet (those queued during an outage included)."""
        return self._unacked.count

    def wait_acknowledged(self, timeout: float) -> bool:
        """Block until the broker acknowledged every QoS 1 message published so far; False after ``timeout``."""
        return self._unacked.wait_empty(timeout)

    def __enter__(self) -> MqttBridge:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _shutdown_client(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()

    def _publish_and_wait(self, status: str, timeout: float) -> bool:
        """Publish ``status`` (retained, QoS 1) and wait for the broker's PUBACK; False when it did not come."""
        info = self._publish(self.topics.status, status, 1, True)
        try:
            info.wait_for_publish(timeout)
        except (RuntimeError, ValueError) as exc:
            log.warning("status %s not acknowledged: %s", status, exc)
            return False
        return bool(info.is_published())

    # ------------------------------------------------------------------ the Last Will

    def _set_will(self) -> None:
        """The Will the next CONNECT carries: ``offline`` with the boot id known now."""
        self._client.will_set(
            self.topics.status, self._status_payload("offline", "connection lost"), qos=1, retain=True
        )

    def _renew_will(self, timeout: float = 5.0) -> None:
        """After a device reboot: give the broker a Will with the new boot id.

        MQTT fixes the Will at CONNECT, so the bridge publishes the new ``online`` status,
        disconnects cleanly (a normal DISCONNECT: the broker discards the old Will instead of
        sending it) and connects again with the new one; the retained state is republished
        on that connection as on any other. QoS 1 messages published meanwhile wait in paho's
        queue. When the broker is away, the new Will just goes with the next reconnection.
        """
        with self._client_lock:
            if self._stopped:
                return
            self._set_will()
            if not self._connected.is_set():
                return  # paho's own reconnection will carry it
            self._publish_and_wait(self._status_payload("online", "device rebooted"), timeout)
            self._renewing = True
            self._disconnected.clear()
            try:
                self._client.disconnect()
                if not self._disconnected.wait(timeout):
                    log.warning("the broker %s did not close the connection in %g s", self.broker, timeout)
                self._client.loop_stop()
            finally:
                self._renewing = False
            self._client.connect_async(self.broker.host, self.broker.port, keepalive=self.options.keepalive)
            self._client.loop_start()  # connects (retrying with backoff); _on_connect republishes the state
            self.stats.will_renewals += 1
            log.info("reconnected to %s to carry the new boot id in the Last Will", self.broker)

    # ------------------------------------------------------------------ publishing

    def publish(self, topic: str, payload: bytes | str, *, qos: int = 0, retain: bool = False, **props: Any) -> int:
        """Publish with MQTT 5 properties (``user=[(k, v)]``, ``content_type``, ``correlation``); paho's rc."""
        from paho.mqtt.packettypes import PacketTypes
        from paho.mqtt.properties import Properties

        properties = None
        if props:
            properties = Properties(PacketTypes.PUBLISH)
            if "user" in props:
                properties.UserProperty = props["user"]
            if "content_type" in props:
                properties.ContentType = props["content_type"]
            if props.get("correlation") is not None:
                properties.CorrelationData = props["correlation"]
        return int(self._publish(topic, payload, qos, retain, properties).rc)

    def _publish(self, topic: str, payload: bytes | str, qos: int, retain: bool, properties: Any = None) -> Any:
        """paho's publish; a QoS 1 message it took (sent or queued) is tracked until its PUBACK."""
        if qos == 0:
            return self._client.publish(topic, payload, qos=qos, retain=retain, properties=properties)
        ticket = self._unacked.begin()
        taken: int | None = None
        try:
            info = self._client.publish(topic, payload, qos=qos, retain=retain, properties=properties)
            if info.rc in (0, _ERR_NO_CONN):
                taken = info.mid
        finally:
            self._unacked.end(ticket, taken)
        return info

    def publish_json(self, topic: str, value: Any, *, qos: int = 0, retain: bool = False, **props: Any) -> int:
        return self.publish(topic, json.dumps(to_jsonable(value)), qos=qos, retain=retain, **props)

    def _status_payload(self, state: str, reason: str = "") -> str:
        info = self.sensor.device_info
        status = {
            "state": state,
            "device_id": self.topics.device_id,
            "boot_id": info.boot_id if info else "",
            "bridge_id": self.bridge_id,
            "connection": self.stats.connections,
            "ts": round(time.time(), 3),
        }
        if reason:
            status["reason"] = reason
        return json.dumps(status)

    def info_payload(self) -> dict[str, Any]:
        """The ``info`` message: the device's identity, versions, models and what the bridge offers."""
        info = self.sensor.device_info
        return {
            "device_id": self.topics.device_id,
            "device": to_jsonable(info) if info else None,
            "bridge": {
                "id": self.bridge_id,
                "commands": sorted(self._requests.commands(read_only=self.options.read_only)),
                "config_set": not self.options.read_only,
                "ota": self.options.ota is not None and not self.options.read_only,
                "results_json": self.options.results_json,
                "results_qos": self.options.results_qos,
            },
        }

    def _publish_retained_state(self) -> None:
        self.publish(self.topics.status, self._status_payload("online"), qos=1, retain=True)
        self.publish_json(self.topics.info, self.info_payload(), qos=1, retain=True)
        if self.options.discovery:
            for topic, payload in discovery_messages(
                self.topics, self.sensor.device_info, self.options.discovery_prefix
            ):
                self.publish(topic, payload, qos=1, retain=True)
        self._requests.republish_state()

    def _on_device_back(self, event: ReconnectEvent) -> None:
        """On the sensor's thread: a reboot renews the Will (and republishes the state) off this thread."""
        if event.device_rebooted:
            threading.Thread(target=self._renew_will, name="seedcam-bridge-will", daemon=True).start()

    def _on_result(self, result: Result) -> None:
        """On the sensor's reader thread: the result, its events and (now and then) the summary."""
        with self._lock:
            self._result_seq += 1
            seq = self._result_seq
        user = [("seq", str(seq)), ("bridge", self.bridge_id)]
        payload = codec.result_to_pb(result).SerializeToString()
        qos = self.options.results_qos
        rc = self.publish(self.topics.results, payload, qos=qos, user=user, content_type=RESULT_CONTENT_TYPE)
        if rc == 0:
            self.stats.results_published += 1
        else:
            self.stats.results_not_sent += 1
        if self.options.results_json:
            body = to_jsonable(replace(result, received_monotonic=0.0))
            del body["received_monotonic"]
            self.publish_json(self.topics.results_json, {"seq": seq, **body}, qos=qos)
        for event in self._tracker.update(result):
            self._publish_event(event)
        self._update_summary(result)

    def _publish_event(self, event: FleetEvent) -> None:
        with self._lock:
            self._event_seq += 1
            seq = self._event_seq
        body = {
            "seq": seq,
            "kind": event.kind,
            "frame_id": event.frame_id,
            "capture_timestamp_us": event.capture_timestamp_us,
            "ts": round(time.time(), 3),
            **event.data,
        }
        rc = self.publish_json(self.topics.events, body, qos=1, user=[("seq", str(seq))])
        if rc == _ERR_QUEUE_SIZE:
            self.stats.events_dropped += 1
            log.warning(
                "event %d (%s) dropped: %d QoS 1 messages wait already", seq, event.kind, self.options.queue_limit
            )
        else:
            self.stats.events_published += 1

    def _update_summary(self, result: Result) -> None:
        summary = self._summary
        lane = result.lane
        if lane is not None:
            summary["lane_status"] = lane.status.value
            summary["lane_offset_m"] = None if lane.status is LaneStatus.LOST else round(lane.offset_m, 4)
        summary["detections"] = len(result.detections)
        for line in result.text_lines:
            if line.text:
                summary["last_plate"] = line.text
        now = time.monotonic()
        if now - self._summary_sent >= self.options.summary_interval:
            self._summary_sent = now
            self.publish_json(self.topics.summary, {**summary, "frame_id": result.frame_id}, retain=True)

    def health_payload(self, health: Health | None) -> dict[str, Any]:
        with self._lock:
            self._health_seq += 1
            seq = self._health_seq
        stats = self.sensor.stats
        return {
            "seq": seq,
            "ts": round(time.time(), 3),
            "device": to_jsonable(health) if health else None,
            "link": {"connected": stats.connected, "reconnects": stats.reconnects, "reboots": stats.device_reboots},
            "bridge": to_jsonable(self.stats),
            "tracks": self._tracker.active,
        }

    def _health_loop(self) -> None:
        while not self._closed.is_set():
            if self._connected.is_set():
                self.publish_json(self.topics.health, self.health_payload(self.sensor.health), retain=True)
            self._closed.wait(self.options.health_interval)

    # ------------------------------------------------------------------ paho callbacks (its network thread)

    def _on_connect(self, client: Any, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        if reason.is_failure:
            refused = int(reason.value) in _REFUSALS
            error = BrokerError(f"the MQTT broker {self.broker} refused the connection: {reason}", refused=refused)
            if self._first_connack.is_set():  # a reconnect refused (the first one: start() raises it)
                log.error("%s", error)
            if refused:
                self._fatal = error
                client.disconnect()  # retrying does not cure a bad login: stop
                if self._first_connack.is_set():
                    self._closed.set()
            self._first_connack.set()
            return
        self.stats.connections += 1
        log.info("connected to %s (connection %d)", self.broker, self.stats.connections)
        client.subscribe([(self.topics.config_set, 1), (self.topics.cmd_filter, 1), (self.topics.ota_set, 1)])
        self._connected.set()
        self._publish_retained_state()
        self._first_connack.set()

    def _on_disconnect(self, client: Any, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        was_connected = self._connected.is_set()
        self._connected.clear()
        self._disconnected.set()
        if was_connected and not self._closed.is_set() and not self._renewing:
            log.warning("lost the MQTT broker %s (%s); reconnecting", self.broker, reason)

    def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
        properties = getattr(message, "properties", None)
        self._requests.submit(
            Incoming(
                topic=message.topic,
                payload=bytes(message.payload),
                response_topic=getattr(properties, "ResponseTopic", None),
                correlation=getattr(properties, "CorrelationData", None),
                retained=bool(message.retain),
            )
        )

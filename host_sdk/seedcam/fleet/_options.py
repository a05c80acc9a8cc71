"""What a bridge is told (:class:`BridgeOptions`) and what it counts (:class:`BridgeStats`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from seedcam.fleet.ota import OtaPolicy

__all__ = ["BridgeOptions", "BridgeStats"]


@dataclass(frozen=True)
class BridgeOptions:
    """How a bridge publishes.

    Attributes:
        base: the first topic level (``{base}/{device_id}/...``).
        device_id: the second; default: the sensor's serial number made topic-safe.
        keepalive: MQTT keepalive, seconds (the broker sends the Will after 1.5 of them of silence).
        health_interval: seconds between ``health`` messages.
        results_qos: QoS of ``results`` (0: a lost one is not resent, fine for a stream).
        results_json: also publish each result as JSON on ``results/json``.
        summary_interval: seconds between ``summary`` messages (the Home Assistant states).
        snapshot_interval: publish a snapshot every this many seconds (0: only on ``cmd/snapshot``).
        snapshot_min_interval: the least seconds between two snapshots, periodic or requested
            (a request sooner than that is refused ``rate_limited``).
        snapshot_quality: JPEG quality of the periodic snapshots (1..100; 0: the device's default).
        queue_limit: QoS 1 messages kept while the broker is away; more are dropped and counted.
        ca_file: CA certificate (PEM) of an ``mqtts://`` broker; default: the system's.
        tls_insecure: do not verify the broker's certificate (testing only).
        discovery: publish Home Assistant discovery configs under ``discovery_prefix``.
        read_only: refuse ``config/set``, ``ota/set`` and the commands that change the device.
        ota: where ``ota/set`` finds bundles and which keys it trusts; None: ``ota/set`` is refused.
        reconnect_min_s, reconnect_max_s: the reconnect backoff (doubling from min to max).
    """

    base: str = "seedcam"
    device_id: str | None = None
    keepalive: int = 30
    health_interval: float = 5.0
    results_qos: int = 0
    results_json: bool = False
    summary_interval: float = 1.0
    snapshot_interval: float = 0.0
    snapshot_min_interval: float = 2.0
    snapshot_quality: int = 0
    queue_limit: int = 1000
    ca_file: str | None = None
    tls_insecure: bool = False
    discovery: bool = True
    discovery_prefix: str = "homeassistant"
    read_only: bool = False
    ota: OtaPolicy | None = None
    reconnect_min_s: float = 0.5
    reconnect_max_s: float = 30.0

    def __post_init__(self) -> None:
        if self.results_qos not in (0, 1):
            raise ValueError("results_qos must be 0 or 1")
        if self.keepalive < 1 or self.health_interval <= 0 or self.queue_limit < 1:
            raise ValueError("keepalive, health_interval and queue_limit must be positive")
        if self.snapshot_min_interval < 0 or not 0 <= self.snapshot_quality <= 100:
            raise ValueError("snapshot_min_interval must be >= 0 and snapshot_quality 0..100")
        if self.snapshot_interval != 0 and self.snapshot_interval < max(self.snapshot_min_interval, 0.001):
            raise ValueError(
                f"snapshot_interval {self.snapshot_interval:g} s: 0 (off) or at least the rate limit, "
                f"snapshot_min_interval {self.snapshot_min_interval:g} s"
            )


@dataclass
class BridgeStats:
    """What a bridge did since it started."""

    connections: int = 0  #: successful connections to the broker (1 + reconnects)
    results_published: int = 0
    results_not_sent: int = 0  #: QoS 0 results while the broker was away (or the queue full at QoS 1)
    events_published: int = 0
    events_dropped: int = 0  #: QoS 1 events that did not fit in the bounded queue during an outage
    snapshots_published: int = 0
    will_renewals: int = 0  #: reconnections made to give the broker a Will with the device's new boot id
    requests: int = 0  #: config/set, cmd/<name> and ota/set messages handled
    refusals: dict[str, int] = field(default_factory=dict)  #: refused requests by reason

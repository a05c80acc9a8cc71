"""``seedcam bridge mqtt``: publish the sensor on an MQTT broker, take config, commands and updates from it.

Runs until Ctrl-C or SIGTERM, then publishes ``offline`` and exits 0. The broker URL
comes from ``--broker``, else ``$SEEDCAM_BROKER``; a user without a password in the
URL takes ``$SEEDCAM_BROKER_PASSWORD`` (so the password need not show in ``ps``).
Exit codes as for every ``seedcam`` command: 1 for a bad URL or a login the broker
refused, 2 when the broker or the sensor cannot be reached. Topics and payloads:
docs/fleet.md.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from typing import TextIO

from seedcam._cli_common import EXIT_OK, EXIT_USER, CliError
from seedcam._cli_port import open_sensor
from seedcam.errors import BrokerError

__all__ = ["BROKER_ENV", "PASSWORD_ENV", "add_bridge_commands"]

BROKER_ENV = "SEEDCAM_BROKER"
PASSWORD_ENV = "SEEDCAM_BROKER_PASSWORD"


def cmd_bridge_mqtt(args: argparse.Namespace, out: TextIO) -> int:
    """``seedcam bridge mqtt --broker URL``: the bridge, until interrupted."""
    from seedcam.fleet import BridgeOptions, MqttBridge, OtaPolicy, parse_broker_url

    url = args.broker or os.environ.get(BROKER_ENV, "").strip()
    if not url:
        raise CliError(f"bridge mqtt needs --broker mqtt[s]://[user:pass@]host:port (or ${BROKER_ENV})")
    broker = parse_broker_url(url)
    if broker.username is not None and broker.password is None and os.environ.get(PASSWORD_ENV):
        broker = replace(broker, password=os.environ[PASSWORD_ENV])
    ota = None
    if args.catalog:
        from seedcam.catalog import resolve_keys

        if not args.trusted_key:
            raise CliError("--catalog needs at least one --trusted-key (the key that signs catalog and requests)")
        ota = OtaPolicy(args.catalog, resolve_keys(args.trusted_key))
    options = BridgeOptions(
        base=args.base,
        device_id=args.device_id,
        keepalive=args.keepalive,
        health_interval=args.health_interval,
        results_qos=args.results_qos,
        results_json=args.results_json,
        snapshot_interval=args.snapshot_interval,
        snapshot_min_interval=args.snapshot_min_interval,
        snapshot_quality=args.snapshot_quality,
        queue_limit=args.queue_limit,
        ca_file=args.ca_file,
        tls_insecure=args.insecure,
        discovery=not args.no_discovery,
        discovery_prefix=args.discovery_prefix,
        read_only=args.read_only,
        ota=ota,
    )
    with open_sensor(args) as sensor:
        bridge = MqttBridge(sensor, broker, options)
        try:
            try:
                bridge.start(timeout=args.timeout)
            except BrokerError as exc:
                raise CliError(str(exc), EXIT_USER if exc.refused else 2) from exc
            if not args.quiet:
                out.write(f"bridging {sensor.url} as {bridge.topics.root} on {broker} (Ctrl-C stops)\n")
                out.flush()
            while not bridge.wait_closed(1.0):
                pass
        finally:  # Ctrl-C and SIGTERM too: offline goes out, then the counts
            started = bridge.stats.connections > 0
            bridge.stop()
            if started and not args.quiet:
                stats = bridge.stats
                out.write(
                    f"stopped: {stats.results_published} results, {stats.events_published} events "
                    f"({stats.events_dropped} dropped), {stats.requests} requests, {stats.connections} connections\n"
                )
        if bridge.fatal is not None:
            raise CliError(str(bridge.fatal), EXIT_USER)
    return EXIT_OK


def add_bridge_commands(
    commands: argparse._SubParsersAction,  # type: ignore[type-arg]
    shared: argparse.ArgumentParser,
) -> None:
    """Add ``seedcam bridge mqtt``.

    Args:
        commands: the ``seedcam`` sub-commands.
        shared: the parent parser of the options every command takes.
    """
    text = "bridge the sensor to other systems (mqtt: results, events, health, config and updates on a broker)"
    bridge = commands.add_parser("bridge", parents=[shared], help=text, description=f"{text}.")
    kinds = bridge.add_subparsers(dest="bridge_kind", required=True, metavar="KIND")
    mqtt_text = "publish the sensor on an MQTT 5 broker (topics in docs/fleet.md); runs until Ctrl-C"
    mqtt = kinds.add_parser("mqtt", parents=[shared], help=mqtt_text, description=f"{mqtt_text}.")
    mqtt.add_argument("--broker", help=f"mqtt[s]://[user:pass@]host[:port] (default ${BROKER_ENV})")
    mqtt.add_argument("--base", default="seedcam", help="first topic level (default seedcam)")
    mqtt.add_argument("--device-id", help="second topic level (default: the sensor's serial number)")
    mqtt.add_argument("--keepalive", type=int, default=30, help="MQTT keepalive, s; the Will fires after 1.5 x (30)")
    mqtt.add_argument("--health-interval", type=float, default=5.0, help="seconds between health messages (5)")
    mqtt.add_argument("--results-qos", type=int, choices=(0, 1), default=0, help="QoS of results (0)")
    mqtt.add_argument("--results-json", action="store_true", help="also publish each result as JSON")
    mqtt.add_argument(
        "--snapshot-interval", type=float, default=0.0, metavar="S", help="publish a snapshot every S s (0: off)"
    )
    mqtt.add_argument(
        "--snapshot-min-interval", type=float, default=2.0, metavar="S", help="least seconds between snapshots (2)"
    )
    mqtt.add_argument("--snapshot-quality", type=int, default=0, help="JPEG quality of periodic snapshots (device's)")
    mqtt.add_argument("--queue-limit", type=int, default=1000, help="QoS 1 messages kept while offline (1000)")
    mqtt.add_argument("--ca-file", help="CA certificate (PEM) of an mqtts:// broker (default: the system's)")
    mqtt.add_argument("--insecure", action="store_true", help="do not verify the broker's certificate (testing)")
    mqtt.add_argument("--no-discovery", action="store_true", help="no Home Assistant discovery messages")
    mqtt.add_argument("--discovery-prefix", default="homeassistant", help="Home Assistant's prefix (homeassistant)")
    mqtt.add_argument("--read-only", action="store_true", help="refuse config/set, ota/set and changing commands")
    mqtt.add_argument("--catalog", help="model catalog URL for ota/set (file:// or https://); none: ota/set refused")
    mqtt.add_argument(
        "--trusted-key", action="append", default=[], metavar="KEY", help="ed25519 public key (hex or .pub) for ota/set"
    )
    mqtt.set_defaults(func=cmd_bridge_mqtt)

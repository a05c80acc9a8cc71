"""Many sensors: an MQTT bridge per sensor (``seedcam bridge mqtt``) and an MCP server for agents (``seedcam mcp``).

paho-mqtt (``seedcam[mqtt]``) and the ``mcp`` SDK (``seedcam[mcp]``) are imported only
when a bridge or a server is made; docs/fleet.md has the topic tree and its payloads.
"""

from __future__ import annotations

from seedcam.fleet.bridge import RESULT_CONTENT_TYPE, BridgeOptions, BridgeStats, MqttBridge
from seedcam.fleet.broker import BrokerUrl, MissingExtra, parse_broker_url
from seedcam.fleet.events import EventTracker, FleetEvent
from seedcam.fleet.ota import OtaPolicy, sign_ota_request, verify_ota_request
from seedcam.fleet.topics import Topics

__all__ = [
    "RESULT_CONTENT_TYPE",
    "BridgeOptions",
    "BridgeStats",
    "BrokerUrl",
    "EventTracker",
    "FleetEvent",
    "MissingExtra",
    "MqttBridge",
    "OtaPolicy",
    "Topics",
    "parse_broker_url",
    "sign_ota_request",
    "verify_ota_request",
]

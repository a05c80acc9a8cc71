"""Home Assistant MQTT discovery: the retained config messages that make a sensor appear in Home Assistant.

Entities (one HA device per sensor): lane offset, lane status, detection count and
last plate (all read from the retained ``summary`` topic), and an image entity
showing the latest ``snapshot``. Availability follows the ``status`` topic, so the
broker's Last Will marks every entity unavailable when the bridge dies.
"""

from __future__ import annotations

import json
from typing import Any

from seedcam.fleet.topics import Topics
from seedcam.types import DeviceInfo

__all__ = ["discovery_messages"]


def _sensor(name: str, key: str, template: str, **extra: Any) -> tuple[str, str, dict[str, Any]]:
    return "sensor", key, {"name": name, "value_template": template, **extra}


_ENTITIES = (
    _sensor(
        "Lane offset",
        "lane_offset",
        "{{ value_json.lane_offset_m }}",
        unit_of_measurement="m",
        state_class="measurement",
        suggested_display_precision=3,
    ),
    _sensor("Lane status", "lane_status", "{{ value_json.lane_status }}"),
    _sensor("Detections", "detections", "{{ value_json.detections }}", state_class="measurement"),
    _sensor("Last plate", "last_plate", "{{ value_json.last_plate }}", icon="mdi:card-text-outline"),
)


def discovery_messages(topics: Topics, info: DeviceInfo | None, prefix: str = "homeassistant") -> list[tuple[str, str]]:
    """``(topic, JSON payload)`` of every discovery config (publish them retained)."""
    node = f"seedcam_{topics.device_id}".replace(".", "_").replace("-", "_")
    device: dict[str, Any] = {
        "identifiers": [node],
        "name": f"seedcam {topics.device_id}",
        "manufacturer": "seedcam",
        "model": (info.board if info and info.board else "seedcam sensor"),
    }
    if info is not None:
        device["sw_version"] = info.firmware_version
        if info.serial_number:
            device["serial_number"] = info.serial_number
    availability = {
        "availability_topic": topics.status,
        "availability_template": "{{ value_json.state }}",
        "payload_available": "online",
        "payload_not_available": "offline",
    }
    messages = []
    for component, key, fields in _ENTITIES:
        config = {
            **fields,
            "unique_id": f"{node}_{key}",
            "object_id": f"{node}_{key}",
            "state_topic": topics.summary,
            "device": device,
            **availability,
        }
        messages.append((f"{prefix}/{component}/{node}/{key}/config", json.dumps(config)))
    image = {
        "name": "Snapshot",
        "unique_id": f"{node}_snapshot",
        "object_id": f"{node}_snapshot",
        "image_topic": topics.snapshot,
        "content_type": "image/jpeg",
        "device": device,
        **availability,
    }
    messages.append((f"{prefix}/image/{node}/snapshot/config", json.dumps(image)))
    return messages

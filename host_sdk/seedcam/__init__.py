"""seedcam host SDK: talk to a seedcam AI vision sensor over UART, USB, TCP or a pty.

::

    import seedcam

    with seedcam.open("/dev/ttyACM0") as sensor:
        for result in sensor.results():
            steer_from(result.lane)  # your code
"""

from __future__ import annotations

from typing import Any

from seedcam.errors import (
    BundleError,
    DeviceMismatch,
    LinkBroken,
    NoSensorFound,
    ProtocolError,
    ProtocolVersionMismatch,
    RpcError,
    SensorError,
    SensorTimeout,
    UpdateRefused,
)
from seedcam.sensor import ReconnectEvent, Sensor, SensorStats
from seedcam.session import Session
from seedcam.types import (
    Box,
    Classification,
    ConfigValue,
    Detection,
    DeviceInfo,
    Health,
    LaneState,
    LaneStatus,
    LinkStats,
    ModelInfo,
    Result,
    Snapshot,
    TaskList,
    TextLine,
)

__version__ = "0.1.0"

__all__ = [
    "open",
    "Sensor",
    "SensorStats",
    "ReconnectEvent",
    "Session",
    "SensorError",
    "SensorTimeout",
    "LinkBroken",
    "ProtocolError",
    "RpcError",
    "BundleError",
    "UpdateRefused",
    "NoSensorFound",
    "DeviceMismatch",
    "ProtocolVersionMismatch",
    "Box",
    "Classification",
    "ConfigValue",
    "Detection",
    "DeviceInfo",
    "Health",
    "LaneState",
    "LaneStatus",
    "LinkStats",
    "ModelInfo",
    "Result",
    "Snapshot",
    "TaskList",
    "TextLine",
    "__version__",
]


def open(url: str | None = None, *, serial: str | None = None, **options: Any) -> Sensor:  # noqa: A001
    """Connect to a sensor and return a :class:`Sensor` (a context manager).

    Args:
        url: a port or URL (``/dev/ttyACM0``, ``socket://host:port`` ...). When omitted:
            ``$SEEDCAM_PORT``, else the only seedcam sensor plugged in.
        serial: without ``url``, open the sensor with this USB serial number
            (its ``usb://`` URL finds it again after a re-plug).
        **options: passed to :class:`Sensor` (``timeout``, ``reconnect``, ``queue_size`` ...).

    Raises:
        NoSensorFound: no URL and not exactly one sensor present.
        LinkBroken: the port cannot be opened.
        SensorTimeout: the sensor did not answer the handshake.
    """
    from seedcam.discovery import resolve_url

    return Sensor(resolve_url(url, serial=serial), **options)

"""seedcam host SDK: talk to a seedcam AI vision sensor over UART, USB, TCP or a pty.

::

    import seedcam

    with seedcam.open("/dev/ttyACM0") as sensor:
        for result in sensor.results():
            steer_from(result.lane)  # your code

The model catalog's main names (:class:`~seedcam.catalog.Catalog`, ``CatalogEntry``,
``load_catalog``) are here too, imported on first use (:mod:`seedcam.catalog`
needs the TLS stack); :class:`CatalogError` is one of the errors.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from seedcam.errors import (
    BundleError,
    CatalogError,
    DeviceMismatch,
    LinkBroken,
    NoSensorFound,
    PeerClosed,
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
    PreviewFrame,
    PreviewSettings,
    Result,
    Snapshot,
    TaskList,
    TextLine,
)

if TYPE_CHECKING:
    from seedcam.catalog import Catalog, CatalogEntry, load_catalog

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
    "CatalogError",
    "NoSensorFound",
    "PeerClosed",
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
    "PreviewFrame",
    "PreviewSettings",
    "Result",
    "Snapshot",
    "TaskList",
    "TextLine",
    "Catalog",
    "CatalogEntry",
    "load_catalog",
    "__version__",
]

#: names imported from their module on first use: name -> module
_LAZY = {name: "seedcam.catalog" for name in ("Catalog", "CatalogEntry", "load_catalog")}


def __getattr__(name: str) -> Any:
    """The lazily imported names of :data:`_LAZY` (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'seedcam' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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

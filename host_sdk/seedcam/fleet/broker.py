"""The broker a bridge talks to: ``mqtt[s]://[user:pass@]host[:port]`` and a paho-mqtt 2 client for it (MQTT 5).

paho-mqtt is the ``seedcam[mqtt]`` extra, imported only when a client is made, so
``import seedcam.fleet`` works without it.
"""

from __future__ import annotations

import ssl
import urllib.parse
from dataclasses import dataclass
from typing import Any

from seedcam.errors import SensorError

__all__ = ["BrokerUrl", "MissingExtra", "import_paho", "make_client", "parse_broker_url"]

DEFAULT_PORTS = {"mqtt": 1883, "mqtts": 8883}


class MissingExtra(SensorError, ImportError):
    """An optional dependency of the fleet tools is not installed (the message names the extra)."""


@dataclass(frozen=True)
class BrokerUrl:
    """Where the broker is and how to log in.

    Attributes:
        host, port: the broker's address.
        tls: ``mqtts://``: TLS, verifying the broker's certificate (``ca_file`` or the system's CAs).
        username, password: MQTT login, or None.
    """

    host: str
    port: int
    tls: bool = False
    username: str | None = None
    password: str | None = None

    def __str__(self) -> str:
        """The URL without the password (for logs and messages)."""
        user = f"{self.username}@" if self.username else ""
        return f"{'mqtts' if self.tls else 'mqtt'}://{user}{self.host}:{self.port}"


def parse_broker_url(url: str) -> BrokerUrl:
    """Parse ``mqtt://host:port``, ``mqtts://user:pass@host`` (user and password %-escaped).

    Raises:
        ValueError: another scheme, no host, or a bad port.
    """
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise ValueError(f"broker URL {url!r}: the scheme must be mqtt:// or mqtts://")
    if not parts.hostname:
        raise ValueError(f"broker URL {url!r} names no host")
    if parts.path not in ("", "/") or parts.query:
        raise ValueError(f"broker URL {url!r}: no path or query expected after host:port")
    try:
        port = parts.port or DEFAULT_PORTS[scheme]
    except ValueError as exc:
        raise ValueError(f"broker URL {url!r}: bad port ({exc})") from exc
    unquote = urllib.parse.unquote
    return BrokerUrl(
        host=parts.hostname,
        port=port,
        tls=scheme == "mqtts",
        username=unquote(parts.username) if parts.username is not None else None,
        password=unquote(parts.password) if parts.password is not None else None,
    )


def import_paho() -> Any:
    """The ``paho.mqtt.client`` module.

    Raises:
        MissingExtra: paho-mqtt is not installed.
    """
    try:
        import paho.mqtt.client as mqtt
    except ImportError as exc:
        raise MissingExtra("the MQTT bridge needs paho-mqtt: pip install 'seedcam[mqtt]'") from exc
    return mqtt


def make_client(
    broker: BrokerUrl,
    client_id: str,
    *,
    ca_file: str | None = None,
    insecure: bool = False,
) -> Any:
    """A paho-mqtt 2 client speaking MQTT 5, with the login and TLS the URL asks for (not connected yet).

    Args:
        broker: the parsed URL.
        client_id: the MQTT client id (unique per broker).
        ca_file: PEM file of the CA that signed the broker's certificate (``mqtts://``; default: the system's).
        insecure: accept any broker certificate (testing only; the traffic is still encrypted).

    Raises:
        MissingExtra: paho-mqtt is not installed.
        ValueError: ``ca_file`` cannot be read as certificates.
    """
    mqtt = import_paho()
    client = mqtt.Client(
        callback_api_version=mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5
    )
    if broker.username is not None:
        client.username_pw_set(broker.username, broker.password)
    if broker.tls:
        try:
            context = ssl.create_default_context(cafile=ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"CA file {ca_file}: {exc}") from exc
        if insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        client.tls_set_context(context)
    return client

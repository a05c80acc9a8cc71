"""The test broker's own start: a port taken between picking it and the broker's bind.

The fleet tests share one broker per session; if it cannot start, every one of them errors.
Another process can take a picked port before mosquitto binds it (CI once lost the whole
fleet suite that way), so the first start picks fresh ports, and a restart, whose clients
reconnect to the old ports, says clearly that it could not bind them.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from mqtt_broker import Mosquitto, mosquitto_missing

pytestmark = pytest.mark.skipif(bool(mosquitto_missing()), reason=mosquitto_missing() or "mosquitto is installed")


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
    except OSError:
        return False
    return True


def test_a_port_taken_before_the_first_start_gets_the_broker_fresh_ports(tmp_path: Path) -> None:
    broker = Mosquitto(tmp_path)
    taken = broker.auth_port
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", taken))
        squatter.listen()
        broker.start()
        try:
            assert broker.auth_port != taken
            assert all(_listening(port) for port in (broker.plain_port, broker.auth_port, broker.tls_port))
        finally:
            broker.stop()


def test_a_restart_whose_port_was_taken_fails_clearly(tmp_path: Path) -> None:
    broker = Mosquitto(tmp_path).start()
    broker.stop()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", broker.plain_port))
        squatter.listen()
        with pytest.raises(RuntimeError, match="could not bind its ports"):
            broker.start()
    assert not broker.running

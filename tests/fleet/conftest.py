"""Fixtures of the fleet tests: ONE real mosquitto for the whole session, and in-process sensors.

``mqtt_broker`` is started once and shared by every fleet test (each test uses its own topic
base, so they do not see each other's messages); a test that restarts a broker makes its own
with ``make_broker``. The sensors are ``tests/sdk/fake_device.py`` devices: the real firmware
link end and the real SDK over ``pair://``, with the camera side faked.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sdk"))  # fake_device.py, shared with the SDK tests

from mqtt_broker import Mosquitto, mosquitto_missing  # noqa: E402

__all__ = ["bridge_process", "make_broker", "mqtt_broker", "topic_base"]


@pytest.fixture(scope="session")
def mqtt_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mosquitto]:
    """The session's broker: plain, password and TLS listeners on 127.0.0.1 (see :mod:`mqtt_broker`)."""
    reason = mosquitto_missing()
    if reason:
        pytest.skip(reason)
    broker = Mosquitto(tmp_path_factory.mktemp("mosquitto")).start()
    yield broker
    broker.stop()


@pytest.fixture
def make_broker(tmp_path: Path) -> Iterator[Callable[..., Mosquitto]]:
    """Factory of dedicated brokers (``make_broker(persistence=False)``), stopped at teardown."""
    reason = mosquitto_missing()
    if reason:
        pytest.skip(reason)
    made: list[Mosquitto] = []

    def factory(*, persistence: bool = False) -> Mosquitto:
        broker = Mosquitto(tmp_path / f"broker{len(made)}", persistence=persistence).start()
        made.append(broker)
        return broker

    yield factory
    for broker in made:
        broker.stop()


@pytest.fixture
def topic_base() -> str:
    """A topic base no other test uses on the shared broker."""
    return f"test-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def bridge_process() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """``bridge_process(*args)``: ``seedcam bridge mqtt ARGS`` as its own process (pipes); killed at teardown."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str) -> subprocess.Popen[str]:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        process = subprocess.Popen(
            [sys.executable, "-m", "seedcam.cli", "bridge", "mqtt", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=10)

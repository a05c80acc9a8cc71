"""A reconnect that reaches another device stops with DeviceMismatch naming both (issue 14, finding 6).

The SDK remembers the serial number and board of the device it first connected to. Another
board that takes over the same port (here: the same ``pair://`` name; end to end: a ``--pty-link``
symlink, tests/e2e/test_device_identity.py) must get nothing of what was meant for the first one:
calls that wait for the link fail, and every later call raises the error too.
"""

# ruff: noqa: F811  (tests take the fixtures imported from fake_device as parameters)

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any

import pytest
from fake_device import (  # noqa: F401 - fixtures
    WAIT_S,
    FakeDevice,
    FakeServices,
    make_device,
    wait_until,
)
from helpers import wait_until_inside

import seedcam
from seedcam import DeviceMismatch, SensorError


class _Board(FakeServices):
    """A fake device with a serial number and board of its own."""

    def __init__(self, serial: str, board: str = "fake-board") -> None:
        super().__init__()
        self.serial_number = serial
        self.board = board

    def device_info(self) -> seedcam.DeviceInfo:
        return dataclasses.replace(super().device_info(), board=self.board)


def _services(serial: str, board: str = "fake-board") -> _Board:
    return _Board(serial, board)


def _in_thread(action: Callable[[], object]) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = action()
        except SensorError as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


def _first_board_dies(first: FakeDevice) -> None:
    first.server.close()
    assert first.sensor is not None
    wait_until(lambda: first.sensor.stats.reconnects >= 1, what="the host to reopen the port")


def _another_board_takes_over(first: FakeDevice, services: FakeServices) -> FakeDevice:
    """The first board dies; another one comes up on the same port."""
    _first_board_dies(first)
    return FakeDevice(url=first.url, services=services)


def test_a_reconnect_to_another_device_stops_with_both_named(make_device: Any) -> None:
    first = make_device(services=_services("SC-FIRST"), reconnect=True, reconnect_interval=0.02)
    sensor = first.sensor
    assert sensor.device_info.serial_number == "SC-FIRST"
    _first_board_dies(first)
    call, box = _in_thread(lambda: sensor.config_get("camera.fps", timeout=WAIT_S))
    wait_until_inside(call, "wait_for")  # for the reopened link to be checked
    other = FakeDevice(url=first.url, services=_services("SC-OTHER", board="other-board"))
    try:
        call.join(WAIT_S + 1)
        error = box.get("error")
        assert isinstance(error, DeviceMismatch), box
        assert (error.expected_serial, error.found_serial) == ("SC-FIRST", "SC-OTHER")
        assert (error.expected_board, error.found_board) == ("fake-board", "other-board")
        assert "SC-FIRST" in str(error) and "SC-OTHER" in str(error)
        # the other board was asked who it is, and nothing else
        assert "config_get" not in other.services.calls
        # the session is over: every later call, and waiting for results, raise the same error
        with pytest.raises(DeviceMismatch):
            sensor.ping()
        with pytest.raises(DeviceMismatch):
            sensor.recv(timeout=0.1)
        assert sensor.device_info.serial_number == "SC-FIRST"
    finally:
        other.close()


def test_the_same_device_after_a_restart_is_welcome(make_device: Any) -> None:
    first = make_device(services=_services("SC-SAME"), reconnect=True, reconnect_interval=0.02)
    events: list[seedcam.ReconnectEvent] = []
    first.sensor.on_reconnect(events.append)
    again = _another_board_takes_over(first, _services("SC-SAME"))  # same serial and board, a new boot id
    try:
        wait_until(lambda: events, what="the reconnect")
        assert events[0].device_rebooted
        assert first.sensor.config_get("camera.fps") == 30
    finally:
        again.close()


def test_calls_wait_for_the_check_of_a_reopened_link(make_device: Any) -> None:
    """Until the device on a reopened link said who it is, nothing else is sent to it."""
    first = make_device(services=_services("SC-FIRST"), reconnect=True, reconnect_interval=0.02)
    services = _services("SC-FIRST")
    gate = threading.Event()
    entered = threading.Event()
    device_info = services.device_info
    test_thread = threading.current_thread()

    def slow_device_info() -> seedcam.DeviceInfo:  # the device is slow to answer who it is (its Hello is not)
        if threading.current_thread() is not test_thread:
            entered.set()
            gate.wait(WAIT_S)
        return device_info()

    services.device_info = slow_device_info  # type: ignore[method-assign]
    again = _another_board_takes_over(first, services)
    try:
        assert entered.wait(WAIT_S)
        call, box = _in_thread(lambda: first.sensor.config_get("camera.fps", timeout=WAIT_S))
        wait_until_inside(call, "wait_for")
        assert "config_get" not in services.calls  # held back while the link is checked
        gate.set()
        call.join(WAIT_S + 1)
        assert box == {"value": 30}
        assert services.calls.index("device_info") < services.calls.index("config_get")
    finally:
        gate.set()
        again.close()


def test_another_device_announcing_itself_on_an_open_port_stops_the_session(make_device: Any) -> None:
    """A UART the host never saw close: the other board's Hello is enough."""
    dev = make_device(services=_services("SC-FIRST"), reconnect=False)
    dev.services.serial_number = "SC-SWAPPED"
    dev.send_hello()
    wait_until(lambda: dev.sensor.session.closed, what="the session to stop")
    with pytest.raises(DeviceMismatch) as mismatch:
        dev.sensor.ping()
    assert mismatch.value.found_serial == "SC-SWAPPED"


def test_a_device_without_serial_number_is_known_by_its_board(make_device: Any) -> None:
    first = make_device(services=_services(""), reconnect=True, reconnect_interval=0.02)
    other = _another_board_takes_over(first, _services("", board="other-board"))
    try:
        with pytest.raises(DeviceMismatch) as mismatch:
            first.sensor.ping(timeout=WAIT_S)
        assert (mismatch.value.expected_board, mismatch.value.found_board) == ("fake-board", "other-board")
    finally:
        other.close()


def test_device_mismatch_is_a_sensor_error_exported_from_seedcam() -> None:
    assert issubclass(DeviceMismatch, seedcam.SensorError)
    assert "DeviceMismatch" in seedcam.__all__

"""The host session against the real firmware link end (LinkServer + Dispatcher) on a pair://.

Every wait is bounded: events, or polling with a deadline (``wait_until``).
"""

# ruff: noqa: F811  (tests take the fixtures imported from fake_device as parameters)

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from cobs import cobs
from fake_device import (  # noqa: F401 - fixtures
    FAKE_JPEG,
    WAIT_S,
    FakeDevice,
    device,
    make_device,
    unique_url,
    wait_until,
)

import seedcam
import seedcam.ports
from seedcam import LinkBroken, NoSensorFound, RpcError, SensorTimeout
from seedcam._proto import seedcam_pb2 as pb
from seedcam.ports import SEEDCAM_PID, SEEDCAM_VID, PortInfo
from seedcam.protocol.framing import PROTOCOL_VERSION, Channel, Flag, Frame, encode_frame
from seedcam.transport import open_transport

pytestmark = pytest.mark.timeout(30)


def run_in_thread(fn: Any, *args: Any) -> tuple[threading.Thread, dict[str, Any]]:
    """Run ``fn(*args)`` in a thread; the dict gets ``value`` or ``error``."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, box


# ---------------------------------------------------------------- open / handshake / timeouts


def test_open_handshake_gives_device_info(device: FakeDevice) -> None:
    info = device.sensor.device_info
    assert isinstance(info, seedcam.DeviceInfo)
    assert info.boot_id == device.services.boot_id
    assert info.serial_number == "SC-TEST-0001"
    assert info.protocol_version == PROTOCOL_VERSION == 2
    assert [m.id for m in info.models] == ["lane-int8@1.0.0", "det-int8@0.3.0"]
    assert info.models[0].input_shape == (1, 96, 160, 3)
    assert device.sensor.connected
    assert device.sensor.ping(b"\x00abc\x00") >= 0  # zero bytes survive the COBS framing


def test_open_device_that_never_answers_times_out_quickly() -> None:
    url = unique_url("silent")
    with open_transport(url):  # the other end exists, but nothing reads or answers
        start = time.monotonic()
        with pytest.raises(SensorTimeout):
            seedcam.open(url, timeout=0.5, reconnect=False)
        assert time.monotonic() - start < 2.0


def test_recv_returns_none_promptly_and_results_timeout_raises(device: FakeDevice) -> None:
    start = time.monotonic()
    assert device.sensor.recv(timeout=0.2) is None
    assert 0.15 <= time.monotonic() - start < 1.5
    start = time.monotonic()
    with pytest.raises(SensorTimeout):
        next(device.sensor.results(timeout=0.2))
    assert time.monotonic() - start < 1.5


# ---------------------------------------------------------------- results and calls together


def test_results_flow_during_a_slow_call(device: FakeDevice) -> None:
    gate = threading.Event()
    device.services.snapshot_gate = gate
    call, box = run_in_thread(device.sensor.snapshot)
    assert device.services.snapshot_entered.wait(WAIT_S), "snapshot handler never ran"
    sent = [device.send_result() for _ in range(3)]
    got = [device.sensor.recv(timeout=WAIT_S) for _ in sent]
    assert [r.frame_id for r in got if r is not None] == sent
    assert call.is_alive(), "the call returned before the device answered"
    gate.set()
    call.join(WAIT_S)
    assert not call.is_alive()
    assert "error" not in box, box.get("error")
    snap = box["value"]
    assert snap.jpeg == FAKE_JPEG and (snap.width, snap.height, snap.frame_id) == (320, 240, 42)


def test_concurrent_calls_each_get_their_own_answer(device: FakeDevice) -> None:
    device.services.config.update({f"k.{i}": i * 11 for i in range(6)})
    barrier = threading.Barrier(12)

    def config_worker(i: int) -> object:
        barrier.wait(WAIT_S)
        return [device.sensor.config_get(f"k.{i}") for _ in range(5)]

    def ping_worker(i: int) -> object:
        barrier.wait(WAIT_S)
        payload = bytes([i]) * (i * 100 + 1)
        for _ in range(5):
            device.sensor.ping(payload)  # raises ProtocolError if it got someone else's pong
        return payload

    jobs = [run_in_thread(config_worker, i) for i in range(6)] + [run_in_thread(ping_worker, i) for i in range(6)]
    for thread, _ in jobs:
        thread.join(WAIT_S * 2)
        assert not thread.is_alive()
    for i, (_, box) in enumerate(jobs[:6]):
        assert box.get("value") == [i * 11] * 5, box
    for i, (_, box) in enumerate(jobs[6:]):
        assert box.get("value") == bytes([i]) * (i * 100 + 1), box


def test_latest_wins_queue_keeps_the_newest(make_device: Any) -> None:
    dev = make_device(queue_size=4, reconnect=False)
    for frame_id in range(10):
        dev.send_result(frame_id)
    wait_until(lambda: dev.sensor.stats.results_received == 10, what="10 results")
    got = [dev.sensor.recv(timeout=1.0) for _ in range(4)]
    assert [r.frame_id for r in got if r is not None] == [6, 7, 8, 9]
    assert dev.sensor.recv(timeout=0.05) is None
    stats = dev.sensor.stats
    assert stats.results_dropped == 6
    assert stats.results_received == 10


def test_queue_size_must_be_positive() -> None:
    with pytest.raises(ValueError):
        seedcam.Sensor("pair://never-opened", queue_size=0)


# ---------------------------------------------------------------- device status codes


def test_rpc_errors_carry_the_device_status(device: FakeDevice) -> None:
    sensor = device.sensor
    with pytest.raises(RpcError) as exc:
        sensor.config_get("camera.nosuch")
    assert exc.value.status == "NOT_FOUND" and "camera.nosuch" in exc.value.detail
    with pytest.raises(RpcError) as exc:
        sensor.config_set("camera.fps", "fast")
    assert exc.value.status == "INVALID_ARGUMENT"
    with pytest.raises(RpcError) as exc:
        sensor.select_tasks(["lane", "telepathy"])
    assert exc.value.status == "INVALID_ARGUMENT" and "telepathy" in str(exc.value)
    # and the good paths on the same link
    assert sensor.config_get("camera.fps") == 30
    stored = sensor.config_set("camera.width", 640)
    assert (stored.key, stored.value, stored.restart_required) == ("camera.width", 640, True)
    assert sensor.select_tasks(["lane", "ocr"]).enabled == ("lane", "ocr")
    assert [m.task for m in sensor.models()] == ["lane", "detection"]


def test_unsupported_request(device: FakeDevice) -> None:
    newer = pb.Request()
    newer.ParseFromString(b"\xfa\x01\x00")  # field 31: a request kind from a newer host
    with pytest.raises(RpcError) as exc:
        device.sensor._call(newer, timeout=WAIT_S)
    assert exc.value.status == "UNSUPPORTED"
    with pytest.raises(RpcError) as exc:
        device.sensor._call(pb.Request(), timeout=WAIT_S)
    assert exc.value.status == "UNSUPPORTED"


def test_handler_crash_answers_internal_and_link_survives(device: FakeDevice) -> None:
    device.services.failures["list_models"] = RuntimeError("flash read failed")
    with pytest.raises(RpcError) as exc:
        device.sensor.models()
    assert exc.value.status == "INTERNAL" and "flash read failed" in exc.value.detail
    assert device.sensor.ping(b"still here") >= 0
    device.send_result(7)
    result = device.sensor.recv(timeout=WAIT_S)
    assert result is not None and result.frame_id == 7


# ---------------------------------------------------------------- callbacks and asyncio


def test_result_and_health_callbacks_and_unregister(device: FakeDevice) -> None:
    sensor = device.sensor
    first: list[int] = []
    always: list[int] = []
    healths: list[seedcam.Health] = []
    unregister_first = sensor.on_result(lambda r: first.append(r.frame_id))
    sensor.on_result(lambda r: always.append(r.frame_id))
    unregister_health = sensor.on_health(healths.append)

    device.send_result(1)
    device.send_health(fps=29.5)
    wait_until(lambda: always == [1] and len(healths) == 1, what="callbacks")
    assert first == [1]
    assert healths[0].fps == pytest.approx(29.5) and healths[0].boot_id == device.services.boot_id
    assert sensor.health == healths[0]
    assert sensor.stats.device_link is not None and sensor.stats.device_link.frames_tx >= 1

    unregister_first()
    unregister_first()  # twice is harmless
    unregister_health()
    device.send_health()
    device.send_result(2)
    # callbacks run in order on the reader thread: once `always` saw 2, the health
    # before it was handled and `first` would have been called for 2.
    wait_until(lambda: always == [1, 2], what="second result")
    assert first == [1]
    assert len(healths) == 1


def test_raising_callback_does_not_kill_the_reader(device: FakeDevice) -> None:
    def boom(_: object) -> None:
        raise RuntimeError("user bug")

    seen: list[int] = []
    device.sensor.on_result(boom)
    device.sensor.on_health(boom)
    device.sensor.on_result(lambda r: seen.append(r.frame_id))
    device.send_health()
    for frame_id in (1, 2, 3):
        device.send_result(frame_id)
    wait_until(lambda: seen == [1, 2, 3], what="results after a raising callback")
    assert [device.sensor.recv(timeout=WAIT_S).frame_id for _ in range(3)] == [1, 2, 3]
    assert device.sensor.ping() >= 0


def test_async_iteration(device: FakeDevice) -> None:
    async def collect() -> list[int]:
        got: list[int] = []
        async for result in device.sensor.aresults(timeout=WAIT_S):
            got.append(result.frame_id)
            if len(got) == 3:
                break
        return got

    async def main() -> list[int]:
        task = asyncio.ensure_future(collect())
        loop = asyncio.get_running_loop()
        for frame_id in (10, 11, 12):  # sent while the loop is already waiting
            await loop.run_in_executor(None, device.send_result, frame_id)
        return await asyncio.wait_for(task, WAIT_S)

    assert asyncio.run(main()) == [10, 11, 12]


# ---------------------------------------------------------------- a noisy link


def test_garbage_between_frames_is_counted_and_results_keep_coming(device: FakeDevice) -> None:
    sensor = device.sensor
    before = sensor.stats.link
    device.send_result(1)
    device.write_raw(b"\x05garbage that is not cobs\x00")  # COBS structure broken
    device.write_raw(b"\x02\x01\x00")  # decodes, but too short for a frame
    body = encode_frame(Frame(Channel.RESULT, 0, b""))[:-1]
    raw = bytearray(cobs.decode(body))
    raw[-1] ^= 0x5A  # the CRC no longer matches
    device.write_raw(cobs.encode(bytes(raw)) + b"\x00")
    device.write_raw(b"\x00\x00\x00")  # idle fill is not an error
    device.send_result(2)
    device.send_result(3)
    got = [sensor.recv(timeout=WAIT_S) for _ in range(3)]
    assert [r.frame_id for r in got if r is not None] == [1, 2, 3]
    link = sensor.stats.link
    assert link.decode_errors - before.decode_errors == 2
    assert link.crc_errors - before.crc_errors == 1
    assert link.resyncs - before.resyncs == 3
    assert link.corrupted - before.corrupted == 3
    assert sensor.stats.undecodable_messages == 0


def test_crc_valid_but_undecodable_protobuf_is_counted(device: FakeDevice) -> None:
    device.send_payload(Channel.RESULT, b"\x0a\x05ab")  # length-delimited field cut short
    device.send_payload(Channel.STATUS, b"\xff\xff\xff")
    device.send_result(5)
    result = device.sensor.recv(timeout=WAIT_S)
    assert result is not None and result.frame_id == 5
    assert device.sensor.stats.undecodable_messages == 2
    assert device.sensor.stats.link.corrupted == 0  # the frames themselves were fine


def test_undecodable_response_fails_its_call_at_once(device: FakeDevice) -> None:
    device.services.snapshot_gate = threading.Event()  # the real answer never comes
    call, box = run_in_thread(lambda: device.sensor.snapshot(timeout=30))
    assert device.services.snapshot_entered.wait(WAIT_S)
    started = time.monotonic()
    for seq in range(64):  # garbage answers to every recent request number
        device.write_raw(encode_frame(Frame(Channel.CONTROL, seq, b"\xff\xff", Flag.RESPONSE)))
    call.join(WAIT_S)
    assert not call.is_alive() and time.monotonic() - started < WAIT_S
    assert isinstance(box.get("error"), seedcam.ProtocolError)
    device.services.snapshot_gate.set()


# ---------------------------------------------------------------- link loss


def test_peer_close_without_reconnect_raises_link_broken(device: FakeDevice) -> None:
    device.send_result(1)
    device.server.close()
    # what arrived before the close is still delivered, then the loss surfaces
    result = device.sensor.recv(timeout=WAIT_S)
    assert result is not None and result.frame_id == 1
    with pytest.raises(LinkBroken):
        device.sensor.recv(timeout=WAIT_S)
    assert not device.sensor.connected and not device.sensor.stats.connected
    with pytest.raises(LinkBroken):
        device.sensor.ping(timeout=WAIT_S)


def test_pending_call_fails_with_link_broken_instead_of_hanging(device: FakeDevice) -> None:
    device.services.snapshot_gate = threading.Event()
    call, box = run_in_thread(device.sensor.snapshot)
    assert device.services.snapshot_entered.wait(WAIT_S)
    start = time.monotonic()
    device.drop_link()
    call.join(WAIT_S)
    assert not call.is_alive()
    assert isinstance(box.get("error"), LinkBroken), box
    assert time.monotonic() - start < 2.0
    with pytest.raises(LinkBroken):
        device.sensor.recv(timeout=1.0)


def test_closed_sensor_raises_link_broken(device: FakeDevice) -> None:
    device.sensor.close()
    device.sensor.close()  # idempotent
    with pytest.raises(LinkBroken):
        device.sensor.recv(timeout=1.0)
    with pytest.raises(LinkBroken):
        device.sensor.ping()


# ---------------------------------------------------------------- reboot detection


def _reconnect_events(sensor: seedcam.Sensor) -> list[seedcam.ReconnectEvent]:
    events: list[seedcam.ReconnectEvent] = []
    sensor.on_reconnect(events.append)
    return events


def _sync(device: FakeDevice, frame_id: int) -> None:
    """Send a result and wait for it: every frame sent before it has been handled."""
    device.send_result(frame_id)
    result = device.sensor.recv(timeout=WAIT_S)
    assert result is not None and result.frame_id == frame_id


def test_hello_with_same_boot_id_is_not_a_reboot(device: FakeDevice) -> None:
    events = _reconnect_events(device.sensor)
    device.send_hello()
    device.send_health()
    _sync(device, 1)
    assert events == []
    assert device.sensor.stats.device_reboots == 0
    assert device.sensor.last_reconnect is None


def test_hello_with_new_boot_id_is_a_reboot(device: FakeDevice) -> None:
    events = _reconnect_events(device.sensor)
    old = device.services.boot_id
    device.services.boot_id = "boot-after-power-cut"
    device.send_hello()
    wait_until(lambda: events, what="reconnect event")
    event = events[0]
    assert event.device_rebooted is True
    assert (event.old_boot_id, event.new_boot_id) == (old, "boot-after-power-cut")
    assert device.sensor.stats.device_reboots == 1
    assert device.sensor.device_info.boot_id == "boot-after-power-cut"
    assert device.sensor.last_reconnect == event
    # the same Hello again changes nothing
    device.send_hello()
    _sync(device, 1)
    assert len(events) == 1 and device.sensor.stats.device_reboots == 1


def test_health_with_new_boot_id_is_a_reboot(device: FakeDevice) -> None:
    events = _reconnect_events(device.sensor)
    old = device.services.boot_id
    device.services.boot_id = "boot-two"
    device.send_health()  # health carries the new boot id; the SDK asks the device who it is
    wait_until(lambda: events, what="reconnect event")
    assert events[0].device_rebooted is True
    assert (events[0].old_boot_id, events[0].new_boot_id) == (old, "boot-two")
    assert device.sensor.stats.device_reboots == 1
    assert device.sensor.stats.reconnects == 0  # the link itself never went away
    # later health reports from the same boot change nothing
    device.send_health()
    _sync(device, 1)
    assert len(events) == 1
    # a second reboot, announced by a Hello, names the right boots
    device.services.boot_id = "boot-three"
    device.send_hello()
    wait_until(lambda: len(events) == 2, what="second reconnect event")
    assert (events[1].old_boot_id, events[1].new_boot_id) == ("boot-two", "boot-three")
    assert device.sensor.stats.device_reboots == 2


def test_reconnect_after_link_loss_detects_reboot(make_device: Any) -> None:
    dev = make_device(reconnect=True, reconnect_interval=0.02)
    events = _reconnect_events(dev.sensor)
    old = dev.services.boot_id
    dev.services.boot_id = "boot-reflashed"
    dev.drop_link()  # the device end goes away; the LinkServer reopens pair://NAME, so does the SDK
    wait_until(lambda: events, what="reconnect event")
    assert events[0].device_rebooted is True
    assert (events[0].old_boot_id, events[0].new_boot_id) == (old, "boot-reflashed")
    assert dev.sensor.stats.reconnects >= 1
    _sync(dev, 3)


def test_reconnect_after_link_loss_with_same_boot_is_a_link_glitch(make_device: Any) -> None:
    dev = make_device(reconnect=True, reconnect_interval=0.02)
    events = _reconnect_events(dev.sensor)
    dev.drop_link()  # a cable glitch: the same firmware instance comes back
    wait_until(lambda: events, what="reconnect event")
    assert events[0].device_rebooted is False
    assert events[0].old_boot_id == events[0].new_boot_id == dev.services.boot_id
    assert dev.sensor.stats.device_reboots == 0 and dev.sensor.stats.reconnects >= 1
    assert dev.sensor.last_reconnect == events[0]
    _sync(dev, 3)


def test_a_call_during_a_link_loss_waits_for_the_reconnect(tmp_path: Any) -> None:
    """The device is gone (its pty link vanished); a call waits for it instead of failing at once."""
    from fake_device import FakeServices

    from seedcam_firmware.link_server import LinkServer
    from seedcam_firmware.rpc import Dispatcher

    url = f"pty://{tmp_path / 'sensor'}"
    server = LinkServer(url, Dispatcher(FakeServices()))
    server.start()
    sensor = seedcam.open(str(tmp_path / "sensor"), timeout=WAIT_S, reconnect_interval=0.02)
    try:
        server.close()  # the pty and its symlink are gone: reopening fails until a new server appears
        wait_until(lambda: not sensor.connected, what="the host to notice the loss")
        call, box = run_in_thread(lambda: sensor.ping(b"still there?", timeout=WAIT_S))
        server = LinkServer(url, Dispatcher(FakeServices()))
        server.start()
        call.join(WAIT_S + 1)
        assert "error" not in box, box.get("error")
        assert sensor.stats.reconnects == 1
    finally:
        sensor.close()
        server.close()


# ---------------------------------------------------------------- seedcam.open() without a URL


def test_open_uses_env_port(monkeypatch: pytest.MonkeyPatch) -> None:
    other = FakeDevice()
    try:
        monkeypatch.setenv("SEEDCAM_PORT", other.url)
        with seedcam.open(timeout=WAIT_S, reconnect=False) as sensor:
            assert sensor.url == other.url
            assert sensor.device_info.boot_id == other.services.boot_id
    finally:
        other.close()


def test_open_without_any_sensor_raises_no_sensor_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEEDCAM_PORT", raising=False)
    monkeypatch.setattr(seedcam.ports, "list_ports", lambda: [PortInfo("/dev/ttyS0")])
    with pytest.raises(NoSensorFound):
        seedcam.open(timeout=0.5)
    monkeypatch.setattr(seedcam.ports, "list_ports", list)
    with pytest.raises(LookupError):  # NoSensorFound is also a LookupError
        seedcam.open(timeout=0.5)


def test_open_with_two_sensors_names_both(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEEDCAM_PORT", raising=False)
    ports = [
        PortInfo("/dev/ttyACM0", SEEDCAM_VID, SEEDCAM_PID, "SC-AAA"),
        PortInfo("/dev/ttyACM1", SEEDCAM_VID, SEEDCAM_PID, "SC-BBB"),
    ]
    monkeypatch.setattr(seedcam.ports, "list_ports", lambda: ports)
    with pytest.raises(NoSensorFound) as exc:
        seedcam.open(timeout=0.5)
    message = str(exc.value)
    for text in ("/dev/ttyACM0", "/dev/ttyACM1", "SC-AAA", "SC-BBB"):
        assert text in message

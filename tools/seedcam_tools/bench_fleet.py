"""``seedcam-tools bench fleet``: N sensors at F fps, each with its MQTT bridge, through one broker.

Each sensor is the firmware's real link end (LinkServer + Dispatcher) over an in-process
``pair://`` with the SDK's real Sensor on the other side, and a bridge (seedcam.fleet)
publishing into the broker; one MQTT subscriber takes every ``results`` message. A
result's capture timestamp is the sender's ``time.monotonic()`` (one machine, one clock),
so the subscriber's arrival time minus it is the end-to-end latency: device link, SDK
decode, bridge, broker, subscriber. Without ``--broker`` a mosquitto on a free port of
127.0.0.1 is started for the run (it must be installed: scripts/mosquitto-deps.sh).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seedcam.types import ConfigValue, DeviceInfo, ModelInfo, Result, Snapshot, TaskList

__all__ = ["FleetBenchResult", "format_fleet_report", "run_fleet_benchmark"]


@dataclass(frozen=True)
class FleetBenchResult:
    sensors: int
    fps: float
    seconds: float
    sent: int
    received: int
    messages_per_s: float
    latency_p50_ms: float
    latency_p95_ms: float
    latency_max_ms: float


class _Services:
    """The device side of a bench sensor: answers the calls a bridge makes."""

    def __init__(self, serial: str) -> None:
        self.serial = serial
        self.boot_id = uuid.uuid4().hex[:8]

    def device_info(self) -> DeviceInfo:
        return DeviceInfo(2, "bench", self.boot_id, self.serial, 65536, board="bench")

    def config_get(self, key: str) -> ConfigValue:
        return ConfigValue(key, None)

    def config_set(self, key: str, value: object) -> ConfigValue:
        return ConfigValue(key, value)

    def config_reset(self, key: str) -> ConfigValue:
        return ConfigValue(key, None)

    def list_models(self) -> Sequence[ModelInfo]:
        return ()

    def select_tasks(self, tasks: Sequence[str]) -> TaskList:
        return TaskList(tuple(tasks))

    def snapshot(self, quality: int) -> Snapshot:
        return Snapshot(b"\xff\xd8\xff\xd9", 0, 0, 1, 1)

    def reboot(self) -> None:
        return None


@contextmanager
def _mosquitto() -> Iterator[str]:
    binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    if not Path(binary).exists():
        raise RuntimeError("mosquitto is not installed (scripts/mosquitto-deps.sh), and no --broker was given")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryDirectory(prefix="seedcam-bench-fleet-") as folder:
        config = Path(folder) / "mosquitto.conf"
        config.write_text(f"persistence false\nuser root\nlistener {port} 127.0.0.1\nallow_anonymous true\n")
        process = subprocess.Popen([binary, "-c", str(config)], stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    if time.monotonic() > deadline or process.poll() is not None:
                        raise RuntimeError("mosquitto did not start") from None
                    time.sleep(0.02)  # polling a listening socket with a deadline
            yield f"mqtt://127.0.0.1:{port}"
        finally:
            process.terminate()
            process.wait(10)


def run_fleet_benchmark(
    sensors: int = 20, fps: float = 30.0, seconds: float = 10.0, broker: str | None = None, qos: int = 0
) -> FleetBenchResult:
    """Run the benchmark and return its figures."""
    with _mosquitto() if broker is None else _nullcontext(broker) as url:
        return _run(url, sensors, fps, seconds, qos)


@contextmanager
def _nullcontext(value: str) -> Iterator[str]:
    yield value


def _run(url: str, sensors: int, fps: float, seconds: float, qos: int) -> FleetBenchResult:
    import paho.mqtt.client as mqtt

    import seedcam
    from seedcam.fleet import BridgeOptions, MqttBridge, parse_broker_url
    from seedcam.protocol.framing import Channel  # noqa: F401 - the link end below sends RESULT frames
    from seedcam_firmware.link_server import LinkServer
    from seedcam_firmware.rpc import Dispatcher

    base = f"bench-{uuid.uuid4().hex[:6]}"
    latencies: list[float] = []
    lock = threading.Lock()
    subscribed = threading.Event()

    def on_message(client: Any, userdata: Any, message: Any) -> None:
        now = time.monotonic()
        from seedcam._proto import seedcam_pb2 as pb

        captured = pb.Result.FromString(message.payload).capture_timestamp_us / 1e6
        with lock:
            latencies.append(now - captured)

    watcher = mqtt.Client(callback_api_version=mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
    watcher.on_message = on_message
    watcher.on_subscribe = lambda *a: subscribed.set()
    watcher.on_connect = lambda c, *a: c.subscribe(f"{base}/+/results", qos)
    parsed = parse_broker_url(url)
    watcher.connect(parsed.host, parsed.port)
    watcher.loop_start()
    subscribed.wait(10)
    servers, opened, bridges = [], [], []
    try:
        for index in range(sensors):
            link = f"pair://bench-{uuid.uuid4().hex[:10]}"
            server = LinkServer(link, Dispatcher(_Services(f"B{index:03d}")), write_timeout=1.0)  # type: ignore[arg-type]
            server.start()
            servers.append(server)
            sensor = seedcam.open(link, timeout=5.0, queue_size=4)
            opened.append(sensor)
            options = BridgeOptions(base=base, device_id=f"s{index:03d}", discovery=False, results_qos=qos)
            bridges.append(MqttBridge(sensor, parsed, options).start())
        sent = 0
        period = 1.0 / fps
        start = time.monotonic()
        frame = 0
        while time.monotonic() - start < seconds:
            tick = start + frame * period
            time.sleep(max(0.0, tick - time.monotonic()))  # the camera's pace
            for server in servers:
                now_us = int(time.monotonic() * 1e6)
                if server.send_result(Result(frame_id=frame, capture_timestamp_us=now_us)):
                    sent += 1
            frame += 1
        elapsed = time.monotonic() - start
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with lock:
                if len(latencies) >= sent:
                    break
            time.sleep(0.05)  # draining what is in flight, with a deadline
    finally:
        for bridge in bridges:
            bridge.stop()
        for sensor in opened:
            sensor.close()
        for server in servers:
            server.close()
        watcher.disconnect()
        watcher.loop_stop()
    ordered = sorted(latencies)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000 if ordered else float("nan")

    return FleetBenchResult(
        sensors=sensors,
        fps=fps,
        seconds=round(elapsed, 2),
        sent=sent,
        received=len(ordered),
        messages_per_s=round(len(ordered) / elapsed, 1),
        latency_p50_ms=round(pct(0.50), 2),
        latency_p95_ms=round(pct(0.95), 2),
        latency_max_ms=round(ordered[-1] * 1000, 2) if ordered else float("nan"),
    )


def format_fleet_report(result: FleetBenchResult) -> str:
    return (
        f"fleet: {result.sensors} sensors x {result.fps:g} fps for {result.seconds:g} s through one broker\n"
        f"  results sent {result.sent}, received {result.received}: {result.messages_per_s:g} messages/s\n"
        f"  end-to-end latency p50 {result.latency_p50_ms:g} ms, p95 {result.latency_p95_ms:g} ms, "
        f"max {result.latency_max_ms:g} ms\n"
    )

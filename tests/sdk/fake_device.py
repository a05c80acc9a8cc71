"""A sensor with a fake camera/model side: the REAL link server and dispatcher on a ``pair://``.

Only :class:`FakeServices` is fake; framing, codec, the firmware's
:class:`~seedcam_firmware.link_server.LinkServer` and
:class:`~seedcam_firmware.rpc.Dispatcher` and the SDK's :class:`seedcam.Sensor`
are the production code, talking through an in-process transport pair.

Fixtures (import them into a test module, or re-export from a conftest)::

    from fake_device import FakeDevice, device, make_device  # noqa: F401

    def test_x(device):                 # device.sensor is open
        device.send_result(1)
        assert device.sensor.recv(timeout=2).frame_id == 1
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from helpers import wait_until  # re-exported (in __all__): the SDK tests import it with the fixtures

import seedcam
from seedcam._proto import seedcam_pb2 as pb
from seedcam.protocol import codec
from seedcam.protocol.framing import PROTOCOL_VERSION, Channel
from seedcam.types import (
    ConfigValue,
    DeviceInfo,
    Health,
    ModelInfo,
    Result,
    Snapshot,
    TaskList,
)
from seedcam_firmware.errors import ConfigError, UnknownConfigKey
from seedcam_firmware.link_server import LinkServer
from seedcam_firmware.rpc import DeviceServices, Dispatcher, RequestFailed

__all__ = [
    "FAKE_JPEG",
    "FakeDevice",
    "FakeServices",
    "device",
    "make_device",
    "make_result",
    "unique_url",
    "wait_until",
]

#: What :meth:`FakeServices.snapshot` returns (a JPEG's start and end markers around junk).
FAKE_JPEG = b"\xff\xd8\xff\xe0" + bytes(range(256)) * 4 + b"\xff\xd9"

#: Upper bound of every wait in these tests: generous for a loaded 2-core box.
WAIT_S = 5.0


def unique_url(prefix: str = "fake") -> str:
    """A ``pair://`` URL no other test uses."""
    return f"pair://{prefix}-{uuid.uuid4().hex[:12]}"


def make_result(frame_id: int) -> Result:
    """A small result with a model id and a timing, as the pipeline would send it."""
    return Result(
        frame_id=frame_id,
        capture_timestamp_us=1_000_000 + frame_id * 33_333,
        timings_us={"inference:lane": 1200, "capture_to_result": 4000},
        model_ids=("lane-int8@1.0.0",),
        frame_width=320,
        frame_height=240,
    )


class FakeServices(DeviceServices):
    """A :class:`DeviceServices` whose behaviour tests control.

    Attributes:
        boot_id: reported by :meth:`device_info`; change it to fake a reboot.
        config: flat dotted-key config; unknown keys raise ``UnknownConfigKey``
            (answered NOT_FOUND), non-int values for int keys ``ConfigError`` (INVALID_ARGUMENT).
        snapshot_gate: when set to an unset Event, :meth:`snapshot` blocks on it (bounded);
            :attr:`snapshot_entered` is set once the call is inside.
        failures: method name → exception the method raises instead of working.
        calls: method names in call order.
    """

    AVAILABLE_TASKS = ("lane", "detection", "ocr", "classification")

    def __init__(self) -> None:
        self.boot_id = "boot-" + uuid.uuid4().hex[:8]
        self.serial_number = "SC-TEST-0001"
        self.config: dict[str, object] = {"camera.fps": 30, "camera.width": 320, "pipeline.jpeg_quality": 80}
        self.restart_keys = {"camera.width"}
        self.tasks_enabled: tuple[str, ...] = ("lane",)
        self.models = (
            ModelInfo(
                "lane-int8@1.0.0",
                "lane",
                "1.0.0",
                "lane",
                "int8",
                sha256="ab" * 32,
                active=True,
                input_shape=(1, 96, 160, 3),
                size_bytes=123_456,
            ),
            ModelInfo("det-int8@0.3.0", "det", "0.3.0", "detection", "int8", sha256="cd" * 32),
        )
        self.snapshot_gate: threading.Event | None = None
        self.snapshot_entered = threading.Event()
        self.failures: dict[str, BaseException] = {}
        self.calls: list[str] = []

    def _enter(self, name: str) -> None:
        self.calls.append(name)
        failure = self.failures.get(name)
        if failure is not None:
            raise failure

    def device_info(self) -> DeviceInfo:
        self._enter("device_info")
        return DeviceInfo(
            protocol_version=PROTOCOL_VERSION,
            firmware_version="0.1.0-test",
            boot_id=self.boot_id,
            serial_number=self.serial_number,
            max_frame_size=65536,
            models=self.models,
            board="fake-board",
            tasks_enabled=self.tasks_enabled,
            camera="synthetic",
            frame_width=320,
            frame_height=240,
            uptime_s=12.5,
        )

    def config_get(self, key: str) -> ConfigValue:
        self._enter("config_get")
        if not key:
            return ConfigValue("", dict(self.config))
        if key not in self.config:
            raise UnknownConfigKey(f"unknown config key {key!r}")
        return ConfigValue(key, self.config[key], False)

    def config_set(self, key: str, value: object) -> ConfigValue:
        self._enter("config_set")
        if key not in self.config:
            raise UnknownConfigKey(f"unknown config key {key!r}")
        if isinstance(self.config[key], int) and (not isinstance(value, int) or isinstance(value, bool)):
            raise ConfigError(f"{key} must be an integer, got {value!r}")
        self.config[key] = value
        return ConfigValue(key, value, key in self.restart_keys)

    def config_reset(self, key: str) -> ConfigValue:
        self._enter("config_reset")
        return ConfigValue(key, None, False)

    def list_models(self) -> Sequence[ModelInfo]:
        self._enter("list_models")
        return self.models

    def select_tasks(self, tasks: Sequence[str]) -> TaskList:
        self._enter("select_tasks")
        unknown = [t for t in tasks if t not in self.AVAILABLE_TASKS]
        if unknown:
            raise RequestFailed(pb.STATUS_INVALID_ARGUMENT, f"no such task: {', '.join(unknown)}")
        self.tasks_enabled = tuple(tasks)
        return TaskList(self.tasks_enabled, self.AVAILABLE_TASKS)

    def snapshot(self, quality: int) -> Snapshot:
        self._enter("snapshot")
        self.snapshot_entered.set()
        gate = self.snapshot_gate
        if gate is not None and not gate.wait(WAIT_S):
            raise RequestFailed(pb.STATUS_BUSY, "test never released the snapshot gate")
        return Snapshot(FAKE_JPEG, 42, 1_400_000, 320, 240)


class FakeDevice:
    """The device end: a real LinkServer + Dispatcher over FakeServices, on ``url``.

    Attributes:
        url: the ``pair://`` URL a host opens.
        services: the fake camera/model side.
        server: the real firmware link end.
        sensor: the host session, once :meth:`connect` ran.

    ``snapshot_chunk`` > 0 sends snapshots in pieces of that many bytes (as on a slow line).
    """

    def __init__(
        self, url: str | None = None, services: FakeServices | None = None, *, snapshot_chunk: int = 0
    ) -> None:
        self.url = url or unique_url()
        self.services = services or FakeServices()
        dispatcher = Dispatcher(self.services, snapshot_chunk=snapshot_chunk)
        self.server = LinkServer(
            self.url, dispatcher, on_connect=self.send_hello, write_timeout=1.0, reopen_interval=0.02
        )
        self.sensor: seedcam.Sensor | None = None
        self._frame_ids = itertools.count()
        self._streaming = threading.Event()
        self._streamer: threading.Thread | None = None
        self.server.start()

    # -- host side -------------------------------------------------------------

    def connect(self, **options: Any) -> seedcam.Sensor:
        """Open the host session (``seedcam.open(url, **options)``)."""
        options.setdefault("timeout", WAIT_S)
        self.sensor = seedcam.open(self.url, **options)
        return self.sensor

    # -- device side -----------------------------------------------------------

    def send_result(self, frame_id: int | None = None) -> int:
        """Send one result; returns its frame id (auto-incremented when None)."""
        frame_id = next(self._frame_ids) if frame_id is None else frame_id
        assert self.server.send_result(make_result(frame_id)), "result frame dropped"
        return frame_id

    def send_hello(self, boot_id: str | None = None) -> None:
        """Send a Hello status event (the LinkServer's on_connect hook uses this too)."""
        info = self.services.device_info()
        if boot_id is not None:
            info = DeviceInfo(**{**vars(info), "boot_id": boot_id})
        self.server.send_hello(info)

    def send_health(self, boot_id: str | None = None, fps: float = 30.0) -> None:
        """Send a Health status event carrying the device's link counters."""
        counters = self.server.counters
        health = Health(
            boot_id=self.services.boot_id if boot_id is None else boot_id,
            uptime_s=12.5,
            fps=fps,
            frames_captured=100,
            frames_processed=99,
            frames_dropped=1,
            link=codec.link_stats_from_counters(counters),
            active_models=("lane-int8@1.0.0",),
        )
        assert self.server.send_health(health), "health frame dropped"

    def send_payload(self, channel: Channel, payload: bytes) -> None:
        """Send a CRC-valid frame with an arbitrary (possibly undecodable) payload."""
        assert self.server._send_payload(channel, payload), "frame dropped"

    def write_raw(self, data: bytes) -> None:
        """Write bytes straight into the device's transport, bypassing the framing."""
        transport = self.server._transport
        assert transport is not None
        transport.write(data, 1.0)

    def drop_link(self) -> None:
        """Close the device's current transport, as if the cable were pulled."""
        transport = self.server._transport
        assert transport is not None
        transport.close()

    def start_streaming(self, interval_s: float = 0.01) -> None:
        """Send a result with increasing frame id every ``interval_s`` from a thread."""

        def loop() -> None:
            while self._streaming.is_set():
                frame_id = next(self._frame_ids)
                self.server.send_result(make_result(frame_id))
                time.sleep(interval_s)

        self._streaming.set()
        self._streamer = threading.Thread(target=loop, name="fake-device-stream", daemon=True)
        self._streamer.start()

    def close(self) -> None:
        """Close the host session first, then the device."""
        self._streaming.clear()
        if self._streamer is not None:
            self._streamer.join(timeout=WAIT_S)
        if self.sensor is not None:
            self.sensor.close()
        if self.services.snapshot_gate is not None:
            self.services.snapshot_gate.set()  # a handler still blocked must not hold up close()
        self.server.close()


@pytest.fixture
def make_device() -> Iterator[Callable[..., FakeDevice]]:
    """Factory: ``make_device(connect=True, snapshot_chunk=0, **sensor_options)``; all closed afterwards."""
    made: list[FakeDevice] = []

    def factory(
        *, connect: bool = True, services: FakeServices | None = None, snapshot_chunk: int = 0, **options: Any
    ) -> FakeDevice:
        dev = FakeDevice(services=services, snapshot_chunk=snapshot_chunk)
        made.append(dev)
        if connect:
            dev.connect(**options)
        return dev

    yield factory
    for dev in reversed(made):
        dev.close()


@pytest.fixture
def device(make_device: Callable[..., FakeDevice]) -> FakeDevice:
    """A fake device with an open host session (``reconnect=False``: failures stay visible)."""
    return make_device(reconnect=False)

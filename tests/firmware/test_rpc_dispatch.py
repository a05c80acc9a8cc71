"""The firmware's request dispatcher: each request kind to its service call, each failure to a status."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from seedcam._proto import seedcam_pb2 as pb
from seedcam.protocol import codec
from seedcam.types import ConfigValue, DeviceInfo, ModelInfo, Snapshot, TaskList
from seedcam_firmware.errors import CameraError, ConfigError, UnknownConfigKey
from seedcam_firmware.rpc import Dispatcher, RequestFailed

MODELS = (
    ModelInfo(
        "lane-int8@1.0.0", "lane", "1.0.0", "lane", "int8", sha256="ab" * 32, active=True, input_shape=(1, 96, 160, 3)
    ),
    ModelInfo("det-int8@0.3.0", "det", "0.3.0", "detection", "int8", sha256="cd" * 32),
)
INFO = DeviceInfo(
    protocol_version=1,
    firmware_version="0.1.0",
    boot_id="boot-1",
    serial_number="SC-1",
    max_frame_size=65536,
    models=MODELS,
    board="test-board",
    tasks_enabled=("lane",),
    camera="synthetic",
    frame_width=320,
    frame_height=240,
    uptime_s=3.5,
)
SNAP = Snapshot(b"\xff\xd8jpeg\xff\xd9", 42, 1_400_000, 320, 240)


class RecordingServices:
    """Records (method, args); ``fail`` maps a method name to the exception it raises."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[object, ...]]] = []
        self.fail: dict[str, BaseException] = {}

    def _enter(self, name: str, *args: object) -> None:
        self.calls.append((name, args))
        if name in self.fail:
            raise self.fail[name]

    def device_info(self) -> DeviceInfo:
        self._enter("device_info")
        return INFO

    def config_get(self, key: str) -> ConfigValue:
        self._enter("config_get", key)
        return ConfigValue(key, 30.0, False)

    def config_set(self, key: str, value: object) -> ConfigValue:
        self._enter("config_set", key, value)
        return ConfigValue(key, value, True, persisted=True)

    def config_reset(self, key: str) -> ConfigValue:
        self._enter("config_reset", key)
        return ConfigValue(key, {"fps": 30.0}, True)

    def list_models(self) -> Sequence[ModelInfo]:
        self._enter("list_models")
        return MODELS

    def select_tasks(self, tasks: Sequence[str]) -> TaskList:
        self._enter("select_tasks", list(tasks))
        return TaskList(tuple(tasks), ("lane", "detection"))

    def snapshot(self, quality: int) -> Snapshot:
        self._enter("snapshot", quality)
        return SNAP

    def reboot(self) -> None:
        self._enter("reboot")


@pytest.fixture
def services() -> RecordingServices:
    return RecordingServices()


@pytest.fixture
def dispatch(services: RecordingServices) -> Dispatcher:
    return Dispatcher(services)


def _ok(response: pb.Response) -> pb.Response:
    assert response.status == pb.STATUS_OK, response.message
    return response


# ---- every kind reaches its service -----------------------------------------------


def test_info(dispatch: Dispatcher, services: RecordingServices) -> None:
    response = _ok(dispatch(pb.Request(info=pb.InfoRequest(host_protocol_version=1))))
    assert services.calls == [("device_info", ())]
    assert codec.device_info_from_pb(response.info) == INFO


def test_ping_echoes_without_a_service_call(dispatch: Dispatcher, services: RecordingServices) -> None:
    response = _ok(dispatch(pb.Request(ping=pb.PingRequest(payload=b"\x00abc\xff"))))
    assert response.pong.payload == b"\x00abc\xff"
    assert services.calls == []


def test_config_get(dispatch: Dispatcher, services: RecordingServices) -> None:
    response = _ok(dispatch(pb.Request(config_get=pb.ConfigGetRequest(key="camera.fps"))))
    assert services.calls == [("config_get", ("camera.fps",))]
    assert response.config.key == "camera.fps"
    assert json.loads(response.config.value_json) == 30.0
    assert response.config.restart_required is False


def test_config_set_decodes_the_json_value(dispatch: Dispatcher, services: RecordingServices) -> None:
    value = {"fps": 15, "names": ["a", "b"], "on": True}
    request = pb.Request(config_set=pb.ConfigSetRequest(key="camera", value_json=json.dumps(value)))
    response = _ok(dispatch(request))
    assert services.calls == [("config_set", ("camera", value))]
    assert json.loads(response.config.value_json) == value
    assert response.config.restart_required is True
    assert response.config.persisted is True


def test_reboot_is_answered_ok_and_reaches_the_service(dispatch: Dispatcher, services: RecordingServices) -> None:
    response = _ok(dispatch(pb.Request(reboot=pb.RebootRequest())))
    assert services.calls == [("reboot", ())]
    assert response.WhichOneof("body") is None


def test_config_reset(dispatch: Dispatcher, services: RecordingServices) -> None:
    response = _ok(dispatch(pb.Request(config_reset=pb.ConfigResetRequest(key="camera"))))
    assert services.calls == [("config_reset", ("camera",))]
    assert json.loads(response.config.value_json) == {"fps": 30.0}
    assert response.config.restart_required is True


def test_list_models(dispatch: Dispatcher, services: RecordingServices) -> None:
    response = _ok(dispatch(pb.Request(list_models=pb.ListModelsRequest())))
    assert services.calls == [("list_models", ())]
    assert tuple(codec.model_info_from_pb(m) for m in response.models.models) == MODELS


@pytest.mark.parametrize("tasks", [[], ["lane"], ["detection", "lane"]])
def test_select_tasks(dispatch: Dispatcher, services: RecordingServices, tasks: list[str]) -> None:
    response = _ok(dispatch(pb.Request(select_tasks=pb.SelectTasksRequest(tasks=tasks))))
    assert services.calls == [("select_tasks", (tasks,))]
    assert list(response.tasks.enabled) == tasks
    assert list(response.tasks.available) == ["lane", "detection"]


@pytest.mark.parametrize("quality", [0, 1, 100])
def test_snapshot(dispatch: Dispatcher, services: RecordingServices, quality: int) -> None:
    response = _ok(dispatch(pb.Request(snapshot=pb.SnapshotRequest(quality=quality))))
    assert services.calls == [("snapshot", (quality,))]
    s = response.snapshot
    assert Snapshot(s.jpeg, s.frame_id, s.capture_timestamp_us, s.width, s.height) == SNAP


# ---- every failure becomes a status --------------------------------------------------


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (RequestFailed(pb.STATUS_FAILED_PRECONDITION, "no camera frame captured yet"), pb.STATUS_FAILED_PRECONDITION),
        (RequestFailed(pb.STATUS_BUSY, "transfer in progress"), pb.STATUS_BUSY),
        (UnknownConfigKey("unknown config key 'camera.fsp'"), pb.STATUS_NOT_FOUND),
        (ConfigError("link.url 'ftp://x' has an unknown scheme"), pb.STATUS_INVALID_ARGUMENT),
        (ConfigError("unknown or unloaded task(s) nope"), pb.STATUS_INVALID_ARGUMENT),
        (ConfigError("camera.fps must be a number, got str 'fast'"), pb.STATUS_INVALID_ARGUMENT),
        (RuntimeError("handler bug"), pb.STATUS_INTERNAL),
        (CameraError("camera unplugged"), pb.STATUS_INTERNAL),
    ],
)
def test_service_errors_map_to_status(
    dispatch: Dispatcher, services: RecordingServices, error: Exception, status: int
) -> None:
    services.fail["config_get"] = error
    response = dispatch(pb.Request(config_get=pb.ConfigGetRequest(key="camera.fps")))
    assert response.status == status
    assert str(error) in response.message
    assert response.WhichOneof("body") is None


def test_internal_error_names_the_exception_type(dispatch: Dispatcher, services: RecordingServices) -> None:
    services.fail["snapshot"] = KeyError("frame")
    response = dispatch(pb.Request(snapshot=pb.SnapshotRequest(quality=50)))
    assert response.status == pb.STATUS_INTERNAL
    assert "KeyError" in response.message


def test_empty_request_is_unsupported(dispatch: Dispatcher, services: RecordingServices) -> None:
    response = dispatch(pb.Request())
    assert response.status == pb.STATUS_UNSUPPORTED
    assert "empty" in response.message
    assert services.calls == []


def test_request_kind_from_a_newer_host_is_unsupported(dispatch: Dispatcher, services: RecordingServices) -> None:
    # field 99 (length-delimited, empty): a oneof member this firmware does not know
    request = pb.Request.FromString(bytes([0x9A, 0x06, 0x00]))
    response = dispatch(request)
    assert response.status == pb.STATUS_UNSUPPORTED
    assert services.calls == []


@pytest.mark.parametrize("text", ["", "{", "fast", "[1,", "{'a': 1}"])
def test_config_set_with_bad_json_is_invalid_argument(
    dispatch: Dispatcher, services: RecordingServices, text: str
) -> None:
    response = dispatch(pb.Request(config_set=pb.ConfigSetRequest(key="camera.fps", value_json=text)))
    assert response.status == pb.STATUS_INVALID_ARGUMENT
    assert "camera.fps" in response.message
    assert services.calls == []


@pytest.mark.parametrize("quality", [101, 2**32 - 1])
def test_snapshot_quality_over_100_is_invalid_argument(
    dispatch: Dispatcher, services: RecordingServices, quality: int
) -> None:
    response = dispatch(pb.Request(snapshot=pb.SnapshotRequest(quality=quality)))
    assert response.status == pb.STATUS_INVALID_ARGUMENT
    assert services.calls == []

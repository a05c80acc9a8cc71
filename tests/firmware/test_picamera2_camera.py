"""The picamera2 (libcamera CSI) camera source, against a stand-in ``picamera2`` module.

picamera2 exists only on Raspberry Pi OS; here a small fake package takes its place
in ``sys.modules`` and records what the source calls. Everything else is the real
code path: the factory, the config, :class:`Picamera2Camera`.
"""

from __future__ import annotations

import sys
import time
import types
from typing import Any

import numpy as np
import pytest

from seedcam_firmware.camera.factory import open_camera
from seedcam_firmware.camera.picamera2_cam import INSTALL_HINT, Picamera2Camera
from seedcam_firmware.config import CAMERA_SOURCES, KEYS, CameraConfig
from seedcam_firmware.errors import CameraError


class FakeJob:
    def __init__(self, result: Any) -> None:
        self.result = result


class FakePicamera2:
    """The part of ``picamera2.Picamera2`` the source uses; class attributes steer it."""

    cameras: list[dict[str, Any]] = [{"Model": "imx708", "Id": "/base/i2c@88000/imx708@1a", "Num": 0}]
    instances: list[FakePicamera2] = []
    fail_on: str | None = None  # "init", "configure", "start", "capture", "stop"
    stall = False  # captures never complete (the job times out)
    sensor_ts: str = "monotonic"  # "monotonic" | "missing" | "boot_offset"
    shape: tuple[int, ...] | None = None  # override the delivered array's shape

    @staticmethod
    def global_camera_info() -> list[dict[str, Any]]:
        return FakePicamera2.cameras

    def __init__(self, camera_num: int = 0) -> None:
        if FakePicamera2.fail_on == "init":
            raise RuntimeError("Failed to acquire camera: Device or resource busy")
        self.camera_num = camera_num
        self.calls: list[tuple[str, Any]] = []
        self.config: dict[str, Any] | None = None
        self.started = False
        self.closed = False
        self.n = 0
        FakePicamera2.instances.append(self)

    def create_video_configuration(self, main: dict[str, Any], controls: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(("create_video_configuration", {"main": main, "controls": controls}))
        return {"use_case": "video", "main": dict(main), "controls": dict(controls)}

    def configure(self, config: dict[str, Any]) -> None:
        self.calls.append(("configure", config))
        if FakePicamera2.fail_on == "configure":
            raise RuntimeError("Failed to configure camera")
        self.config = config

    def start(self) -> None:
        self.calls.append(("start", None))
        if FakePicamera2.fail_on == "start":
            raise RuntimeError("Camera did not start")
        self.started = True

    def capture_arrays(self, names: list[str], wait: Any = None) -> FakeJob:
        self.calls.append(("capture_arrays", (list(names), wait)))
        assert wait is False and self.started and self.config is not None
        if FakePicamera2.fail_on == "capture":
            raise RuntimeError("Camera frontend has timed out!")
        w, h = self.config["main"]["size"]
        shape = FakePicamera2.shape or (h, w, 3)
        image = np.zeros(shape, np.uint8)
        image[..., 0] = 200  # "RGB888" arrays are B, G, R: channel 0 is blue
        image[..., 2] = 10 + self.n
        metadata: dict[str, Any] = {"ExposureTime": 10_000, "FrameDuration": 33_333}
        if FakePicamera2.sensor_ts == "monotonic":
            metadata["SensorTimestamp"] = time.monotonic_ns() - 20_000_000  # read out 20 ms ago
        elif FakePicamera2.sensor_ts == "boot_offset":
            metadata["SensorTimestamp"] = time.monotonic_ns() + 3600 * 10**9  # some other clock
        self.n += 1
        return FakeJob(None if FakePicamera2.stall else ([image], metadata))

    def wait(self, job: FakeJob, timeout: float | None = None) -> Any:
        self.calls.append(("wait", timeout))
        if job.result is None:
            raise TimeoutError()  # concurrent.futures.TimeoutError is TimeoutError on 3.11
        return job.result

    def stop(self) -> None:
        self.calls.append(("stop", None))
        self.started = False
        if FakePicamera2.fail_on == "stop":
            raise RuntimeError("stop failed")

    def close(self) -> None:
        self.calls.append(("close", None))
        self.closed = True


@pytest.fixture()
def fake_picamera2(monkeypatch: pytest.MonkeyPatch) -> type[FakePicamera2]:
    module = types.ModuleType("picamera2")
    module.Picamera2 = FakePicamera2  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "picamera2", module)
    monkeypatch.setattr(FakePicamera2, "instances", [])
    monkeypatch.setattr(FakePicamera2, "fail_on", None)
    monkeypatch.setattr(FakePicamera2, "stall", False)
    monkeypatch.setattr(FakePicamera2, "sensor_ts", "monotonic")
    monkeypatch.setattr(FakePicamera2, "shape", None)
    return FakePicamera2


def _names(cam: FakePicamera2) -> list[str]:
    return [name for name, _ in cam.calls]


def test_picamera2_is_a_local_only_camera_source() -> None:
    assert "picamera2" in CAMERA_SOURCES
    CameraConfig(source="picamera2")  # a valid choice
    assert KEYS["camera.source"].host == "local" and KEYS["camera.device"].host == "local"


def test_factory_opens_configures_and_reads_bgr_frames(fake_picamera2: type[FakePicamera2]) -> None:
    cfg = CameraConfig(source="picamera2", width=64, height=48, fps=25.0)
    with open_camera(cfg) as source:
        assert isinstance(source, Picamera2Camera)
        (cam,) = fake_picamera2.instances
        assert cam.camera_num == 0  # the default "/dev/video0" device means the first camera
        assert _names(cam)[:3] == ["create_video_configuration", "configure", "start"]
        made = cam.calls[0][1]
        assert made["main"] == {"size": (64, 48), "format": "RGB888"}
        assert made["controls"] == {"FrameDurationLimits": (40_000, 40_000)}
        assert source.size == (64, 48)
        before = time.monotonic_ns() // 1000
        frames = [source.read(1.0) for _ in range(3)]
        after = time.monotonic_ns() // 1000
    assert [f.frame_id for f in frames] == [0, 1, 2]
    for f in frames:
        assert f.image.shape == (48, 64, 3) and f.image.dtype == np.uint8
        assert f.image[0, 0, 0] == 200  # blue stays in channel 0: no RGB/BGR swap
        # stamped with SensorTimestamp (20 ms before delivery), on the monotonic clock
        assert before - 40_000 <= f.timestamp_us <= after - 15_000
    assert [int(f.image[0, 0, 2]) for f in frames] == [11, 12, 13]  # frame 10 was the open check
    assert ("wait", 5.0) in cam.calls and ("wait", 1.0) in cam.calls
    assert _names(cam)[-2:] == ["stop", "close"] and cam.closed


def test_rotation_resize_camera_index_and_default_fps(fake_picamera2: type[FakePicamera2]) -> None:
    fake_picamera2.cameras = [*FakePicamera2.cameras, {"Model": "imx477", "Id": "b", "Num": 1}]
    try:
        cfg = CameraConfig(source="picamera2", device=1, width=64, height=48, fps=0.0, rotation=90)
        with open_camera(cfg) as source:
            (cam,) = fake_picamera2.instances
            assert cam.camera_num == 1
            assert cam.calls[0][1]["controls"] == {}  # fps 0: libcamera's own rate
            assert source.size == (48, 64)
            fake_picamera2.shape = (50, 66, 4)  # the ISP gave another size, with an X channel
            frame = source.read(1.0)
            assert frame.image.shape == (64, 48, 3)
    finally:
        fake_picamera2.cameras = FakePicamera2.cameras[:1]


def test_sensor_timestamp_off_the_monotonic_clock_falls_back(
    fake_picamera2: type[FakePicamera2], caplog: pytest.LogCaptureFixture
) -> None:
    for kind in ("missing", "boot_offset"):
        fake_picamera2.sensor_ts = kind
        with Picamera2Camera(32, 32, 30.0) as source:
            before = time.monotonic_ns() // 1000
            frame = source.read(1.0)
            assert before <= frame.timestamp_us <= time.monotonic_ns() // 1000
    assert "not on the monotonic clock" in caplog.text


def test_missing_picamera2_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "picamera2", None)  # import picamera2 -> ImportError
    with pytest.raises(CameraError) as info:
        open_camera(CameraConfig(source="picamera2"))
    assert INSTALL_HINT in str(info.value)
    assert "sudo apt install python3-picamera2" in str(info.value)
    assert "--system-site-packages" in str(info.value)


def test_no_camera_and_busy_camera(fake_picamera2: type[FakePicamera2]) -> None:
    fake_picamera2.cameras = []
    try:
        with pytest.raises(CameraError, match=r"libcamera found 0 camera\(s\)"):
            Picamera2Camera()
    finally:
        fake_picamera2.cameras = FakePicamera2.cameras
    fake_picamera2.cameras = [{"Model": "imx708", "Id": "a", "Num": 0}]
    with pytest.raises(CameraError, match="no picamera2 camera 3"):
        Picamera2Camera(camera_num=3)
    fake_picamera2.fail_on = "init"
    with pytest.raises(CameraError, match="cannot open picamera2 camera 0.*Device or resource busy"):
        Picamera2Camera()


@pytest.mark.parametrize("step", ["configure", "start", "capture"])
def test_start_failures_close_the_camera(fake_picamera2: type[FakePicamera2], step: str) -> None:
    fake_picamera2.fail_on = step
    with pytest.raises(CameraError, match="picamera2 camera 0") as info:
        Picamera2Camera(64, 48)
    assert "RuntimeError" not in type(info.value).__name__
    (cam,) = fake_picamera2.instances
    assert cam.closed and _names(cam)[-2:] == ["stop", "close"]


def test_no_frame_at_start_or_on_read_is_a_camera_error(fake_picamera2: type[FakePicamera2]) -> None:
    fake_picamera2.stall = True
    with pytest.raises(CameraError, match="no frame from picamera2 camera 0 within 0.5 s"):
        Picamera2Camera(open_timeout=0.5)
    assert fake_picamera2.instances[-1].closed
    fake_picamera2.stall = False
    source = Picamera2Camera()
    fake_picamera2.stall = True
    with pytest.raises(CameraError, match="within 0.2 s"):
        source.read(0.2)
    fake_picamera2.stall = False
    assert source.read(1.0).frame_id == 0  # a timeout costs no frame id
    fake_picamera2.fail_on = "capture"
    with pytest.raises(CameraError, match="capture failed: Camera frontend has timed out"):
        source.read(1.0)
    source.close()


def test_close_is_idempotent_and_survives_a_failing_stop(
    fake_picamera2: type[FakePicamera2], caplog: pytest.LogCaptureFixture
) -> None:
    source = Picamera2Camera()
    (cam,) = fake_picamera2.instances
    fake_picamera2.fail_on = "stop"
    source.close()
    source.close()
    assert _names(cam).count("stop") == 1 and cam.closed
    assert "stop failed on close" in caplog.text
    with pytest.raises(CameraError, match="is closed"):
        source.read(1.0)

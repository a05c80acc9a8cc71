"""Tests of the file, folder and V4L2 camera backends and the factory."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from seedcam_firmware.camera import v4l2
from seedcam_firmware.camera._frames import Pacer, RotatedCamera, fit_image
from seedcam_firmware.camera.base import CameraSource, Frame
from seedcam_firmware.camera.factory import open_camera
from seedcam_firmware.camera.image_folder import ImageFolderCamera
from seedcam_firmware.camera.v4l2 import V4L2Camera
from seedcam_firmware.camera.video_file import VideoFileCamera
from seedcam_firmware.config import CameraConfig
from seedcam_firmware.errors import CameraError, ConfigError

W, H = 64, 48
N = 5
FAST = 500.0  # fps high enough that pacing costs ~nothing


def _level(image: np.ndarray) -> int:
    """The grey level a test frame was filled with (JPEG-robust)."""
    return round(float(image.mean()) / 40.0)


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("video") / "clip.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 25.0, (W, H))
    assert writer.isOpened()
    for i in range(N):
        writer.write(np.full((H, W, 3), i * 40, np.uint8))
    writer.release()
    return path


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    for i in (1, 2, 10):  # natural order: 1, 2, 10 (not 1, 10, 2)
        cv2.imwrite(str(tmp_path / f"img{i}.png"), np.full((H, W, 3), i * 20, np.uint8))
    (tmp_path / "notes.txt").write_text("not an image")
    return tmp_path


# ---- video file -------------------------------------------------------------


def test_video_frames_ids_and_size(video: Path) -> None:
    with VideoFileCamera(video, fps=FAST, loop=False) as cam:
        assert cam.size == (W, H)
        frames = [cam.read(1.0) for _ in range(N)]
        assert [f.frame_id for f in frames] == list(range(N))
        assert [_level(f.image) for f in frames] == list(range(N))
        assert all(f.image.shape == (H, W, 3) and f.image.dtype == np.uint8 for f in frames)
        ts = [f.timestamp_us for f in frames]
        assert ts == sorted(ts) and ts[0] > 0
        with pytest.raises(CameraError, match="end of video"):
            cam.read(1.0)


def test_video_loops_with_increasing_ids(video: Path) -> None:
    with VideoFileCamera(video, fps=FAST, loop=True) as cam:
        frames = [cam.read(1.0) for _ in range(2 * N + 1)]
    assert [f.frame_id for f in frames] == list(range(2 * N + 1))
    assert [_level(f.image) for f in frames] == [*range(N), *range(N), 0]


def test_video_resize_and_rotation(video: Path) -> None:
    with VideoFileCamera(video, fps=FAST, size=(32, 24), rotation=90) as cam:
        assert cam.size == (24, 32)
        assert cam.read(1.0).image.shape == (32, 24, 3)


def test_video_uses_file_fps_and_paces(video: Path) -> None:
    with VideoFileCamera(video) as cam:  # the file says 25 fps
        t0 = time.monotonic()
        for _ in range(3):
            cam.read(1.0)
        assert time.monotonic() - t0 >= 2 / 25 - 0.005


def test_video_read_never_blocks_past_timeout(video: Path) -> None:
    with VideoFileCamera(video, fps=2.0) as cam:
        cam.read(1.0)  # the first frame is due at once
        t0 = time.monotonic()
        with pytest.raises(CameraError, match="within"):
            cam.read(0.05)
        assert time.monotonic() - t0 < 0.3
        assert cam.read(1.0).frame_id == 1  # the frame was not lost


def test_video_missing_file_and_closed(tmp_path: Path, video: Path) -> None:
    with pytest.raises(CameraError, match="does not exist"):
        VideoFileCamera(tmp_path / "missing.avi")
    junk = tmp_path / "junk.avi"
    junk.write_bytes(b"not a video at all" * 10)
    with pytest.raises(CameraError):
        VideoFileCamera(junk)
    cam = VideoFileCamera(video, fps=FAST)
    cam.close()
    cam.close()
    with pytest.raises(CameraError, match="closed"):
        cam.read(0.1)


# ---- image folder -----------------------------------------------------------


def test_folder_natural_order_and_loop(folder: Path) -> None:
    with ImageFolderCamera(folder, fps=FAST, loop=True) as cam:
        assert cam.size == (W, H)
        frames = [cam.read(1.0) for _ in range(4)]
    assert [f.frame_id for f in frames] == [0, 1, 2, 3]
    assert [round(f.image.mean() / 20) for f in frames] == [1, 2, 10, 1]


def test_folder_end_without_loop_and_resize(folder: Path) -> None:
    with ImageFolderCamera(folder, fps=FAST, loop=False, size=(32, 32), rotation=180) as cam:
        for _ in range(3):
            assert cam.read(1.0).image.shape == (32, 32, 3)
        with pytest.raises(CameraError, match="end of image folder"):
            cam.read(1.0)


def test_folder_skips_unreadable_images(folder: Path, caplog: pytest.LogCaptureFixture) -> None:
    (folder / "img3.jpg").write_bytes(b"\xff\xd8 broken jpeg")
    caplog.set_level(logging.WARNING)
    with ImageFolderCamera(folder, fps=FAST) as cam:
        levels = [round(cam.read(1.0).image.mean() / 20) for _ in range(6)]
    assert levels == [1, 2, 10, 1, 2, 10]
    warnings = [r for r in caplog.records if "img3.jpg" in r.getMessage()]
    assert len(warnings) == 1  # warned once, then dropped from the playlist


def test_folder_errors(tmp_path: Path) -> None:
    with pytest.raises(CameraError, match="no images"):
        ImageFolderCamera(tmp_path)
    with pytest.raises(CameraError, match="does not exist"):
        ImageFolderCamera(tmp_path / "nope")
    (tmp_path / "bad.png").write_bytes(b"nope")
    with pytest.raises(CameraError, match="no readable images"):
        ImageFolderCamera(tmp_path)


# ---- V4L2 -------------------------------------------------------------------


def test_v4l2_missing_device_is_one_clear_line() -> None:
    if Path("/dev/video9").exists():
        pytest.skip("this machine has /dev/video9")
    with pytest.raises(CameraError) as err:
        V4L2Camera("/dev/video9", 320, 240, 30.0)
    assert str(err.value) == "camera /dev/video9 does not exist"
    with pytest.raises(CameraError, match="^camera /dev/video9 does not exist$"):
        V4L2Camera(9, 320, 240, 30.0)


class _FakeCapture:
    """Stands in for cv2.VideoCapture: ``frames`` images, then a read failure."""

    frames = 3
    period = 0.002
    opened = True
    formats = ("YUYV", "MJPG")  # what the "driver" captures in; the first is its default

    def __init__(self, path: str, api: int) -> None:
        self.count = 0
        self.props: dict[int, float] = {cv2.CAP_PROP_FOURCC: cv2.VideoWriter.fourcc(*self.formats[0])}
        self.released = threading.Event()

    def isOpened(self) -> bool:
        return self.opened

    def set(self, prop: int, value: float) -> bool:
        if prop == cv2.CAP_PROP_FOURCC and value not in [cv2.VideoWriter.fourcc(*f) for f in self.formats]:
            return False  # a driver keeps its format when asked for one it lacks
        self.props[prop] = value
        return True

    def get(self, prop: int) -> float:
        return self.props.get(prop, 0.0)

    def grab(self) -> bool:
        time.sleep(self.period)
        self.count += 1
        return self.count <= self.frames

    def retrieve(self) -> tuple[bool, np.ndarray]:
        return True, np.full((120, 160, 3), self.count, np.uint8)

    def release(self) -> None:
        self.released.set()


@pytest.fixture()
def fake_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(v4l2.cv2, "VideoCapture", _FakeCapture)
    dev = tmp_path / "video0"
    dev.touch()
    return str(dev)


def test_v4l2_pixel_format_is_asked_for_and_reported(fake_device: str) -> None:
    cam = v4l2.V4L2Camera(fake_device, 160, 120, 30.0, pixel_format="MJPG")
    try:
        assert cam.mode == v4l2.CaptureMode(width=160, height=120, fps=30.0, pixel_format="MJPG")
    finally:
        cam.close()
    cam = v4l2.V4L2Camera(fake_device, 160, 120, 30.0)  # empty: the driver's default
    try:
        assert cam.mode.pixel_format == "YUYV"
    finally:
        cam.close()
    with pytest.raises(CameraError, match=r"does not capture in RGB3 \(the driver chose YUYV\)$"):
        v4l2.V4L2Camera(fake_device, 160, 120, 30.0, pixel_format="RGB3")
    with pytest.raises(ValueError, match="FourCC of 4 characters"):
        v4l2.V4L2Camera(fake_device, 160, 120, 30.0, pixel_format="YUV")


def test_v4l2_frames_then_read_failure(fake_device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_FakeCapture, "period", 0.02)
    cam = V4L2Camera(fake_device, 64, 48, 30.0, rotation=270)
    try:
        assert cam.size == (48, 64)
        frame = cam.read(1.0)
        assert frame.image.shape == (64, 48, 3)
        ids = [frame.frame_id]
        with pytest.raises(CameraError, match="read failed"):
            while True:
                ids.append(cam.read(1.0).frame_id)
        assert ids == sorted(set(ids)) and ids[0] == 0
    finally:
        cam.close()
        cam.close()


def test_v4l2_reopens_after_a_read_failure(fake_device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pulled cable / driver reset: reads fail for a while, then frames come back by themselves."""
    monkeypatch.setattr(v4l2, "_REOPEN_INTERVAL_S", 0.01)
    cam = V4L2Camera(fake_device, 64, 48, 30.0)
    try:
        seen_failure = False
        ids: list[int] = []
        deadline = time.monotonic() + 5.0
        while len(ids) < 8 and time.monotonic() < deadline:
            try:
                ids.append(cam.read(1.0).frame_id)
            except CameraError:
                seen_failure = True
        assert seen_failure, "the fake device fails after 3 frames"
        assert len(ids) == 8 and ids == sorted(set(ids)), ids
    finally:
        cam.close()


def test_v4l2_read_timeout_and_open_failures(fake_device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_FakeCapture, "period", 0.3)
    cam = V4L2Camera(fake_device, 64, 48, 30.0, open_timeout=2.0)
    try:
        cam.read(1.0)
        t0 = time.monotonic()
        with pytest.raises(CameraError, match="within"):
            cam.read(0.05)
        assert time.monotonic() - t0 < 0.2
    finally:
        cam.close()
    monkeypatch.setattr(_FakeCapture, "frames", 0)
    with pytest.raises(CameraError, match="read failed"):
        V4L2Camera(fake_device, 64, 48, 30.0, open_timeout=2.0)
    monkeypatch.setattr(_FakeCapture, "opened", False)
    with pytest.raises(CameraError, match="cannot open camera"):
        V4L2Camera(fake_device, 64, 48, 30.0)


# ---- helpers and factory ----------------------------------------------------


def test_pacer_spacing_and_deadline() -> None:
    pacer = Pacer(100.0)
    t0 = time.monotonic()
    for _ in range(4):
        assert pacer.wait(time.monotonic() + 1.0)
        pacer.advance()
    assert time.monotonic() - t0 >= 3 / 100 - 0.002
    assert not pacer.wait(time.monotonic())  # next frame not due yet
    with pytest.raises(ValueError):
        Pacer(0)


def test_fit_image() -> None:
    img = np.zeros((10, 20, 3), np.uint8)
    assert fit_image(img, None) is img
    assert fit_image(img, (40, 30)).shape == (30, 40, 3)
    assert fit_image(img, None, 90).shape == (20, 10, 3)
    with pytest.raises(ValueError):
        fit_image(img, None, 45)


def test_factory_opens_video_and_folder(video: Path, folder: Path) -> None:
    cfg = CameraConfig(source="video", path=str(video), width=32, height=24, fps=FAST)
    with open_camera(cfg) as cam:
        assert isinstance(cam, VideoFileCamera) and cam.size == (32, 24)
        assert cam.read(1.0).image.shape == (24, 32, 3)
    cfg = CameraConfig(source="folder", path=str(folder), fps=0.0, rotation=90)
    with open_camera(cfg) as cam:
        assert isinstance(cam, ImageFolderCamera) and cam.size == (240, 320)
        assert cam.read(1.0).image.shape == (320, 240, 3)
    with pytest.raises(ConfigError, match="camera.path"):
        open_camera(CameraConfig(source="video"))
    with pytest.raises(CameraError, match="does not exist"):
        open_camera(CameraConfig(source="v4l2", device="/dev/video9"))


def test_factory_opens_synthetic() -> None:
    pytest.importorskip("seedcam_firmware.camera.synthetic")
    with open_camera(CameraConfig(source="synthetic", width=160, height=120, fps=FAST)) as cam:
        frame = cam.read(2.0)
        assert frame.frame_id == 0 and frame.image.shape == (120, 160, 3)


class _Still(CameraSource):
    size = (4, 2)

    def read(self, timeout: float) -> Frame:
        return Frame(7, 1, np.zeros((2, 4, 3), np.uint8), truth={"x": 1})

    def close(self) -> None:
        self.closed = True


def test_rotated_wrapper_keeps_id_and_truth() -> None:
    inner = _Still()
    with RotatedCamera(inner, 90) as cam:
        assert cam.size == (2, 4)
        frame = cam.read(0.1)
    assert frame.image.shape == (4, 2, 3) and frame.frame_id == 7 and frame.truth == {"x": 1}
    assert getattr(inner, "closed", False)

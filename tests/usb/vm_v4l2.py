"""Tests that run *inside* the USB VM: the V4L2 camera against the kernel's ``vivid`` virtual video driver.

Not collected on the host (no ``test_`` prefix); ``test_usb_vm.py`` boots the VM
with vivid loaded (see vm_media.py) and runs this file there after
``vm_scenarios.py``. vivid is a real V4L2 driver: the same ioctls, buffer queues,
pixel formats and frame intervals as a UVC webcam, drawing its own test pattern
(75 % colour bars). Its "Disconnect" control makes the device vanish as an
unplugged USB camera does, and come back once every handle to it is closed.

``TestV4l2Camera`` drives the firmware's camera source directly (formats, sizes,
rates, a device that disappears); ``TestFirmwareOnV4l2`` runs the firmware with
``camera.source = "v4l2"`` on a pty and reads results and a snapshot through the SDK.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import wait_until

from seedcam import Sensor
from seedcam_firmware.launcher import EmulatedBoard

WORK = Path(os.environ.get("SEEDCAM_USBVM_WORK", "/nonexistent"))
pytestmark = pytest.mark.skipif("SEEDCAM_USBVM_WORK" not in os.environ, reason="runs only inside the USB VM")

START_S = 240.0  # a firmware start under TCG emulation (numpy, OpenCV and LiteRT imports)

#: The 75 % colour bars, left to right, as which of (B, G, R) are lit.
BARS = [
    ("white", (1, 1, 1)),
    ("yellow", (0, 1, 1)),
    ("cyan", (1, 1, 0)),
    ("green", (0, 1, 0)),
    ("magenta", (1, 0, 1)),
    ("red", (0, 0, 1)),
    ("blue", (1, 0, 0)),
    ("black", (0, 0, 0)),
]


class _QueryCtrl(ctypes.Structure):  # struct v4l2_queryctrl
    _fields_ = [
        ("id", ctypes.c_uint32),
        ("type", ctypes.c_uint32),
        ("name", ctypes.c_char * 32),
        ("minimum", ctypes.c_int32),
        ("maximum", ctypes.c_int32),
        ("step", ctypes.c_int32),
        ("default_value", ctypes.c_int32),
        ("flags", ctypes.c_uint32),
        ("reserved", ctypes.c_uint32 * 2),
    ]


class _Control(ctypes.Structure):  # struct v4l2_control
    _fields_ = [("id", ctypes.c_uint32), ("value", ctypes.c_int32)]


def _iowr(nr: int, size: int) -> int:
    return (3 << 30) | (size << 16) | (ord("V") << 8) | nr


VIDIOC_QUERYCTRL = _iowr(36, ctypes.sizeof(_QueryCtrl))
VIDIOC_S_CTRL = _iowr(28, ctypes.sizeof(_Control))
V4L2_CTRL_FLAG_NEXT_CTRL = 0x80000000


def vivid_node() -> str:
    """The vivid capture node (``/dev/videoN``), found by its driver's name in sysfs."""
    for entry in sorted(Path("/sys/class/video4linux").glob("video*")):
        if (entry / "name").read_text().strip().startswith("vivid"):
            return f"/dev/{entry.name}"
    raise AssertionError("no vivid video node: did the guest script load vivid? (see insmod.log in the VM work dir)")


def press_disconnect(node: str) -> None:
    """Press vivid's "Disconnect" button control: the node goes away until its last handle closes."""
    fd = os.open(node, os.O_RDWR)
    try:
        query = _QueryCtrl(id=V4L2_CTRL_FLAG_NEXT_CTRL)
        while True:
            fcntl.ioctl(fd, VIDIOC_QUERYCTRL, query)  # OSError EINVAL after the last control
            if query.name == b"Disconnect":
                fcntl.ioctl(fd, VIDIOC_S_CTRL, _Control(id=query.id, value=0))
                return
            query.id |= V4L2_CTRL_FLAG_NEXT_CTRL
    finally:
        os.close(fd)


def assert_colour_bars(image: np.ndarray) -> None:
    """``image`` (BGR) shows vivid's 75 % colour bars across its width."""
    h, w = image.shape[:2]
    band = image[int(h * 0.88) : int(h * 0.98)]  # below the OSD text vivid draws (its lines: 16 px each)
    seen = []
    for i, (name, lit) in enumerate(BARS):
        x0, x1 = int(w * (i + 0.25) / 8), int(w * (i + 0.75) / 8)
        colour = np.median(band[:, x0:x1].reshape(-1, 3), axis=0)
        seen.append((name, colour.round().tolist()))
        on = tuple(int(c > 96) for c in colour)
        assert on == lit, f"bar {i} should be {name}: {seen}"


@pytest.fixture(scope="module")
def node() -> str:
    return vivid_node()


class TestV4l2Camera:
    def test_captures_the_test_pattern_at_a_driver_size(self, node: str) -> None:
        from seedcam_firmware.camera.v4l2 import V4L2Camera

        cam = V4L2Camera(node, 640, 360, 30.0, open_timeout=30)
        try:
            assert (cam.mode.width, cam.mode.height) == (640, 360)
            frame = cam.read(10)
            assert frame.image.shape == (360, 640, 3)
            assert_colour_bars(frame.image)
        finally:
            cam.close()

    def test_a_size_the_driver_lacks_is_fitted(self, node: str) -> None:
        from seedcam_firmware.camera.v4l2 import V4L2Camera

        cam = V4L2Camera(node, 320, 240, 30.0, open_timeout=30)  # vivid's webcam has 320x180, not 320x240
        try:
            assert (cam.mode.width, cam.mode.height) != (320, 240)
            image = cam.read(10).image
            assert image.shape == (240, 320, 3)
            assert_colour_bars(image)
        finally:
            cam.close()

    @pytest.mark.parametrize("pixel_format", ["YUYV", "UYVY", "RGB3", "NV12"])
    def test_pixel_formats(self, node: str, pixel_format: str) -> None:
        from seedcam_firmware.camera.v4l2 import V4L2Camera

        cam = V4L2Camera(node, 320, 180, 30.0, pixel_format=pixel_format, open_timeout=30)
        try:
            assert cam.mode.pixel_format == pixel_format
            assert_colour_bars(cam.read(10).image)
        finally:
            cam.close()

    def test_a_format_the_driver_lacks_is_refused(self, node: str) -> None:
        from seedcam_firmware.camera.v4l2 import V4L2Camera
        from seedcam_firmware.errors import CameraError

        with pytest.raises(CameraError, match=r"does not capture in H264 \(the driver chose"):
            V4L2Camera(node, 320, 180, 30.0, pixel_format="H264", open_timeout=30)

    @pytest.mark.parametrize("fps", [15.0, 30.0])
    def test_frame_rate(self, node: str, fps: float) -> None:
        from seedcam_firmware.camera.v4l2 import V4L2Camera

        cam = V4L2Camera(node, 320, 180, fps, open_timeout=30)
        try:
            assert cam.mode.fps == pytest.approx(fps)
            first = cam.read(10)
            t0 = time.monotonic()
            last = first
            while time.monotonic() - t0 < 3.0:
                last = cam.read(10)
            rate = (last.frame_id - first.frame_id) / ((last.timestamp_us - first.timestamp_us) / 1e6)
            assert rate == pytest.approx(fps, rel=0.25), f"measured {rate:.1f} fps at {fps:g}"
        finally:
            cam.close()

    def test_a_device_that_disappears_fails_reads_then_comes_back(self, node: str) -> None:
        from seedcam_firmware.camera.v4l2 import V4L2Camera
        from seedcam_firmware.errors import CameraError

        cam = V4L2Camera(node, 320, 180, 30.0, open_timeout=30)
        try:
            before = cam.read(10)
            press_disconnect(node)
            deadline = time.monotonic() + 20
            with pytest.raises(CameraError):
                while time.monotonic() < deadline:
                    cam.read(2)
            # the capture thread released the device, so vivid reconnects; the camera reopens it
            after = None
            deadline = time.monotonic() + 60
            while after is None and time.monotonic() < deadline:
                try:
                    after = cam.read(2)
                except CameraError:
                    continue
            assert after is not None, "the camera did not come back after vivid reconnected"
            assert after.frame_id > before.frame_id
            assert_colour_bars(after.image)
        finally:
            cam.close()


@pytest.fixture(scope="class")
def v4l2_board(node: str) -> Iterator[EmulatedBoard]:
    board = EmulatedBoard(
        "--camera",
        "v4l2",
        "--tasks",
        "lane",
        "--fps",
        "15",
        "--set",
        f"camera.device={node}",
        workdir=WORK,
        log_name="fw-v4l2.log",
    )
    board.start()
    try:
        board.wait_ready(START_S)
        yield board
    finally:
        board.terminate(20)


class TestFirmwareOnV4l2:
    def test_results_and_a_snapshot_of_the_pattern(self, v4l2_board: EmulatedBoard) -> None:
        import seedcam

        with seedcam.open(v4l2_board.link, timeout=60) as sensor:
            assert "v4l2" in sensor.device_info.camera
            results = [sensor.recv(timeout=30) for _ in range(5)]
            assert all(r is not None and r.lane is not None for r in results)
            snap = sensor.snapshot(timeout=60)
        image = cv2.imdecode(np.frombuffer(snap.jpeg, np.uint8), cv2.IMREAD_COLOR)
        assert image is not None and image.shape == (240, 320, 3)
        assert_colour_bars(image)

    def test_an_unplugged_camera_shows_in_health_and_results_resume(self, v4l2_board: EmulatedBoard, node: str) -> None:
        import seedcam

        with seedcam.open(v4l2_board.link, timeout=60) as sensor:
            first = sensor.recv(timeout=30)
            assert first is not None
            wait_until(lambda: sensor.health is not None, 30, "a Health message")
            errors_before = camera_errors(sensor)
            press_disconnect(node)
            wait_until(lambda: camera_errors(sensor) > errors_before, 30, "camera errors in Health")
            after = sensor.recv(timeout=60)
            while after is not None and after.frame_id <= first.frame_id + 5:
                after = sensor.recv(timeout=60)
            assert after is not None, "no results after the camera came back"


def camera_errors(sensor: Sensor) -> int:
    health = sensor.health
    assert health is not None
    return health.camera_errors

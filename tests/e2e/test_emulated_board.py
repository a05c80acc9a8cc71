"""End to end: the real firmware process on a pty, driven through the public SDK."""

from __future__ import annotations

import hashlib
import math
import threading
from pathlib import Path

import pytest
from corrupting_proxy import CorruptingProxy
from helpers import MODELS, run_firmware_cli, wait_until

import seedcam
from seedcam.transport import open_transport

pytestmark = pytest.mark.e2e

LANE_INT8 = MODELS / "lane" / "lane_int8.tflite"


def write_scene(path: Path, offset_m: float, heading_rad: float, curvature_per_m: float) -> Path:
    path.write_text(
        f"offset_m = {offset_m}\nheading_rad = {heading_rad}\ncurvature_per_m = {curvature_per_m}\n"
        "lane_width_m = 0.45\nnoise_sigma = 0.01\n"
    )
    return path


@pytest.mark.parametrize(
    ("offset_m", "heading_rad", "curvature_per_m"),
    [(0.05, -0.06, 0.2), (-0.08, 0.10, -0.4)],
)
def test_lane_matches_scene_truth_with_shipped_int8(
    firmware_factory, tmp_path: Path, offset_m: float, heading_rad: float, curvature_per_m: float
) -> None:
    scene = write_scene(tmp_path / "scene.toml", offset_m, heading_rad, curvature_per_m)
    config = tmp_path / "fw.toml"
    config.write_text(f'[camera]\nsource = "synthetic"\nscene = "{scene}"\nfps = 15\n')
    fw = firmware_factory("--config", str(config))
    with seedcam.open(fw.link, timeout=10) as sensor:
        lane_models = [m for m in sensor.models() if m.task == "lane" and m.active]
        assert len(lane_models) == 1
        assert lane_models[0].precision == "int8"
        assert lane_models[0].sha256 == hashlib.sha256(LANE_INT8.read_bytes()).hexdigest()
        results = [sensor.recv(timeout=10) for _ in range(8)]
    assert all(r is not None for r in results)
    for result in results:
        assert lane_models[0].id in result.model_ids
        lane = result.lane
        assert lane is not None and lane.status is seedcam.LaneStatus.OK
        assert abs(lane.offset_m - offset_m) <= 0.03, (lane, offset_m)
        assert abs(math.degrees(lane.heading_rad - heading_rad)) <= 3.0, (lane, heading_rad)


def test_host_script_survives_firmware_restart_and_learns_of_the_reboot(firmware_factory) -> None:
    first = firmware_factory("--fps", "20")
    received: list[seedcam.Result] = []
    events: list[seedcam.ReconnectEvent] = []
    stop = threading.Event()

    with seedcam.open(first.link, timeout=10) as sensor:
        boot_before = sensor.device_info.boot_id
        sensor.on_reconnect(events.append)

        def iterate() -> None:  # what a user's script does: just iterate
            for result in sensor.results():
                received.append(result)
                if stop.is_set():
                    return

        reader = threading.Thread(target=iterate, daemon=True)
        reader.start()
        wait_until(lambda: len(received) >= 5, 20, "results before the kill")
        first.kill()
        count_at_kill = len(received)
        second = firmware_factory("--fps", "20")
        wait_until(lambda: events and len(received) >= count_at_kill + 5, 30, "results after the restart")
        stop.set()
        reader.join(10)
        assert sensor.device_info.boot_id != boot_before
        assert sensor.stats.device_reboots == 1
    assert events[0].device_rebooted
    assert events[0].old_boot_id == boot_before
    assert reader.is_alive() is False
    second.terminate()


def test_corrupted_frames_are_counted_and_never_break_either_side(firmware_factory) -> None:
    fw = firmware_factory("--fps", "30")
    device_side = open_transport(fw.link)
    proxy_end = open_transport("pair://corrupting-proxy")  # the Sensor opens the other end by the same name
    proxy = CorruptingProxy(
        device_side,
        proxy_end,
        to_host=lambda i: "flip" if i % 7 == 3 else ("garbage" if i % 11 == 5 else None),
        to_device=lambda i: "flip" if i % 3 == 2 else None,
    )
    try:
        with seedcam.open("pair://corrupting-proxy", timeout=3, reconnect=False) as sensor:
            proxy.to_host.enabled.set()
            proxy.to_device.enabled.set()
            wait_until(lambda: sensor.stats.results_received >= 60, 30, "60 results through the proxy")
            pings_ok = pings_lost = 0
            for _ in range(9):
                try:
                    sensor.ping(b"x" * 32, timeout=1.0)
                    pings_ok += 1
                except seedcam.SensorTimeout:
                    pings_lost += 1
            # A ping is lost when its request or its response was damaged. The host also asks for the
            # result dictionary again when a damaged frame was a new generation's announcement (a label
            # seen for the first time), so more than the 9 pings may go out: at most one such request
            # per stale result, and every third request is damaged.
            assert pings_ok + pings_lost == 9 and proxy.to_device.damaged >= 3
            assert pings_lost >= proxy.to_device.damaged - sensor.stats.results_stale
            # Quiesce: stop damaging both ways (which later request would be hit depends on how many
            # went before, i.e. on what the models found), then wait until the host has every byte.
            proxy.to_host.enabled.clear()
            proxy.to_device.enabled.clear()
            damaged = proxy.to_host.damaged
            wait_until(lambda: sensor.stats.link.bytes_rx == proxy.to_host.bytes_out, 10, "the host to drain")
            link = sensor.stats.link
            assert damaged >= 10
            assert link.corrupted == damaged
            assert link.frames_rx == proxy.to_host.intact
            # The device counted every damaged request, and still answers.
            health_seen = threading.Event()
            damaged_requests = proxy.to_device.damaged
            sensor.on_health(lambda h: health_seen.set() if h.link.corrupted == damaged_requests else None)
            assert health_seen.wait(5), f"no Health counting {damaged_requests} damaged requests"
            assert sensor.info().serial_number
    finally:
        proxy.close()
        device_side.close()
        proxy_end.close()
    assert fw.proc.poll() is None, "the firmware must survive corrupted input"


def test_unknown_config_key_is_one_clear_line(tmp_path: Path) -> None:
    config = tmp_path / "fw.toml"
    config.write_text("[camera]\nfsp = 30\n")
    done = run_firmware_cli("run", "--config", str(config), "--link", "pty", cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "camera.fsp" in lines[0] and str(config) in lines[0]
    assert "Traceback" not in done.stderr


def test_missing_model_is_one_clear_line(tmp_path: Path) -> None:
    config = tmp_path / "fw.toml"
    (tmp_path / "empty").mkdir()
    config.write_text(f'[models]\ndir = "{tmp_path / "empty"}"\n[tasks]\nenabled = ["lane"]\n')
    done = run_firmware_cli("run", "--config", str(config), "--link", "pty", cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "manifest" in lines[0] and "Traceback" not in done.stderr


def test_missing_camera_is_one_clear_line(tmp_path: Path) -> None:
    done = run_firmware_cli(
        "run", "--camera", "v4l2", "--camera-device", "/dev/video97", "--tasks", "", "--link", "pty", cwd=tmp_path
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "/dev/video97" in lines[0] and "Traceback" not in done.stderr


def test_snapshot_and_results_over_a_115200_baud_link(firmware_factory) -> None:
    """A 10+ KB JPEG takes about a second at 115200 baud; it must not be dropped as 'stuck'."""
    fw = firmware_factory("--fps", "10", "--throttle", "115200")
    with seedcam.open(fw.link, timeout=10) as sensor:
        assert sensor.recv(timeout=5) is not None  # the camera is running
        snap = sensor.snapshot(quality=90)
        assert snap.jpeg[:2] == b"\xff\xd8" and len(snap.jpeg) > 5000
        assert sensor.recv(timeout=5) is not None
        assert sensor.stats.link.corrupted <= 1


def test_pty_link_and_link_flags_conflict(tmp_path: Path) -> None:
    done = run_firmware_cli("run", "--link", "/dev/ttyGS0", "--pty-link", str(tmp_path / "x"), cwd=tmp_path)
    assert done.returncode == 1 and "cannot go with --link /dev/ttyGS0" in done.stderr


def test_set_override_reaches_the_running_board(firmware_factory) -> None:
    fw = firmware_factory("--set", "camera.fps=12.5", "--set", "pipeline.jpeg_quality=33", "--tasks", "")
    with seedcam.open(fw.link, timeout=10) as sensor:
        assert sensor.config_get("camera.fps") == 12.5
        assert sensor.config_get("pipeline.jpeg_quality") == 33


def test_unknown_key_in_a_set_override_is_one_clear_line(tmp_path: Path) -> None:
    done = run_firmware_cli("run", "--set", "camera.fsp=3", "--link", "pty", cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "camera.fsp" in lines[0] and "camera.fps" in lines[0]

"""What any board must do, emulated or real: ``pytest --sensor-url /dev/ttyACM0`` targets a real one."""

from __future__ import annotations

import threading

import pytest

import seedcam

pytestmark = pytest.mark.e2e


@pytest.fixture
def sensor_url(request: pytest.FixtureRequest, firmware_factory) -> str:  # noqa: ANN001
    url = request.config.getoption("--sensor-url")
    if url:
        return url
    return firmware_factory("--fps", "20", "--tasks", "").link


def test_board_streams_results_health_and_answers_calls(sensor_url: str) -> None:
    with seedcam.open(sensor_url, timeout=10) as sensor:
        info = sensor.info()
        assert info.protocol_version == seedcam.protocol.PROTOCOL_VERSION and info.boot_id and info.serial_number
        health = threading.Event()
        sensor.on_health(lambda h: health.set())
        frames = [sensor.recv(timeout=5) for _ in range(5)]
        assert all(r is not None for r in frames)
        ids = [r.frame_id for r in frames]
        assert ids == sorted(ids) and len(set(ids)) == 5
        assert all(r.frame_width > 0 and r.frame_height > 0 for r in frames)
        assert health.wait(2.0), "health must arrive at least once a second"
        assert sensor.health.boot_id == info.boot_id
        snap = sensor.snapshot(quality=70)
        assert snap.jpeg[:2] == b"\xff\xd8" and snap.width == info.frame_width
        assert sensor.config_get("camera.width") == info.frame_width
        with pytest.raises(seedcam.RpcError) as refused:
            sensor.config_get("camera.no_such_key")
        assert refused.value.status == "NOT_FOUND"
        # at most the frame the host's open cut in half
        assert sensor.stats.link.corrupted <= 1

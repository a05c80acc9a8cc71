"""The preview stream on a 115200-baud line: it shows what fits, says so, and never starves results."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from helpers import wait_until
from scripted_scenes import STOP_AND_PLATE

import seedcam
from seedcam.types import Health, PreviewFrame, Result

pytestmark = pytest.mark.e2e

CAMERA_FPS = 15


def test_preview_at_115200_baud_lets_every_result_through(firmware_factory, tmp_path: Path) -> None:  # noqa: ANN001
    scene = tmp_path / "scene.toml"
    scene.write_text(STOP_AND_PLATE)
    config = tmp_path / "fw.toml"
    config.write_text(
        f'[camera]\nsource = "synthetic"\nscene = "{scene}"\nfps = {CAMERA_FPS}\n\n'
        '[tasks]\nenabled = ["lane", "detect", "ocr"]\n\n[link]\nurl = "pty?throttle=115200"\n'
    )
    board = firmware_factory("--config", str(config))
    results: dict[int, Result] = {}
    previews: list[PreviewFrame] = []
    reports: list[tuple[Health, int]] = []
    lock = threading.Lock()

    def on_result(result: Result) -> None:
        with lock:
            results[result.frame_id] = result

    with seedcam.open(board.link, timeout=15) as sensor:
        sensor.on_result(on_result)
        sensor.on_preview(previews.append)
        # each health report with the results the host had when it came (both on the reader thread)
        sensor.on_health(lambda health: reports.append((health, sensor.stats.results_received)))
        assert sensor.recv(timeout=15) is not None
        wait_until(lambda: reports, timeout=5, what="a health report")
        settings = sensor.start_preview(10, quality=70, max_width=320)
        assert settings.line_limited and "115200-baud line" in settings.message
        assert 0.3 < settings.fps < 10
        wait_until(lambda: len(previews) >= 1, timeout=10, what="the first preview frame")
        first = len(reports)
        wait_until(lambda: len(reports) >= first + 5, timeout=15, what="5 s of health reports with the preview on")
        shown = list(previews)
        sensor.stop_preview()
    (h0, got0), (h1, got1) = reports[first], reports[-1]
    processed = h1.frames_processed - h0.frames_processed
    received = got1 - got0
    span = h1.uptime_s - h0.uptime_s
    # every frame the board processed (at the camera rate, unless this machine's CPUs are busy
    # elsewhere) sent its result through: the preview took only what the results left of the line
    assert received >= processed - 3, f"{received} results arrived of {processed} processed in {span:.1f} s"
    assert h1.results_dropped == h0.results_dropped, "the link dropped results with the preview on"
    assert len(shown) >= 2
    with lock:
        paired = [p for p in shown if p.frame_id in results]
    assert len(paired) == len(shown), "every preview JPEG is the frame of a result that arrived"
    for preview in paired:
        assert preview.jpeg[:2] == b"\xff\xd8" and (preview.width, preview.height) == (320, 240)
        # the compact result rounds capture times to 100 us; the preview carries the exact one
        assert abs(preview.timestamp_us - results[preview.frame_id].capture_timestamp_us) < 100

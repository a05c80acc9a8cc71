"""On a 115200-baud line the default tasks' results fit beside a snapshot: none is dropped for bandwidth."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import seedcam
from seedcam_tools.bench_link import SIGNS_AND_PLATE

pytestmark = pytest.mark.e2e


def test_results_of_a_busy_scene_and_a_snapshot_share_a_115200_baud_line(firmware_factory, tmp_path: Path) -> None:  # noqa: ANN001
    scene = tmp_path / "scene.toml"
    scene.write_text(SIGNS_AND_PLATE)
    config = tmp_path / "fw.toml"
    config.write_text(
        f'[camera]\nsource = "synthetic"\nscene = "{scene}"\nfps = 15\n\n'
        '[tasks]\nenabled = ["lane", "detect", "ocr"]\n\n[link]\nurl = "pty?throttle=115200"\n'
    )
    board = firmware_factory("--config", str(config))
    healthy = threading.Event()
    with seedcam.open(board.link, timeout=15) as sensor:
        sensor.on_health(lambda _: healthy.set())
        first = sensor.recv(timeout=15)
        assert first is not None and len(first.detections) >= 3 and len(first.text_lines) == 1
        assert healthy.wait(5)
        before = sensor.health
        received_before = sensor.stats.results_received
        snapshot = sensor.snapshot(timeout=20)
        during = sensor.stats.results_received - received_before
        healthy.clear()
        assert healthy.wait(5)  # a report from after the snapshot
        after = sensor.health
    assert snapshot.jpeg[:2] == b"\xff\xd8" and len(snapshot.jpeg) > 2000
    assert during >= 3, "no results while the snapshot's pieces went out"
    assert before is not None and after is not None
    assert after.results_dropped == before.results_dropped == 0

"""Record the emulated board for 10 s, replay it through the SDK, run the AGV controller on both; SIGKILL a recorder.

The real firmware on a pty (a scripted scene with a lane and a stop sign, lane + detect at 15 fps),
the real SDK, ``seedcam record`` as a child process.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from itertools import pairwise
from pathlib import Path

import pytest
from helpers import wait_until
from scripted_scenes import STOP_AND_PLATE

import seedcam
from seedcam.agv import AgvConfig, AgvController, DriveCommand, SensorClock
from seedcam.recording import Recorder, RecordingReader
from seedcam.types import Result

pytestmark = pytest.mark.e2e

RECORD_S = 10.0
DECISION_LATENCY_S = 0.03  # when the controller decides, after the capture (a result takes ~5-30 ms to arrive)


def _board(firmware_factory, tmp_path: Path):  # noqa: ANN001, ANN202
    scene = tmp_path / "scene.toml"
    scene.write_text(STOP_AND_PLATE)
    config = tmp_path / "fw.toml"
    config.write_text(
        f'[camera]\nsource = "synthetic"\nscene = "{scene}"\nfps = 15\n\n[tasks]\nenabled = ["lane", "detect"]\n'
    )
    return firmware_factory("--config", str(config))


@dataclass
class Driver:
    """The AGV controller fed with every result, one command per result (its decisions).

    Its clock is the sensor's: a command is decided at the result's capture time plus a fixed
    latency, so the decisions depend on the results alone, not on how the host scheduled them,
    and a replay of the same results must give the very same commands.
    """

    first_frame: int = -1

    def __post_init__(self) -> None:
        self.controller = AgvController(AgvConfig(), clock=SensorClock(0.0))
        self.commands: dict[int, DriveCommand] = {}

    def __call__(self, result: Result) -> None:
        if result.frame_id < self.first_frame:
            return
        now = result.capture_timestamp_us / 1e6 + DECISION_LATENCY_S
        self.controller.on_result(result, now)
        self.commands[result.frame_id] = self.controller.step(now)


def bare(result: Result) -> Result:
    return replace(result, received_monotonic=0.0)


def test_ten_seconds_recorded_replay_as_the_same_results_at_the_same_pace_and_drive_the_same(
    firmware_factory, tmp_path: Path
) -> None:
    board = _board(firmware_factory, tmp_path)
    path = tmp_path / "run.mcap"
    live: list[Result] = []
    with seedcam.open(board.link, timeout=10) as sensor:
        wait_until(lambda: sensor.recv(timeout=1) is not None, 20, "the first result")
        recorder = Recorder(sensor, path).start()
        driver = Driver()
        sensor.on_result(live.append)
        sensor.on_result(driver)
        time.sleep(RECORD_S)  # recording for RECORD_S seconds is what this test measures
        stats = recorder.stop()
    assert stats.dropped == 0 and not stats.error
    recorded = RecordingReader(path).results()
    assert len(recorded) >= RECORD_S * 15 * 0.6, stats  # a loaded 2-core box may process fewer frames
    first_live = live[0].frame_id
    live_ids = [r.frame_id for r in live if r.frame_id <= recorded[-1].frame_id]
    assert [r.frame_id for r in recorded if r.frame_id >= first_live] == live_ids  # the recorder missed nothing

    replayed: list[Result] = []
    replay_driver = Driver(first_frame=first_live)
    with seedcam.open(f"replay://{path}", timeout=10, queue_size=1000) as replay:
        replay.on_result(replay_driver)  # decisions as the results arrive; recv below collects them
        deadline = time.monotonic() + RECORD_S * 1.5 + 5
        while len(replayed) < len(recorded) and time.monotonic() < deadline:
            result = replay.recv(timeout=0.5)
            if result is not None:
                replayed.append(result)
    # the same result sequence, frame ids and values
    assert [r.frame_id for r in replayed] == [r.frame_id for r in recorded]
    by_id = {r.frame_id: bare(r) for r in live}
    assert [bare(r) for r in replayed if r.frame_id in by_id] == [by_id[i] for i in live_ids]

    # inter-arrival times within 5 %: the whole span and the median gap
    def span(rs: list[Result]) -> float:
        return rs[-1].received_monotonic - rs[0].received_monotonic

    def median_gap(rs: list[Result]) -> float:
        return statistics.median(b.received_monotonic - a.received_monotonic for a, b in pairwise(rs))

    assert span(replayed) == pytest.approx(span(recorded), rel=0.05)
    assert median_gap(replayed) == pytest.approx(median_gap(recorded), rel=0.05)
    # the AGV controller decides the same on the replay as it did live
    frames = [i for i in live_ids if i in driver.commands]
    assert len(frames) > 50 and all(i in replay_driver.commands for i in frames)
    assert [replay_driver.commands[i] for i in frames] == [driver.commands[i] for i in frames]
    assert any(driver.commands[i].speed_mps > 0.1 for i in frames), "the controller drove"


def test_a_recording_cut_by_sigkill_yields_every_result_of_its_complete_chunks(
    firmware_factory, tmp_path: Path
) -> None:
    board = _board(firmware_factory, tmp_path)
    path = tmp_path / "killed.mcap"
    child = subprocess.Popen(
        [sys.executable, "-m", "seedcam.cli", "record", "-p", board.link, "-o", str(path), "--json", "--timeout", "10"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    progress: list[dict[str, object]] = []

    def read() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            progress.append(json.loads(line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        wait_until(lambda: progress and int(progress[-1]["results_on_disk"]) >= 40, 40, "40 results on disk")  # type: ignore[call-overload]
        on_disk = int(progress[-1]["results_on_disk"])  # type: ignore[call-overload]
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    assert child.returncode == -signal.SIGKILL
    recording = RecordingReader(path)
    results = recording.results()
    assert recording.truncated and recording.truncation
    assert len(results) >= on_disk  # every result the recorder had handed to the OS in complete chunks
    ids = [r.frame_id for r in results]
    assert ids == sorted(set(ids)) and ids[-1] - ids[0] < len(ids) * 1.5  # in order, no long gaps
    assert recording.device_info() is not None

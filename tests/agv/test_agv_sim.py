"""The AGV controller in the closed-loop simulator: the real firmware (sim camera, models, framing)
on a pty with 60 ms latency and 5 % dropped result frames, the real SDK, the simulated car.

``seedcam agv-bench`` runs the full benchmark (10 laps x 5 seeds); this is its short version.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from seedcam import cli
from seedcam_firmware.agv_sim import SimOptions, detector_available, run_simulation

pytestmark = pytest.mark.e2e

MEAN_M, P95_M = 0.02, 0.05
needs_detector = pytest.mark.skipif(not detector_available(), reason="models/detect is not built yet")


def test_agv_sim_one_lap_meets_the_lane_keeping_thresholds_and_draws_the_lap(tmp_path: Path) -> None:
    """``seedcam agv-sim --laps 1 --seed 0 --json``: the benchmark's thresholds on one lap, and the PNG."""
    out = io.StringIO()
    png = tmp_path / "lap.png"
    code = cli.main(["agv-sim", "--laps", "1", "--seed", "0", "--latency-ms", "60", "--drop", "0.05",
                     "--json", "--png", str(png)], out)  # fmt: skip
    assert code == 0
    m = json.loads(out.getvalue())
    assert m["completed"] and len(m["lap_times_s"]) == 1, m["note"]
    assert m["error_mean_m"] <= MEAN_M, m
    assert m["error_p95_m"] <= P95_M, m
    assert m["departures"] == 0, m
    dropped, received = m["results_dropped_by_link"], m["results_received"]
    assert 0.02 < dropped / (received + dropped) < 0.09
    assert 0.05 < m["mean_result_age_s"] < 0.25  # the 60 ms link latency is there (and compensated)
    if detector_available():
        assert len(m["stops"]) == 1 and m["stops"][0]["ok"], m["stops"]
    data = png.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 20_000
    assert m["png"] == str(png)


def test_a_cut_link_gives_throttle_zero_within_150_ms(tmp_path: Path) -> None:
    run = run_simulation(
        SimOptions(laps=3, seed=1, detect=False, cut_link_after_s=3.0, run_after_cut_s=0.8, workdir=str(tmp_path))
    )
    assert run.cut_at_s is not None, run.metrics.note
    before = [c for t, c in run.commands if t <= run.cut_at_s]
    assert before[-1].speed_mps > 0.1, "the car was driving when the link was cut"
    first_zero_at, first_zero = next((t, c) for t, c in run.commands if t > run.cut_at_s and c.speed_mps == 0.0)
    assert first_zero_at - run.cut_at_s <= 0.150
    assert first_zero.reason == "watchdog"
    assert all(c.speed_mps == 0.0 for t, c in run.commands if t >= first_zero_at), "latched until good frames"
    assert run.samples[-1].speed_mps < 0.01  # and the car stands


@needs_detector
@pytest.mark.parametrize("seed", [2, 3])
def test_stop_sign_full_stop_before_the_line_for_2_s_then_go(tmp_path: Path, seed: int) -> None:
    from seedcam_firmware.agv_sim import default_track

    line = default_track().stop_lines[0]
    run = run_simulation(SimOptions(seed=seed, start_s=line - 2.3, distance_m=3.3, workdir=str(tmp_path)))
    m = run.metrics
    assert m.completed, (m.note, run.firmware_log)
    assert len(m.stops) == 1
    stop = m.stops[0]
    assert stop.hold_s >= 2.0 and 0.0 <= stop.stopped_before_m <= 0.4, stop
    assert m.sign_events.get("stop_seen") == 1 and m.sign_events.get("go") == 1, m.sign_events

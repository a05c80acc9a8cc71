"""``seedcam agv-bench`` names a starved machine when a failed run's results came late."""

from __future__ import annotations

from seedcam_firmware.agv_sim.commands import STARVED_TRIPS_PER_LAP, starved_machine_hint
from seedcam_firmware.agv_sim.metrics import RunMetrics


def _metrics(trips: int, laps: int = 10) -> RunMetrics:
    return RunMetrics(
        seeds=[1, 2],
        laps=laps,
        error_mean_m=0.004,
        error_p95_m=0.012,
        error_max_m=0.02,
        departures=0,
        lap_times_s=[30.0] * 4,
        stops=[],
        sign_events={},
        watchdog_trips=trips,
        mean_result_age_s=0.115,
    )


def test_a_run_full_of_watchdog_trips_points_at_the_machine_with_its_load() -> None:
    hint = starved_machine_hint(_metrics(783), [3.4, 2.0, 1.1], [3.9, 3.0, 1.8])
    assert "783 watchdog trips in 10 laps" in hint and "115 ms" in hint
    assert "3.4 -> 3.9" in hint and "idle machine" in hint


def test_a_few_trips_are_the_model_s_own_and_give_no_hint() -> None:
    limit = int(STARVED_TRIPS_PER_LAP * 10)
    assert starved_machine_hint(_metrics(limit), [3.0], [3.0]) == ""
    assert starved_machine_hint(_metrics(limit + 1), [], []).startswith(f"{limit + 1} watchdog trips")
    assert "load average" not in starved_machine_hint(_metrics(limit + 1), [], [])

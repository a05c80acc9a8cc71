"""Unit tests of the AGV controller parts, with synthetic results (no firmware)."""

from __future__ import annotations

import math
import queue
import threading
import time

import pytest
from helpers import RecordingMotor

from seedcam.agv import (
    AgvConfig,
    AgvController,
    ControlLoop,
    DriveCommand,
    LaneKeeper,
    MotionHistory,
    SensorClock,
    SignPolicy,
    Watchdog,
    predict_lane,
    sign_distance,
)
from seedcam.types import Box, Detection, LaneState, LaneStatus, Result

CFG = AgvConfig()


def lane(offset: float = 0.0, heading: float = 0.0, kappa: float = 0.0, status: LaneStatus = LaneStatus.OK,
         conf: float = 1.0, kappa_conf: float = 0.8) -> LaneState:  # fmt: skip
    return LaneState(status, offset, heading, kappa, conf, conf, kappa_conf, 0.45)


def result(
    t: float, lane_state: LaneState | None = None, detections: tuple[Detection, ...] = (), fid: int = 0
) -> Result:
    """A result captured and received at host time ``t`` (the emulated board shares the host clock)."""
    return Result(
        frame_id=fid,
        capture_timestamp_us=round(t * 1e6),
        lane=lane_state if lane_state is not None else lane(),
        detections=detections,
        frame_width=320,
        frame_height=240,
        send_timestamp_us=round(t * 1e6),
        received_monotonic=t,
    )


def sign_box(forward_m: float, left_m: float = -0.375, cfg: AgvConfig = CFG) -> Box:
    """The box the renderer's camera model gives a sign face (cross-checks sign_distance's geometry)."""
    from seedcam_firmware.scene import CameraModel, SceneObject, object_corners

    camera = CameraModel()
    uv, _ = camera.project(object_corners(SceneObject("stop", forward_m, left_m)))
    x0, y0 = uv.min(axis=0)
    x1, y1 = uv.max(axis=0)
    return Box(max(x0, 0) / 320, max(y0, 0) / 240, min(x1 + 1, 320) / 320, min(y1 + 1, 240) / 240)


# ---------------------------------------------------------------------------- watchdog


def test_watchdog_starts_latched_and_releases_after_n_good_results_in_a_row() -> None:
    dog = Watchdog(0.15, 3)
    assert dog.tripped(0.0)
    dog.feed(0.00, fresh=True, good=True)
    dog.feed(0.03, fresh=True, good=False)  # breaks the streak
    dog.feed(0.06, fresh=True, good=True)
    dog.feed(0.09, fresh=True, good=True)
    assert dog.tripped(0.10)
    dog.feed(0.12, fresh=True, good=True)
    assert not dog.tripped(0.13)
    assert dog.deadline() == pytest.approx(0.27)


def test_watchdog_trips_on_silence_and_stale_results_do_not_feed_it() -> None:
    dog = Watchdog(0.15, 1)
    dog.feed(1.0, fresh=True, good=True)
    assert not dog.tripped(1.149)
    dog.feed(1.1, fresh=False, good=True)  # a stale result is no sign of life
    assert dog.tripped(1.1501)
    assert dog.trips == 1
    dog.feed(1.2, fresh=True, good=True)
    assert not dog.tripped(1.21)


# ---------------------------------------------------------------------------- lane keeper


def test_lane_keeper_steers_back_towards_the_centre_and_feeds_forward_only_confident_curvature() -> None:
    keeper = LaneKeeper(CFG)
    assert keeper.current(0.0, MotionHistory()) is None  # nothing seen yet: no estimate to steer on
    keeper.observe(lane(offset=0.05), 0.0)
    assert keeper.steer(keeper.current(0.0, MotionHistory()), 0.5) < 0  # car left of centre: steer right
    keeper.observe(lane(heading=-0.1), 0.0)
    assert keeper.steer(keeper.current(0.0, MotionHistory()), 0.5) > 0  # yawed right: steer left
    keeper.observe(lane(kappa=1.0, heading=-math.asin(CFG.wheelbase_m)), 0.0)
    on_circle = keeper.steer(keeper.current(0.0, MotionHistory()), 0.5)
    assert on_circle == pytest.approx(math.asin(CFG.wheelbase_m), abs=1e-9)  # steady state on the circle
    keeper.observe(lane(kappa=1.0, heading=-math.asin(CFG.wheelbase_m), kappa_conf=0.1), 0.0)
    assert keeper.steer(keeper.current(0.0, MotionHistory()), 0.5) < on_circle  # no feed-forward when unsure


def test_prediction_moves_the_lane_state_by_what_the_car_did_since_capture() -> None:
    history = MotionHistory()
    history.record(0.0, 0.5, 0.0)
    history.record(0.2, 0.5, 0.0)
    assert history.distance(0.0, 0.2) == pytest.approx(0.1)
    # heading 0.1 rad left on a straight: 0.2 s at 0.5 m/s moves the car 0.1 * sin(0.1) to the left
    e, psi = predict_lane(0.0, 0.1, 0.0, history.segments(0.0, 0.2), CFG.wheelbase_m)
    assert e == pytest.approx(0.1 * math.sin(0.1), rel=1e-3)
    assert psi == pytest.approx(0.1)
    # standing still changes nothing; a lane bending left turns the heading right relative to it
    assert predict_lane(0.02, 0.0, 0.0, [(0.5, 0.0, 0.0)], 0.15) == (0.02, 0.0)
    _, psi = predict_lane(0.0, 0.0, 1.0, [(0.2, 0.5, 0.0)], 0.15)
    assert psi == pytest.approx(-0.1, rel=0.02)


def test_controller_compensates_the_age_of_a_result() -> None:
    """Two controllers see the same lane state; the one told it is 150 ms old steers as if the car moved on."""
    fresh, aged = AgvController(), AgvController()
    for ctl in (fresh, aged):  # cruise straight at 0.5 m/s
        for i in range(10):
            ctl.on_result(result(i * 0.03, lane()), i * 0.03)
            ctl.step(i * 0.03, odometer_m=i * 0.015, speed_mps=0.5)
    now = 0.45
    fresh.on_result(result(now, lane(heading=0.1)), now)
    aged.on_result(result(now - 0.15, lane(heading=0.1)), now)
    e_fresh = fresh.lane_keeper.current(now, fresh.history).offset_m
    e_aged = aged.lane_keeper.current(now, aged.history).offset_m
    assert e_fresh == pytest.approx(0.0)
    assert e_aged == pytest.approx(0.5 * 0.15 * math.sin(0.1), rel=0.05)


def test_sensor_clock_estimates_the_offset_from_the_link_delay() -> None:
    clock = SensorClock(one_way_s=0.06)
    for i, jitter in enumerate((0.004, 0.0, 0.012)):  # sensor clock = host clock - 100 s
        sent = 10.0 + i
        received = sent + 100.0 + 0.06 + jitter
        captured_us, sent_us = round((sent - 0.02) * 1e6), round(sent * 1e6)
        clock.observe(Result(frame_id=i, capture_timestamp_us=captured_us, send_timestamp_us=sent_us,
                             received_monotonic=received))  # fmt: skip
    assert clock.offset_s == pytest.approx(100.0)
    r = Result(frame_id=9, capture_timestamp_us=20_000_000, received_monotonic=120.1)
    assert clock.capture_time(r) == pytest.approx(120.0)


# ---------------------------------------------------------------------------- signs


def stop_detection(forward_m: float, score: float = 0.9, label: str = "stop") -> Detection:
    return Detection(0, label, score, sign_box(forward_m))


@pytest.mark.parametrize("forward_m", [0.5, 0.8, 1.2, 1.6])
def test_sign_distance_from_the_box_matches_the_rendered_geometry(forward_m: float) -> None:
    distance = sign_distance(sign_box(forward_m), 320, 240, CFG)
    assert distance == pytest.approx(forward_m, rel=0.02)


def test_a_stop_sign_needs_k_of_n_confirmations() -> None:
    policy = SignPolicy(AgvConfig(confirm_k=3, confirm_n=5))
    seen = [True, False, True, False, False, True]  # never 3 in any 5
    for i, hit in enumerate(seen):
        r = result(i * 0.033, detections=(stop_detection(1.2),) if hit else ())
        policy.observe(r, 0.0, i * 0.033, 0.0)
    assert policy.state == "cruise"
    policy.observe(result(0.3, detections=(stop_detection(1.2),)), 0.0, 0.3, 0.0)
    policy.observe(result(0.33, detections=(stop_detection(1.2),)), 0.0, 0.33, 0.0)
    assert policy.state == "approach"
    assert [e.kind for e in policy.events] == ["stop_seen"]


def test_stop_sign_full_stop_before_the_line_holds_then_goes_and_ignores_that_sign() -> None:
    """Drive a point car by the policy's caps: it must stop before the line, hold >= 2 s, go, not stop again."""
    cfg = AgvConfig()
    policy = SignPolicy(cfg)
    line_at = 2.0  # odometer of the stop line (the sign stands at the line)
    odo, speed, t, dt = 0.0, 0.5, 0.0, 0.02
    stopped_since, longest_stop, stop_odo = None, 0.0, None
    while odo < line_at + 2.0 and t < 30.0:
        ahead = line_at - odo
        detections = (stop_detection(ahead),) if 0.45 < ahead < 1.6 else ()  # the sign is in view only there
        policy.observe(result(t, detections=detections), odo, t, odo)
        cap, _ = policy.limit(t, odo, speed)
        target = min(0.5, cap)
        speed = max(target, speed - cfg.decel_mps2 * dt) if target < speed else min(target, speed + 0.8 * dt)
        odo += speed * dt
        t += dt
        if speed == 0.0:
            stopped_since = t if stopped_since is None else stopped_since
            longest_stop = max(longest_stop, t - stopped_since)
            stop_odo = odo
        else:
            stopped_since = None
    assert stop_odo is not None and stop_odo < line_at, "stopped before the line"
    assert line_at - stop_odo < 0.3
    assert longest_stop >= 2.0
    assert odo >= line_at + 2.0, "went on after the hold"
    assert [e.kind for e in policy.events] == ["stop_seen", "stopped", "go"]


def test_speed_limit_zone_caps_speed_for_its_length_and_ends() -> None:
    cfg = AgvConfig(speed_limit_mps=0.3, speed_zone_length_m=2.0)
    policy = SignPolicy(cfg)
    for i in range(5):
        det = Detection(1, "speed_limit", 0.9, sign_box(1.0))
        policy.observe(result(i * 0.03, detections=(det,)), 0.0, i * 0.03, 0.0)
    assert policy.limit(0.2, 0.5, 0.5) == (0.3, "speed_limit")
    assert policy.limit(0.3, 2.85, 0.3) == (0.3, "speed_limit")  # the zone runs from the sign (1 m) for 2 m
    assert policy.limit(0.4, 3.15, 0.3) == (math.inf, "")
    assert [e.kind for e in policy.events] == ["speed_limit", "speed_limit_end"]


def test_a_stop_sign_misread_as_a_speed_limit_opens_no_zone() -> None:
    """Frames that read the same far, turned stop sign as a speed limit do not vote for a zone."""
    policy = SignPolicy(AgvConfig(confirm_k=3, confirm_n=5))
    labels = ["stop", "speed_limit", "stop", "stop", "speed_limit", "speed_limit", "stop"]
    for i, label in enumerate(labels):
        det = stop_detection(1.5 - 0.01 * i, label=label)  # the car creeps on: the same sign, a bit nearer
        policy.observe(result(i * 0.033, detections=(det,)), 0.01 * i, i * 0.033, 0.01 * i)
    assert [e.kind for e in policy.events] == ["stop_seen"]
    assert policy.limit(0.3, 0.1, 0.5)[1] != "speed_limit"
    # a real speed-limit sign 1.5 m beyond that stop sign still opens its zone
    for i in range(5):
        det = Detection(1, "speed_limit", 0.9, sign_box(1.0))
        policy.observe(result(1 + i * 0.033, detections=(det,)), 2.0, 1 + i * 0.033, 2.0)
    assert [e.kind for e in policy.events] == ["stop_seen", "speed_limit"]


# ---------------------------------------------------------------------------- controller


def test_lane_lost_with_the_sensor_alive_coasts_at_most_half_a_metre_then_stops() -> None:
    ctl = AgvController()
    t, odo, speed = 0.0, 0.0, 0.0
    commands: list[DriveCommand] = []
    lost_at_odo = None
    for i in range(400):
        t = i * 0.02
        if i % 2 == 0:  # results at 25 Hz
            status = LaneStatus.OK if t < 3.0 else LaneStatus.LOST
            if status is LaneStatus.LOST and lost_at_odo is None:
                lost_at_odo = odo
            ctl.on_result(result(t, lane(status=status, conf=1.0 if status is LaneStatus.OK else 0.0)), t)
        cmd = ctl.step(t, odometer_m=odo, speed_mps=speed)
        commands.append(cmd)
        speed = cmd.speed_mps  # an ideal motor
        odo += speed * 0.02
    assert lost_at_odo is not None and commands[140].speed_mps > 0.3  # cruising before the loss
    assert odo - lost_at_odo <= 0.5
    assert commands[-1].speed_mps == 0.0 and commands[-1].reason == "lane_lost"
    assert ctl.watchdog.trips == 0  # the sensor was alive all along
    assert ctl.stats.coast_stops == 1


class QueueSensor:
    """Results pushed by the test thread; recv waits on the queue (like Sensor.recv)."""

    def __init__(self) -> None:
        self.queue: queue.Queue[Result] = queue.Queue()

    def recv(self, timeout: float | None = None) -> Result | None:
        try:
            return self.queue.get(timeout=timeout)
        except queue.Empty:
            return None


def test_control_loop_gives_throttle_zero_within_150_ms_of_the_last_result() -> None:
    sensor, motor = QueueSensor(), RecordingMotor()
    loop = ControlLoop(sensor, motor, AgvController(), rate_hz=20)  # a slow tick: the deadline must still hold
    runner = threading.Thread(target=loop.run, kwargs={"duration_s": 10.0})
    runner.start()
    last_sent = 0.0
    for i in range(60):  # 2 s of results at 30 Hz
        now = time.monotonic()
        sensor.queue.put(result(now, lane(), fid=i))
        last_sent = now
        time.sleep(1 / 30)  # the producer's frame rate, not a wait for a condition
    deadline = time.monotonic() + 2.0
    while not any(t > last_sent and c.speed_mps == 0.0 for t, c in motor.commands) and time.monotonic() < deadline:
        time.sleep(0.005)
    loop.request_stop()
    runner.join(5.0)
    moving = [c for t, c in motor.commands if t <= last_sent]
    assert moving[-1].speed_mps > 0.2, "the car was driving when the results stopped"
    first_zero = next(t for t, c in motor.commands if t > last_sent and c.speed_mps == 0.0)
    assert first_zero - last_sent <= 0.150 + 0.010  # 150 ms, plus this test's own scheduling
    assert next(c for t, c in motor.commands if t > last_sent and c.speed_mps == 0.0).reason == "watchdog"

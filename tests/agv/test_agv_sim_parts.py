"""The simulator's parts without the firmware: track, car, scene messages, the impaired link, the serial motor."""

from __future__ import annotations

import math
import os
import time

import pytest
from helpers import wait_until

from seedcam.agv import DriveCommand, SerialMotorController
from seedcam.agv.serial_motor import Telemetry, checksum, encode_drive, parse_line
from seedcam.errors import ProtocolError
from seedcam.protocol.framing import Channel, Decoder, Encoder
from seedcam.transport import open_transport
from seedcam.transport.pty_device import PtyDeviceTransport
from seedcam_firmware.agv_sim import BicycleModel, ImpairedLink, LinkImpairment, Track, VehicleParams, default_track
from seedcam_firmware.agv_sim.scene import scene_message

# ---------------------------------------------------------------------------- track and car


def test_default_track_closes_and_projection_inverts_pose() -> None:
    track = default_track(0.45)
    assert 14.0 < track.length < 15.0
    assert min(1 / abs(seg.curvature) for seg in track.segments if seg.curvature) >= 1.0
    for i in range(300):
        s = track.length * i / 300
        for lateral in (-0.2, 0.0, 0.13):
            x, y, _ = track.pose(s, lateral)
            s2, lat2 = track.project(x, y, s)
            assert math.remainder(s2 - s, track.length) == pytest.approx(0.0, abs=1e-6)
            assert lat2 == pytest.approx(lateral, abs=1e-6)
    # the mean curvature ahead is continuous across the lap's end
    assert track.mean_curvature(track.length - 0.1, 0.5) == pytest.approx(0.2, abs=1e-6)
    assert not track.line_painted(track.missing[0][0] + 0.1, +1) and track.line_painted(track.missing[0][0] + 0.1, -1)


def test_track_refuses_tight_curves_and_open_loops() -> None:
    with pytest.raises(ValueError, match="radius"):
        Track([("arc", 0.8, 360.0)])
    with pytest.raises(ValueError, match="do not close"):
        Track([("straight", 1.0), ("arc", 1.0, 180.0)])


def test_bicycle_model_drives_the_circle_its_steering_gives() -> None:
    params = VehicleParams()
    car = BicycleModel(params)
    delta = 0.15
    car.command(DriveCommand(0.4, delta))
    for _ in range(2000):  # 20 s, several circles
        state = car.step(0.01)
    assert state.speed_mps == pytest.approx(0.4, abs=1e-3)
    radius = params.wheelbase_m / math.tan(delta)
    assert math.hypot(state.x - 0.0, state.y - radius) == pytest.approx(radius, abs=0.01)
    car.command(DriveCommand(0.0, 0.0))
    for _ in range(100):
        state = car.step(0.01)
    assert state.speed_mps == 0.0


def test_scene_message_places_the_stop_sign_where_the_car_sees_it() -> None:
    track = default_track(0.45)
    line = track.stop_lines[0]
    x, y, heading = track.pose(line - 1.2, 0.03)
    scene = scene_message(track, x, y, heading + 0.05, line - 1.2)["scene"]
    assert scene["offset_m"] == pytest.approx(0.03, abs=1e-9)
    assert scene["heading_rad"] == pytest.approx(0.05, abs=1e-9)
    (stop,) = [o for o in scene["objects"] if o["kind"] == "stop"]
    assert stop["forward_m"] == pytest.approx(1.2, abs=0.06)  # the car is yawed 0.05 rad
    assert stop["left_m"] < -0.3  # at the right of the lane
    assert stop["yaw_rad"] == pytest.approx(-0.05, abs=1e-9)
    x, y, heading = track.pose(track.missing[0][0] + 0.2)
    assert scene_message(track, x, y, heading, track.missing[0][0] + 0.2)["scene"]["left_style"] == "none"


# ---------------------------------------------------------------------------- impaired link


def test_impaired_link_delays_everything_and_drops_only_result_frames(tmp_path) -> None:  # noqa: ANN001
    device = PtyDeviceTransport.create(str(tmp_path / "fw"))
    link = ImpairedLink(str(tmp_path / "fw"), str(tmp_path / "host"), LinkImpairment(0.05, drop_rate=0.5, seed=1))
    host = open_transport(str(tmp_path / "host"))
    try:
        enc, dec = Encoder(), Decoder()
        frames = []
        sent_at = time.monotonic()
        for i in range(100):
            device.write(enc.encode(Channel.RESULT, b"r%d" % i), 1.0)
            device.write(enc.encode(Channel.CONTROL, b"c%d" % i), 1.0)
        first_at = None

        def got_all_control() -> bool:
            nonlocal first_at
            data = host.read(65536, 0.01)
            if data and first_at is None:
                first_at = time.monotonic()
            frames.extend(dec.feed(data))
            return sum(f.channel == Channel.CONTROL for f in frames) == 100

        wait_until(got_all_control, 5.0, "every control frame")
        assert first_at is not None and first_at - sent_at >= 0.05
        results = [f for f in frames if f.channel == Channel.RESULT]
        assert 30 <= len(results) <= 70
        assert link.counters.dropped == 100 - len(results)
        assert dec.counters.crc_errors == 0
        link.cut()
        device.write(enc.encode(Channel.CONTROL, b"after the cut"), 1.0)
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:  # nothing may arrive for a while
            assert not dec.feed(host.read(65536, 0.05))
    finally:
        host.close()
        link.close()
        device.close()


# ---------------------------------------------------------------------------- serial motor controller


def test_line_protocol_golden_lines() -> None:
    assert encode_drive(7, DriveCommand(0.35, -0.12)) == b"$D,7,350,-120*77\n"
    assert checksum("T,7,1234,350") == "7D"
    assert parse_line(b"$T,7,1234,350*7D\r\n") == Telemetry(7, 1.234, 0.35)
    assert parse_line(b"$E,3,12*" + checksum("E,3,12").encode() + b"\n") == 12
    assert parse_line(b"\n") is None
    with pytest.raises(ProtocolError, match="checksum"):
        parse_line(b"$T,7,1234,350*7E\n")
    with pytest.raises(ProtocolError):
        parse_line(b"garbage\n")


def test_serial_motor_controller_on_a_pty() -> None:
    master, slave = os.openpty()
    try:
        motor = SerialMotorController(os.ttyname(slave))
        motor.drive(DriveCommand(0.5, 0.1))
        received = bytearray()
        wait_until(lambda: received.extend(os.read(master, 1024)) or received.endswith(b"\n"), 2.0, "a line")
        assert bytes(received) == encode_drive(1, DriveCommand(0.5, 0.1))
        assert motor.odometer_m() is None
        os.write(master, b"$T,1,2500,480*" + checksum("T,1,2500,480").encode() + b"\nnoise\n")
        wait_until(lambda: motor.drive(DriveCommand(0.5, 0.0)) or motor.odometer_m() is not None, 2.0, "telemetry")
        assert motor.odometer_m() == pytest.approx(2.5)
        assert motor.speed_mps() == pytest.approx(0.48)
        assert motor.bad_lines == 1
        received.clear()
        motor.close()  # sends a stop line

        def stop_line_seen() -> bool:
            received.extend(os.read(master, 4096))
            return any(line.startswith(b"$D,") and b",0,0*" in line for line in received.split(b"\n"))

        wait_until(stop_line_seen, 2.0, "the stop line")
    finally:
        os.close(master)
        os.close(slave)


def test_error_statistics_count_only_samples_taken_while_moving() -> None:
    from seedcam_firmware.agv_sim.metrics import MOVING_MPS, RunMetrics, Sample, error_stats, summarise

    def sample(error_m: float, speed_mps: float) -> Sample:
        return Sample(0.0, 0.0, 0.0, 0.0, error_m, 0.0, speed_mps, "lane")

    moving = [sample(e, 0.5) for e in (-0.01, 0.02, -0.03, 0.04)]
    standing = [sample(0.5, 0.0), sample(0.5, MOVING_MPS)]  # a car stopped at a sign is not lane keeping
    mean, p95, worst = error_stats(moving + standing)
    assert mean == pytest.approx(0.025) and worst == pytest.approx(0.04)
    assert p95 == pytest.approx(0.03 + 0.85 * 0.01)  # linear interpolation between the two largest
    assert all(math.isnan(v) for v in error_stats(standing))
    per_run = {"laps": 1, "error_mean_m": 0.0, "error_p95_m": 0.0, "error_max_m": 0.0, "departures": 0}
    runs = [
        (seed, part, RunMetrics(seeds=[seed], lap_times_s=[], stops=[], sign_events={}, **per_run))
        for seed, part in ((0, moving[:2]), (1, moving[2:]))
    ]
    total = summarise(runs)
    assert (total.error_mean_m, total.error_max_m) == (pytest.approx(0.025), pytest.approx(0.04))

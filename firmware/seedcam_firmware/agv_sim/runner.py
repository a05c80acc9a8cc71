"""The closed-loop simulation: a simulated car, the real firmware with a ``sim`` camera, an impaired
pty link, the real SDK and the AGV controller, all running in real time.

::

    car pose ──scene datagram──▶ firmware (sim camera → lane/detect models → framing) ──pty──▶
    impaired link (latency, drops, corruption) ──pty──▶ seedcam.Sensor ──▶ AgvController ──▶
    SimulatedMotor ──▶ bicycle model ──▶ car pose
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import math
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import seedcam
from seedcam.agv.clock import SensorClock
from seedcam.agv.config import AgvConfig, DriveCommand
from seedcam.agv.controller import AgvController
from seedcam.agv.loop import ControlLoop
from seedcam_firmware.agv_sim.link import ImpairedLink, LinkImpairment
from seedcam_firmware.agv_sim.metrics import STOPPED_MPS, RunMetrics, Sample, StopEvent, error_stats
from seedcam_firmware.agv_sim.scene import scene_message, wrap_angle
from seedcam_firmware.agv_sim.track import Track, default_track
from seedcam_firmware.agv_sim.vehicle import BicycleModel, SimulatedMotor, VehicleParams
from seedcam_firmware.config import DEFAULT_MODELS_DIR
from seedcam_firmware.launcher import EmulatedBoard

__all__ = ["SimOptions", "SimRun", "run_simulation", "detector_available"]

log = logging.getLogger(__name__)

_START_TIMEOUT_S = 90.0  #: the firmware imports LiteRT and loads two models on a loaded machine
_ABORT_ERROR_M = 0.4  #: the car is off the track: end the run
_SAMPLE_EVERY = 4  #: log every 4th physics tick


def detector_available() -> bool:
    """Whether the firmware has a detector bundle to load (models/detect)."""
    return (Path(DEFAULT_MODELS_DIR) / "detect" / "manifest.json").is_file()


@dataclass(frozen=True)
class SimOptions:
    """One simulated run.

    Attributes:
        laps: laps to drive.
        start_s: where the car starts (arc length of its front axle on the track).
        distance_m: drive this far instead of ``laps`` laps (a single stop-sign approach, say).
        seed: seed of the track's look, lane width, sensor noise and link impairments.
        latency_s, drop_rate, corrupt_rate: the link's impairments (see :class:`LinkImpairment`).
        image_noise: the camera's noise sigma (0..1 scale); None keeps the seed's.
        fps: camera frame rate.
        detect: run the detector (None: when its bundle exists).
        max_lap_s: give up when a lap takes longer.
        cut_link_after_s: cut the link this long after the car starts, at the first moment it drives
            faster than 0.2 m/s (watchdog tests); the run then ends ``run_after_cut_s`` later.
        run_after_cut_s: see above.
        agv: controller settings.
        vehicle: the simulated car.
        control_hz, physics_hz: loop rates.
        workdir: where the sockets and the firmware log go (default: a temporary folder).
    """

    laps: int = 1
    seed: int = 0
    start_s: float = 0.0
    distance_m: float | None = None
    latency_s: float = 0.06
    drop_rate: float = 0.05
    corrupt_rate: float = 0.0
    image_noise: float | None = None
    fps: float = 30.0
    detect: bool | None = None
    max_lap_s: float = 90.0
    cut_link_after_s: float | None = None
    run_after_cut_s: float = 1.0
    agv: AgvConfig = field(default_factory=AgvConfig)
    vehicle: VehicleParams = field(default_factory=VehicleParams)
    control_hz: float = 50.0
    physics_hz: float = 200.0
    workdir: str | None = None


@dataclass
class SimRun:
    """What a run produced."""

    options: SimOptions
    track: Track
    samples: list[Sample]
    metrics: RunMetrics
    commands: list[tuple[float, DriveCommand]]  #: (seconds since the start, command)
    cut_at_s: float | None = None  #: when the link was cut (seconds since the start)
    firmware_log: str = ""


class _World:
    """The physics thread: moves the car, publishes what the camera sees, logs samples."""

    def __init__(self, track: Track, options: SimOptions, scene_socket: str) -> None:
        self.track = track
        self.options = options
        L = options.vehicle.wheelbase_m
        x, y, yaw = track.pose(options.start_s)
        self.model = BicycleModel(options.vehicle, x - L * math.cos(yaw), y - L * math.sin(yaw), yaw)
        self.goal_m = options.distance_m if options.distance_m is not None else options.laps * track.length
        self.samples: list[Sample] = []
        self.reason = "start"
        self.t0: float | None = None  #: set when the controller starts: samples are logged from then on
        self.done = threading.Event()
        self.outcome = ""
        self.s_total = options.start_s  #: the front axle's unwrapped arc length
        self._s = options.start_s % track.length
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.setblocking(False)
        self._target = scene_socket
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sim-physics", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        self._sock.close()

    def _publish(self, fx: float, fy: float, yaw: float) -> None:
        message = scene_message(self.track, fx, fy, yaw, self._s, noise_sigma=self.options.image_noise)
        with contextlib.suppress(OSError):  # the camera is not there yet, or busy: it takes the next one
            self._sock.sendto(json.dumps(message).encode(), self._target)

    def _run(self) -> None:
        period = 1.0 / self.options.physics_hz
        L = self.options.vehicle.wheelbase_m
        length = self.track.length
        last = time.monotonic()
        tick = 0
        while not self._stop.wait(max(0.0, last + period - time.monotonic())):
            now = time.monotonic()
            state = self.model.step(now - last)
            last = now
            fx, fy = state.front(L)
            s, lateral = self.track.project(fx, fy, self._s)
            self.s_total += wrap_angle((s - self._s) / length * 2 * math.pi) / (2 * math.pi) * length
            self._s = s
            self._publish(fx, fy, state.yaw)
            tick += 1
            if self.t0 is None or tick % _SAMPLE_EVERY:
                continue
            _, rear_lateral = self.track.project(state.x, state.y, s - L)
            t = now - self.t0
            self.samples.append(Sample(t, fx, fy, self.s_total, lateral, rear_lateral, state.speed_mps, self.reason))
            laps_done = (self.s_total - self.options.start_s) / length
            if self.s_total - self.options.start_s >= self.goal_m:
                self.finish("laps done")
            elif abs(lateral) > _ABORT_ERROR_M:
                self.finish(f"the car left the track at {self.s_total:.2f} m")
            elif t > self.options.max_lap_s * (math.floor(laps_done) + 1):
                self.finish(f"lap {math.floor(laps_done) + 1} took longer than {self.options.max_lap_s} s")

    def finish(self, outcome: str) -> None:
        """End the run with ``outcome`` (the first outcome wins)."""
        if not self.done.is_set():
            self.outcome = outcome
            self.done.set()


def run_simulation(options: SimOptions) -> SimRun:
    """Drive ``options.laps`` laps of the default track through the real firmware and link.

    Raises:
        BoardStartError: the firmware did not start (BoardStartTimeout: not in time).
        SensorError: the link failed for good.
    """
    width = 0.42 + 0.06 * ((options.seed * 7919) % 101) / 100.0
    track = default_track(lane_width_m=round(width, 3))
    detect = detector_available() if options.detect is None else options.detect
    tasks = "lane,detect" if detect else "lane"
    with contextlib.ExitStack() as stack:
        if options.workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="seedcam-sim-")))
        else:
            workdir = Path(options.workdir)
            workdir.mkdir(parents=True, exist_ok=True)
        scene_socket = str(workdir / "scene.sock")
        world = _World(track, options, scene_socket)
        world.start()
        stack.callback(world.stop)
        firmware = EmulatedBoard(
            "--camera", "sim", "--camera-path", scene_socket, "--fps", str(options.fps),
            "--seed", str(options.seed), "--tasks", tasks, workdir=workdir,
        )  # fmt: skip
        stack.enter_context(firmware.start())
        firmware.wait_ready(_START_TIMEOUT_S)
        host_path = str(workdir / "host")
        impairment = LinkImpairment(options.latency_s, options.drop_rate, options.corrupt_rate, options.seed)
        link = ImpairedLink(firmware.link, host_path, impairment)
        stack.callback(link.close)
        sensor = stack.enter_context(seedcam.open(host_path, timeout=10.0))
        clock = SensorClock.calibrate(sensor, pings=5, timeout=2.0)
        controller = AgvController(options.agv, clock)
        motor = SimulatedMotor(world.model)
        stack.callback(motor.close)

        def on_command(now: float, command: DriveCommand) -> None:
            world.reason = command.reason

        loop = ControlLoop(sensor, motor, controller, rate_hz=options.control_hz, on_command=on_command)
        start = time.monotonic()
        world.t0 = start
        cut_at: float | None = None

        def supervise() -> None:
            nonlocal cut_at
            if options.cut_link_after_s is not None:
                if not world.done.wait(options.cut_link_after_s):
                    while world.model.state.speed_mps < 0.2 and not world.done.wait(0.01):
                        pass  # cut while the car drives, so the test sees the throttle go to 0
                    cut_at = link.cut() - start
                    world.done.wait(options.run_after_cut_s)
                    world.finish("link cut")
            world.done.wait()
            loop.request_stop()

        watcher = threading.Thread(target=supervise, name="sim-supervisor", daemon=True)
        watcher.start()
        try:
            loop.run()
        finally:
            world.finish(world.outcome or "stopped")
            watcher.join(timeout=5.0)
        counters = link.counters
        stats = controller.stats
        sensor_stats = sensor.stats
        samples = list(world.samples)
        commands = [(t - start, c) for t, c in motor.commands]
        metrics = _metrics(track, options, samples, controller, world.outcome)
        metrics.results_received = sensor_stats.results_received
        metrics.results_dropped_by_link = counters.dropped
        metrics.results_corrupted_by_link = counters.corrupted
        metrics.watchdog_trips = stats.watchdog_trips
        metrics.mean_result_age_s = stats.mean_age_s
        metrics.extra = {
            "lane_width_m": track.lane_width_m,
            "track_length_m": track.length,
            "tasks": tasks,
            "host_crc_errors": sensor_stats.link.crc_errors,
            "stale_results": stats.stale_results,
            "lane_unusable": stats.lane_unusable,
            "clock_one_way_s": clock.one_way_s,
            "outcome": world.outcome,
            # what the sign policy decided: [seconds since the start, kind, odometer m, line/zone-end odometer m, value]
            "sign_event_log": [
                [round(e.time - start, 3), e.kind, round(e.odometer_m, 3), _finite(e.line_odometer_m), _finite(e.value)]
                for e in controller.events
            ],
        }
        firmware_log = firmware.log_tail(4000)
    return SimRun(options, track, samples, metrics, commands, cut_at, firmware_log)


def _finite(value: float) -> float | None:
    return round(value, 3) if math.isfinite(value) else None


def _metrics(
    track: Track, options: SimOptions, samples: list[Sample], controller: AgvController, outcome: str
) -> RunMetrics:
    mean, p95, worst = error_stats(samples)
    limit = track.lane_width_m / 2 - options.vehicle.half_width_m
    departures, outside = 0, False
    for s in samples:
        now_outside = max(abs(s.error_m), abs(s.rear_error_m)) > limit
        departures += now_outside and not outside
        outside = now_outside
    lap_times: list[float] = []
    for s in samples:
        if s.s_total - options.start_s >= (len(lap_times) + 1) * track.length:
            lap_times.append(s.t - (sum(lap_times) if lap_times else 0.0))
    events = collections.Counter(e.kind for e in controller.events)
    completed = outcome in ("laps done", "link cut")
    return RunMetrics(
        seeds=[options.seed],
        laps=options.laps if options.distance_m is None else 0,
        error_mean_m=mean,
        error_p95_m=p95,
        error_max_m=worst,
        departures=departures,
        lap_times_s=lap_times,
        stops=_stops(track, samples, options.start_s),
        sign_events=dict(events),
        completed=completed,
        note="" if completed else outcome,
    )


def _stops(track: Track, samples: list[Sample], start_s: float) -> list[StopEvent]:
    """One event per stop line the car approached: its longest full stop within 1 m before the line."""
    if not samples:
        return []
    out: list[StopEvent] = []
    furthest = samples[-1].s_total
    first_lap = math.floor(start_s / track.length)
    lap = first_lap
    while lap * track.length < furthest:
        for line in track.stop_lines:
            line_total = lap * track.length + line
            if line_total < start_s + 0.5 or furthest < line_total - 0.3:
                continue
            best_hold, best_gap, run_start = 0.0, math.nan, None
            for s in samples:
                before = line_total - 1.0 <= s.s_total < line_total
                if before and s.speed_mps < STOPPED_MPS:
                    run_start = s if run_start is None else run_start
                    hold = s.t - run_start.t
                    if hold >= best_hold:
                        best_hold, best_gap = hold, line_total - s.s_total
                else:
                    run_start = None
            out.append(StopEvent(lap - first_lap + 1, line_total, best_gap, best_hold))
        lap += 1
    return out

"""The firmware daemon: in-process on a ``pair://`` link through the public SDK, and as a process."""

from __future__ import annotations

import logging
import threading
import time
import tomllib
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from helpers import MODELS, run_firmware_cli, wait_until

import seedcam
from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import RpcError
from seedcam.protocol import codec
from seedcam.protocol.framing import Channel, Decoder, Encoder, Flag
from seedcam.transport import open_transport
from seedcam.types import Health, LaneState
from seedcam_firmware.config import config_from_dict
from seedcam_firmware.daemon import Daemon

WAIT_S = 5.0
LANE_INT8 = MODELS / "lane" / "lane_int8.tflite"


def _merge(base: dict[str, dict[str, Any]], extra: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    merged = {section: dict(table) for section, table in base.items()}
    for section, table in extra.items():
        merged.setdefault(section, {}).update(table)
    return merged


class Board:
    """An in-process daemon on a unique ``pair://`` link."""

    def __init__(self, config_path: Path | None = None, **sections: dict[str, Any]) -> None:
        self.url = f"pair://daemon-test-{uuid.uuid4().hex[:12]}"
        base = {
            "link": {"url": self.url},
            "camera": {"source": "synthetic", "width": 160, "height": 120, "fps": 30.0},
            "tasks": {"enabled": []},
        }
        self.daemon = Daemon(config_from_dict(_merge(base, sections)), config_path=config_path)
        self.sensor: seedcam.Sensor | None = None
        self.daemon.start()

    def connect(self) -> seedcam.Sensor:
        self.sensor = seedcam.open(self.url, timeout=WAIT_S, reconnect=False)
        return self.sensor

    def close(self) -> None:
        if self.sensor is not None:
            self.sensor.close()
        self.daemon.stop()


@pytest.fixture
def make_board() -> Iterator[Callable[..., Board]]:
    boards: list[Board] = []

    def make(config_path: Path | None = None, **sections: dict[str, Any]) -> Board:
        board = Board(config_path, **sections)
        boards.append(board)
        return board

    yield make
    for board in reversed(boards):
        board.close()


@pytest.fixture
def board(make_board: Callable[..., Board]) -> Board:
    b = make_board()
    b.connect()
    return b


# ---- services through the SDK -----------------------------------------------------------


def test_info_describes_the_running_daemon(board: Board) -> None:
    assert board.sensor is not None
    info = board.sensor.info()
    assert info.boot_id == board.daemon.boot_id
    assert info.tasks_enabled == ()
    assert (info.frame_width, info.frame_height) == (160, 120)
    assert info.camera == "synthetic"
    assert info.firmware_version
    assert not any(m.active for m in info.models)


def test_results_flow_with_no_task_enabled(board: Board) -> None:
    assert board.sensor is not None
    results = [board.sensor.recv(timeout=WAIT_S) for _ in range(3)]
    assert all(r is not None for r in results)
    ids = [r.frame_id for r in results if r is not None]
    assert ids == sorted(set(ids))
    for r in results:
        assert r is not None
        assert r.model_ids == () and r.lane is None
        assert (r.frame_width, r.frame_height) == (160, 120)
        assert set(r.timings_us) == {"capture_to_send"}  # pipeline.timings = "summary", the default
        assert r.send_timestamp_us >= r.capture_timestamp_us > 0


def test_live_config_key_takes_effect_on_snapshots(board: Board) -> None:
    sensor = board.sensor
    assert sensor is not None
    assert sensor.recv(timeout=WAIT_S) is not None  # a frame exists
    assert sensor.config_get("pipeline.jpeg_quality") == 80

    changed = sensor.config_set("pipeline.jpeg_quality", 95)
    assert (changed.key, changed.value, changed.restart_required) == ("pipeline.jpeg_quality", 95, False)
    assert sensor.config_get("pipeline.jpeg_quality") == 95
    high = sensor.snapshot()  # quality 0: the device default, i.e. the config value
    sensor.config_set("pipeline.jpeg_quality", 10)
    low = sensor.snapshot()

    assert len(low.jpeg) < 0.7 * len(high.jpeg)
    image = cv2.imdecode(np.frombuffer(low.jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None and image.shape[:2] == (120, 160)
    assert (low.width, low.height) == (160, 120)
    assert low.frame_id >= high.frame_id
    explicit = sensor.snapshot(quality=95)  # an explicit quality wins over the config
    assert len(explicit.jpeg) > len(low.jpeg)


def test_restart_only_key_reports_restart_required(board: Board) -> None:
    sensor = board.sensor
    assert sensor is not None
    changed = sensor.config_set("camera.fps", 15)
    assert changed.restart_required is True
    assert changed.value == 15.0
    assert sensor.config_get("camera.fps") == 15.0


def test_bad_config_changes_are_refused(board: Board) -> None:
    sensor = board.sensor
    assert sensor is not None
    with pytest.raises(RpcError) as err:
        sensor.config_set("camera.fsp", 15)
    assert err.value.status == "NOT_FOUND"
    with pytest.raises(RpcError) as err:
        sensor.config_set("pipeline.jpeg_quality", 101)
    assert err.value.status == "INVALID_ARGUMENT"
    assert sensor.config_get("pipeline.jpeg_quality") == 80


def test_persisted_config_changes_touch_only_their_key(make_board: Callable[..., Board], tmp_path: Path) -> None:
    path = tmp_path / "fw.toml"
    path.write_text('[device]\nname = "kitchen"\n')
    board = make_board(config_path=path)  # camera, link and tasks come from elsewhere: never written
    sensor = board.connect()
    sensor.config_set("pipeline.jpeg_quality", 55)
    assert tomllib.loads(path.read_text()) == {"device": {"name": "kitchen"}, "pipeline": {"jpeg_quality": 55}}
    sensor.config_reset("pipeline.jpeg_quality")
    assert tomllib.loads(path.read_text()) == {"device": {"name": "kitchen"}}


def test_firmware_warnings_reach_the_host_log(board: Board, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="seedcam.sensor")
    logging.getLogger("seedcam_firmware.pipeline").warning("camera: %s", "lens cap on")
    logging.getLogger("seedcam_firmware.pipeline").info("not forwarded: below WARNING")

    def forwarded() -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.name == "seedcam.sensor" and "[device" in r.getMessage()]

    wait_until(lambda: any("lens cap on" in r.getMessage() for r in forwarded()), what="the forwarded warning")
    board.sensor.ping()  # anything sent after the INFO record has arrived too
    records = forwarded()
    assert [r.levelno for r in records] == [logging.WARNING]
    assert "seedcam_firmware.pipeline" in records[0].getMessage()


def test_select_tasks(board: Board) -> None:
    sensor = board.sensor
    assert sensor is not None
    assert sensor.select_tasks([]).enabled == ()
    with pytest.raises(RpcError) as err:
        sensor.select_tasks(["nope"])
    assert "nope" in str(err.value)
    assert sensor.info().tasks_enabled == ()
    assert sensor.recv(timeout=WAIT_S) is not None  # still streaming


def test_health_arrives_every_interval_and_counts_frames(board: Board) -> None:
    sensor = board.sensor
    assert sensor is not None
    interval = board.daemon.config.link.health_interval_s
    arrivals: list[tuple[float, Health]] = []
    two = threading.Event()

    def on_health(health: Health) -> None:
        arrivals.append((time.monotonic(), health))
        if len(arrivals) >= 2:
            two.set()

    sensor.on_health(on_health)
    assert two.wait(3 * interval + WAIT_S), f"only {len(arrivals)} health reports"
    (t0, first), (t1, second) = arrivals[:2]
    assert t1 - t0 <= 1.5 * interval
    healths = [first, second]
    assert all(h.boot_id == board.daemon.boot_id for h in healths)
    processed = [h.frames_processed for h in healths]
    assert processed == sorted(processed) and processed[-1] > processed[0]
    assert healths[-1].frames_captured >= processed[-1]
    assert healths[-1].active_models == ()


def test_stop_is_clean_and_idempotent(make_board: Callable[..., Board]) -> None:
    before = set(threading.enumerate())
    board = make_board()
    sensor = board.connect()
    assert sensor.recv(timeout=WAIT_S) is not None
    start = time.monotonic()
    board.daemon.stop()
    board.daemon.stop()
    assert time.monotonic() - start < WAIT_S
    assert board.daemon.wait(0)
    leftover = [
        t.name
        for t in threading.enumerate()
        if t not in before and t.name.startswith("seedcam-") and "reader" not in t.name
    ]
    assert leftover == []


def test_undecodable_request_is_answered_and_the_link_keeps_serving(make_board: Callable[..., Board]) -> None:
    board = make_board()
    transport = open_transport(board.url)  # the host end, raw
    encoder, decoder = Encoder(), Decoder()
    try:
        transport.write(encoder.encode(Channel.CONTROL, b"\xff\xff\xff", seq=1), WAIT_S)  # CRC-valid garbage
        ping = pb.Request(ping=pb.PingRequest(payload=b"still there?"))
        transport.write(encoder.encode(Channel.CONTROL, ping.SerializeToString(), seq=2), WAIT_S)
        responses: dict[int, pb.Response] = {}
        deadline = time.monotonic() + WAIT_S
        while 2 not in responses and time.monotonic() < deadline:
            for frame in decoder.feed(transport.read(65536, 0.1)):
                if frame.channel == Channel.CONTROL and frame.flags & Flag.RESPONSE:
                    responses[frame.seq] = codec.parse(pb.Response, frame.payload)
    finally:
        transport.close()
    assert responses.get(1) is not None and responses[1].status == pb.STATUS_INVALID_ARGUMENT
    assert 2 in responses, "the link stopped answering after an undecodable request"
    assert responses[2].pong.payload == b"still there?"
    assert board.daemon.health().undecodable_requests == 1


def test_lane_task_results_carry_lane_state_and_model_id(make_board: Callable[..., Board]) -> None:
    board = make_board(
        tasks={"enabled": ["lane"]}, camera={"width": 320, "height": 240, "fps": 15.0}, pipeline={"timings": "full"}
    )
    sensor = board.connect()
    active = [m for m in sensor.models() if m.active]
    assert [m.task for m in active] == ["lane"]
    result = sensor.recv(timeout=WAIT_S * 2)
    assert result is not None
    assert isinstance(result.lane, LaneState)
    assert result.model_ids == (active[0].id,)
    assert any(key.startswith("lane:") for key in result.timings_us)  # full timings: every stage by name
    assert "capture_to_send" in result.timings_us


# ---- the process ------------------------------------------------------------------------


@pytest.mark.e2e
def test_sigterm_exits_cleanly_and_removes_the_pty_link(firmware_factory, tmp_path: Path) -> None:  # noqa: ANN001
    fw = firmware_factory("--tasks", "", "--fps", "10")
    link = Path(fw.link)
    assert link.is_symlink()
    start = time.monotonic()
    assert fw.terminate(timeout=10.0) == 0
    assert time.monotonic() - start < 10.0
    assert not link.exists() and not link.is_symlink()


def test_check_config_prints_resolved_toml(tmp_path: Path) -> None:
    path = tmp_path / "fw.toml"
    path.write_text("[camera]\nfps = 12\n\n[tasks]\nenabled = []\n")
    done = run_firmware_cli("check-config", str(path), timeout=30)
    assert done.returncode == 0, done.stderr
    resolved = tomllib.loads(done.stdout)
    assert resolved["camera"]["fps"] == 12.0
    assert resolved["tasks"]["enabled"] == []
    assert resolved["pipeline"]["jpeg_quality"] == 80


def test_check_config_rejects_a_bad_file_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "fw.toml"
    path.write_text("[camera]\nfsp = 12\n")
    done = run_firmware_cli("check-config", str(path), timeout=30)
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "camera.fsp" in lines[0] and "fw.toml" in lines[0]

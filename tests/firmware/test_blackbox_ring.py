"""The firmware's black box on its own: its bounds, its triggers, its files (seedcam_firmware.blackbox)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from seedcam._proto import seedcam_pb2 as pb
from seedcam.types import Box, Detection, DeviceInfo, Health, LaneState, LaneStatus, LinkStats, Result
from seedcam_firmware.blackbox import SUFFIX, BlackBox
from seedcam_firmware.config_sections import BlackboxConfig
from seedcam_firmware.rpc import RequestFailed

INFO = DeviceInfo(protocol_version=2, firmware_version="1.0", boot_id="b00t", serial_number="SN1", max_frame_size=65536)


def lane(status: LaneStatus) -> LaneState:
    return LaneState(status, 0.01, 0.02, 0.1, 0.9, 0.9, 0.5, 0.45)


def result(frame_id: int, status: LaneStatus = LaneStatus.OK, **fields: object) -> Result:
    return Result(frame_id, 1_000_000 + frame_id * 100_000, lane=lane(status), **fields)  # 10 fps


class Box_:
    def __init__(self, tmp_path: Path | None, **settings: object) -> None:
        self.settings = BlackboxConfig(dir=str(tmp_path or ""), **settings)  # type: ignore[arg-type]
        self.box = BlackBox(lambda: self.settings, lambda: INFO, "b00t", max_piece=1000)
        self.box.start()

    def names(self) -> list[str]:
        return [f.name for f in self.box.list().files]

    def pulled(self, name: str) -> pb.BlackBoxFile:
        data, offset = b"", 0
        while True:
            piece = self.box.read(name, offset, 0)
            assert len(piece.data) <= 1000
            data += piece.data
            offset += len(piece.data)
            if offset >= piece.total_size:
                return pb.BlackBoxFile.FromString(data)


@pytest.fixture
def boxes() -> Iterator[list[Box_]]:
    made: list[Box_] = []
    yield made
    for b in made:
        b.box.close()


def test_it_keeps_the_last_seconds_and_the_lane_lost_result_is_the_last_entry(
    boxes: list[Box_], tmp_path: Path
) -> None:
    b = Box_(tmp_path, seconds=2.0)
    boxes.append(b)
    for i in range(50):
        b.box.add_result(None, result(i))
    b.box.add_result(None, result(50, LaneStatus.LOST))
    b.box.add_result(None, result(51, LaneStatus.LOST))  # still lost: no second trigger
    b.box.close()
    (name,) = b.names()
    assert name == "bb-00001-lane_lost" and (tmp_path / f"{name}{SUFFIX}").is_file()
    frozen = b.pulled(name)
    frames = [e.result.frame_id for e in frozen.entries]
    assert frames == list(range(30, 51))  # 2 s at 10 fps, and the trigger itself
    assert frozen.device.boot_id == "b00t" and frozen.info.trigger == "lane_lost"
    assert frozen.info.results == 21 and frozen.info.trigger_timestamp_us == frozen.entries[-1].timestamp_us


def test_count_and_byte_bounds_hold_the_ring_small(boxes: list[Box_]) -> None:
    b = Box_(None, seconds=600.0, max_entries=100, max_bytes=65_536)
    boxes.append(b)
    for i in range(300):
        b.box.add_result(None, result(i))
    assert b.pulled(b.box.trigger("count").name).info.entries == 100
    big = pb.LogRecord(level=30, logger="x", message="y" * 900)
    for i in range(300):
        b.box.add_log(pb.LogRecord(level=30, logger="x", message=big.message, timestamp_us=10**9 + i))
    frozen = b.pulled(b.box.trigger("bytes").name)
    assert sum(e.ByteSize() for e in frozen.entries) <= 65_536 and frozen.entries[-1].log.timestamp_us == 10**9 + 299


def test_label_crc_burst_and_cooldown_triggers(boxes: list[Box_]) -> None:
    b = Box_(None, label="stop", label_score=0.7, crc_burst=10, cooldown_s=60.0)
    boxes.append(b)
    stop = Detection(0, "stop", 0.9, Box(0.1, 0.1, 0.2, 0.2))
    b.box.add_result(None, result(1, detections=(dataclasses.replace(stop, score=0.5),)))  # below the score
    b.box.add_result(None, result(2, detections=(stop,)))
    b.box.add_result(None, result(3, detections=(stop,)))  # within the cooldown
    health = Health("b00t", 1.0, 10.0, 1, 1, 0, LinkStats(crc_errors=2), timestamp_us=2_000_000)
    b.box.add_health(health)
    b.box.add_health(dataclasses.replace(health, link=LinkStats(crc_errors=12), timestamp_us=3_000_000))
    b.box.close()
    files = b.box.list().files
    assert [(f.trigger, f.reason) for f in files] == [
        ("label", "stop scored 0.90 at frame 2"),
        ("crc_burst", "10 CRC errors within 5 s"),
    ]


def test_the_newest_files_are_kept_and_a_restart_finds_them(boxes: list[Box_], tmp_path: Path) -> None:
    b = Box_(tmp_path, max_files=3)
    boxes.append(b)
    b.box.add_result(None, result(1))
    names = [b.box.trigger(f"#{i}").name for i in range(5)]
    assert b.names() == names[2:]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{n}{SUFFIX}" for n in names[2:]]
    b.box.close()
    (tmp_path / ".tmp-bb-00009-host.seedbb.x").write_bytes(b"torn")  # a write cut by a power cut
    (tmp_path / f"bb-00008-host{SUFFIX}").write_bytes(b"\xff garbage")
    again = Box_(tmp_path, max_files=3)
    boxes.append(again)
    assert again.names() == names[2:]  # the garbage skipped, the torn write removed
    assert not (tmp_path / ".tmp-bb-00009-host.seedbb.x").exists()
    again.box.add_result(None, result(2))
    assert again.box.trigger("").name == "bb-00009-host"  # numbering goes on past every name seen


def test_bad_requests_are_typed_refusals(boxes: list[Box_]) -> None:
    b = Box_(None, seconds=0.0)
    boxes.append(b)
    with pytest.raises(RequestFailed) as off:
        b.box.trigger("x")
    assert off.value.status == pb.STATUS_FAILED_PRECONDITION
    b.settings = dataclasses.replace(b.settings, seconds=5.0)  # live
    b.box.add_result(None, result(1))
    name = b.box.trigger("x").name
    with pytest.raises(RequestFailed) as missing:
        b.box.read("bb-1-nope", 0, 0)
    assert missing.value.status == pb.STATUS_NOT_FOUND and name in str(missing.value)
    with pytest.raises(RequestFailed) as past:
        b.box.read(name, 10**9, 0)
    assert past.value.status == pb.STATUS_INVALID_ARGUMENT

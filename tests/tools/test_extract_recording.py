"""``seedcam-tools extract run.mcap --frames DIR``: preview frames and their detections as a YOLO folder."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from seedcam._proto import seedcam_pb2 as pb
from seedcam.protocol import codec
from seedcam.recording import RecordingWriter, topics
from seedcam.types import Box, Detection, LaneState, LaneStatus, Result
from seedcam_tools import cli
from seedcam_tools.datasets import read_detection_folder

W, H = 160, 120


def _jpeg(shade: int) -> bytes:
    image = np.full((H, W, 3), shade, np.uint8)
    ok, data = cv2.imencode(".jpg", image)
    assert ok
    return data.tobytes()


def _record(path: Path, *, detections: bool) -> Path:
    with RecordingWriter(path, fsync=False) as writer:
        writer.write(topics.DEVICE_INFO, pb.DeviceInfo(boot_id="b"), 1, 0)
        for i in range(6):
            dets = (Detection(3, "stop", 0.8, Box(0.25, 0.5, 0.5, 1.0)),) if detections and i % 2 else ()
            if detections and i == 5:
                dets += (Detection(7, "plate", 0.6, Box(0.0, 0.0, 0.1, 0.2)),)
            lane = LaneState(LaneStatus.OK, 0.01, 0.0, 0.0, 1.0, 1.0, 1.0, 0.45)
            result = Result(frame_id=40 + i, capture_timestamp_us=1000 * i, lane=lane, detections=dets)
            writer.write(topics.RESULT, codec.result_to_pb(result), 10 + 2 * i, 0)
            preview = pb.PreviewChunk(frame_id=40 + i, width=W, height=H, data=_jpeg(20 * i))
            preview.total_size = len(preview.data)
            writer.write(topics.PREVIEW, preview, 11 + 2 * i, 0)
        orphan = pb.PreviewChunk(frame_id=99, width=W, height=H, data=_jpeg(5))  # its result is not recorded
        writer.write(topics.PREVIEW, orphan, 100, 0)
    return path


def test_extract_writes_a_yolo_folder_that_the_data_reader_takes_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = _record(tmp_path / "run.mcap", detections=True)
    out = tmp_path / "frames"
    assert cli.main(["extract", str(recording), "--frames", str(out)]) == 0
    said = capsys.readouterr().out
    assert "6 frames, 3 with detections (4 boxes: stop, plate)" in said and "1 previews without" in said
    folder = read_detection_folder(out)
    assert folder.names == ("stop", "plate")
    items = {item.image.stem: item for item in folder.items}
    assert sorted(items) == [f"frame_{40 + i:08d}" for i in range(6)]
    assert (items["frame_00000040"].width, items["frame_00000040"].height) == (W, H)
    assert items["frame_00000040"].objects == ()  # a frame without detections: an empty label file
    (stop,) = items["frame_00000041"].objects
    assert stop.label == "stop" and np.allclose(stop.box, (40, 60, 80, 120), atol=0.5)
    assert [o.label for o in items["frame_00000045"].objects] == ["stop", "plate"]


def test_a_lane_only_recording_gives_its_frames_as_recorded_and_none_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = _record(tmp_path / "lane.mcap", detections=False)
    out = tmp_path / "frames"
    assert cli.main(["extract", str(recording), "--frames", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [f"frame_{40 + i:08d}.jpg" for i in range(6)]
    assert (out / "frame_00000042.jpg").read_bytes() == _jpeg(40)
    bare = tmp_path / "bare.mcap"
    with RecordingWriter(bare, fsync=False) as writer:
        writer.write(topics.DEVICE_INFO, pb.DeviceInfo(boot_id="b"), 1, 0)
    capsys.readouterr()
    assert cli.main(["extract", str(bare), "--frames", str(tmp_path / "x")]) == 1
    assert "holds no preview frames" in capsys.readouterr().err

"""A replay sends its recorded previews as a device does (so ``seedcam view`` on a replay shows images)."""

from __future__ import annotations

import threading
from pathlib import Path

import cv2
import numpy as np
from helpers import wait_until
from recording_fixtures import GAP_S, device_info, wire_results

import seedcam
from seedcam.protocol import codec
from seedcam.protocol.framing import Channel
from seedcam.recording import RecordingWriter, topics
from seedcam.recording.foxglove import preview_chunk
from seedcam.types import PreviewFrame

_EPOCH_NS = 1_700_000_000 * 10**9
COUNT = 60
EVERY = 5  # a preview every 5th result


def _jpeg(frame_id: int, width: int) -> bytes:
    rng = np.random.default_rng(frame_id)  # noise: a JPEG too big for one link frame when wide
    image = rng.integers(0, 255, (width * 3 // 4, width, 3), dtype=np.uint8)
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 90])
    assert ok
    return data.tobytes()


def _recording(path: Path, *, width: int = 160, max_frame_size: int = 65536) -> dict[int, bytes]:
    info = device_info()
    info.max_frame_size = max_frame_size
    previews: dict[int, bytes] = {}
    with RecordingWriter(path) as writer:
        writer.write(topics.DEVICE_INFO, info, _EPOCH_NS, 0)
        for i, result in enumerate(wire_results(COUNT)):
            at = _EPOCH_NS + round((i + 1) * GAP_S * 1e9)
            writer.write(topics.RESULT, codec.result_to_pb(result), at, result.capture_timestamp_us * 1000)
            if i % EVERY == 0:
                jpeg = previews[result.frame_id] = _jpeg(result.frame_id, width)
                frame = PreviewFrame(result.frame_id, result.capture_timestamp_us, jpeg, width, width * 3 // 4)
                writer.write(topics.PREVIEW, preview_chunk(frame), at + 1000, result.capture_timestamp_us * 1000)
    return previews


def test_previews_go_out_with_their_results_frame_ids_only_once_the_host_asks(tmp_path: Path) -> None:
    recorded = _recording(tmp_path / "previews.mcap")
    seen: list[PreviewFrame] = []
    results: list[int] = []
    with seedcam.open(f"replay://{tmp_path / 'previews.mcap'}", timeout=5) as sensor:
        sensor.on_preview(seen.append)
        first = sensor.recv(timeout=5)
        assert first is not None and first.frame_id == 100 and not seen  # no preview before it is asked for
        settings = sensor.start_preview(30.0)
        assert settings.fps > 0 and (settings.width, settings.height) == (160, 120) and "recording" in settings.message
        ended = threading.Event()
        sensor.session.subscribe(Channel.LOG, lambda _: ended.set())
        while not ended.is_set() and (result := sensor.recv(timeout=2)) is not None:
            results.append(result.frame_id)
        wait_until(ended.is_set, 5, "the end of the recording")
    assert seen, "no preview replayed"
    for frame in seen:
        assert frame.jpeg == recorded[frame.frame_id] and (frame.width, frame.height) == (160, 120)
    ids = [f.frame_id for f in seen]
    assert ids == sorted(ids) and set(ids) <= set(results) | {first.frame_id}
    assert ids[-1] == max(recorded)  # every preview after the request went out
    assert len(ids) >= len([f for f in recorded if f > results[0]]) - 1


def test_a_preview_larger_than_a_link_frame_goes_in_pieces_and_stop_ends_them(tmp_path: Path) -> None:
    recorded = _recording(tmp_path / "big.mcap", width=640, max_frame_size=4096)
    assert min(map(len, recorded.values())) > 4096
    seen: list[PreviewFrame] = []
    with seedcam.open(f"replay://{tmp_path / 'big.mcap'}?speed=0.5", timeout=5) as sensor:
        sensor.on_preview(seen.append)
        sensor.start_preview(30.0, max_width=640)
        wait_until(lambda: len(seen) >= 2, 10, "two previews in pieces")
        sensor.stop_preview()
        stopped_at = len(seen)
        last = sensor.recv(timeout=5)
        while (result := sensor.recv(timeout=1)) is not None:
            last = result
        assert last is not None and last.frame_id == 100 + COUNT - 1
    assert all(f.jpeg == recorded[f.frame_id] for f in seen)
    assert len(seen) <= stopped_at + 1 and sensor.preview.counts.incomplete == 0

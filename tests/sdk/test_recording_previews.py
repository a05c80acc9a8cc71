"""Previews in a recording: the seedcam topic, foxglove.CompressedImage and ImageAnnotations with the result's boxes."""

from __future__ import annotations

from pathlib import Path

from helpers import wait_until
from preview_device import SQUARE, PreviewDevice

from seedcam._proto import seedcam_pb2 as pb
from seedcam.recording import Recorder, RecordingReader, topics


def test_recorded_previews_are_foxglove_images_with_the_boxes_of_their_results(tmp_path: Path) -> None:
    device = PreviewDevice()
    path = tmp_path / "previews.mcap"
    try:
        sensor = device.connect()
        with Recorder(sensor, path) as recorder:
            settings = sensor.start_preview(10.0, max_width=320)
            assert settings.fps > 0
            device.start_streaming(0.02)
            wait_until(lambda: recorder.stats.previews >= 5, 10, "five recorded previews")
        assert recorder.stats.dropped == 0
    finally:
        device.close()
    reader = RecordingReader(path)
    messages = list(reader.messages())
    results = {m.message.frame_id for m in messages if isinstance(m.message, pb.Result)}
    chunks = [m.message for m in messages if m.topic == topics.PREVIEW]
    images = [m for m in messages if m.topic == topics.PREVIEW_IMAGE]
    boxes = [m for m in messages if m.topic == topics.PREVIEW_BOXES]
    assert len(chunks) >= 5 and len(images) == len(chunks)
    assert {m.schema for m in images} == {"foxglove.CompressedImage"}
    assert {m.schema for m in boxes} == {"foxglove.ImageAnnotations"}
    for chunk, image in zip(chunks, images, strict=True):
        assert isinstance(chunk, pb.PreviewChunk) and chunk.frame_id in results
        assert chunk.data.startswith(b"\xff\xd8") and chunk.total_size == len(chunk.data) and chunk.width == 320
        assert image.message.format == "jpeg" and image.message.data == chunk.data  # type: ignore[union-attr]
        stamp = image.message.timestamp  # type: ignore[union-attr]
        assert stamp.seconds * 1_000_000 + stamp.nanos // 1000 == chunk.capture_timestamp_us
    assert len(boxes) >= len(chunks) - 1  # the last preview's result may come after the recording stopped
    first = boxes[0].message
    (square,) = first.points  # type: ignore[union-attr]
    xs = [p.x for p in square.points]
    ys = [p.y for p in square.points]
    px = 0.5  # the wire rounds boxes to 1/1023 of the frame
    assert abs(min(xs) - SQUARE.x_min * 320) < px and abs(max(xs) - SQUARE.x_max * 320) < px
    assert abs(min(ys) - SQUARE.y_min * 240) < px and abs(max(ys) - SQUARE.y_max * 240) < px
    assert first.texts[0].text.startswith("stop 0.9")  # type: ignore[union-attr]
    assert first.points[0].timestamp == first.texts[0].timestamp  # type: ignore[union-attr]

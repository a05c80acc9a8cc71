"""The preview stream through the SDK: the firmware's PreviewStream, a real link, seedcam.Sensor."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import cv2
import numpy as np
import pytest
from helpers import wait_until
from preview_device import SQUARE, PreviewDevice

import seedcam
from seedcam._preview import PreviewClient
from seedcam._proto import seedcam_pb2 as pb
from seedcam.types import PreviewFrame
from seedcam_firmware.jpeg import encode_jpeg
from seedcam_firmware.rpc import Dispatcher


@pytest.fixture
def make_preview_device() -> Iterator[Callable[..., PreviewDevice]]:
    made: list[PreviewDevice] = []

    def factory(**kw: object) -> PreviewDevice:
        dev = PreviewDevice(**kw)  # type: ignore[arg-type]
        made.append(dev)
        return dev

    yield factory
    for dev in made:
        dev.close()


def _collect(sensor: seedcam.Sensor) -> list[PreviewFrame]:
    frames: list[PreviewFrame] = []
    sensor.on_preview(frames.append)
    return frames


def test_a_preview_jpeg_is_the_frame_of_the_result_with_its_id(make_preview_device) -> None:  # noqa: ANN001
    dev = make_preview_device()
    sensor = dev.connect()
    results: dict[int, seedcam.Result] = {}
    sensor.on_result(lambda r: results.__setitem__(r.frame_id, r))
    frames = _collect(sensor)
    settings = sensor.start_preview(30, quality=80, max_width=320)
    assert (settings.fps, settings.quality, settings.max_width, settings.line_limited) == (30, 80, 320, False)
    dev.start_streaming()
    wait_until(lambda: len(frames) >= 3, what="three preview frames")
    frame = frames[0]
    assert (frame.width, frame.height) == (320, 240)  # scaled from 640x480, aspect kept
    image = cv2.imdecode(np.frombuffer(frame.jpeg, np.uint8), cv2.IMREAD_GRAYSCALE)
    assert image.shape == (240, 320)
    x0, y0, x1, y1 = SQUARE.to_pixels(320, 240)
    assert image[(y0 + y1) // 2, (x0 + x1) // 2] > 230 and image[5, 5] < 120  # the square where its box says
    wait_until(lambda: all(f.frame_id in results for f in frames[:3]), what="the results of the preview frames")
    for f in frames[:3]:
        assert abs(f.timestamp_us - results[f.frame_id].capture_timestamp_us) < 100  # compact: 100 us units
    assert sensor.preview.counts.incomplete == 0


def test_on_a_line_with_a_rate_a_jpeg_travels_in_pieces_and_arrives_whole(make_preview_device) -> None:  # noqa: ANN001
    dev = make_preview_device(line_rate_bps=115_200)  # pieces of 345 B; the pair link itself is fast
    sensor = dev.connect()
    frames = _collect(sensor)
    sensor.start_preview(5, quality=95, max_width=640)
    dev.start_streaming()
    wait_until(lambda: frames, what="a preview frame")
    expected, width, height = encode_jpeg(_frame_image(frames[0].frame_id), 95, 640)
    assert len(expected) > 3 * 345, "the JPEG should need several pieces"
    assert frames[0].jpeg == expected and (width, height) == (640, 480)


def _frame_image(frame_id: int) -> np.ndarray:
    from preview_device import draw_frame

    return draw_frame(frame_id).image


def test_the_answer_says_when_the_line_holds_the_stream_below_the_rate_asked(make_preview_device) -> None:  # noqa: ANN001
    dev = make_preview_device(line_rate_bps=115_200)
    dev.step()  # a frame to size the estimate with
    sensor = dev.connect()
    settings = sensor.start_preview(30, quality=90, max_width=640)
    assert settings.line_limited
    assert 0 < settings.fps < 30
    assert "115200-baud line" in settings.message and "asked 30" in settings.message
    assert (settings.width, settings.height) == (640, 480)


def test_the_lease_is_renewed_while_the_sensor_is_open_and_lapses_after(make_preview_device) -> None:  # noqa: ANN001
    dev = make_preview_device()
    sensor = dev.connect()
    sensor.preview.lease_s = 0.6
    sensor.start_preview(10)
    wait_until(lambda: dev.stream.requests >= 3, timeout=3.0, what="two renewals of the lease")
    assert dev.stream.active
    sensor.close()
    wait_until(lambda: not dev.stream.active, timeout=3.0, what="the lease to lapse once the host is gone")


def test_stop_preview_stops_the_stream_at_once(make_preview_device) -> None:  # noqa: ANN001
    dev = make_preview_device()
    sensor = dev.connect()
    sensor.start_preview(10)
    assert dev.stream.active
    sensor.stop_preview()
    assert not dev.stream.active and not sensor.preview.running


@pytest.mark.parametrize(
    ("args", "match"),
    [((0,), "fps"), ((61,), "fps"), ((float("nan"),), "fps"), ((5, 0), "quality"), ((5, 70, 8), "max_width")],
)
def test_bad_preview_settings_are_refused_before_they_go_out(make_preview_device, args, match) -> None:  # noqa: ANN001
    sensor = make_preview_device().connect()
    with pytest.raises(ValueError, match=match):
        sensor.start_preview(*args)
    assert not sensor.preview.running


def test_the_device_refuses_out_of_range_values_with_invalid_argument(make_preview_device) -> None:  # noqa: ANN001
    dev = make_preview_device()
    dispatch = Dispatcher(dev.services, preview=dev.stream.request)
    for request in (pb.PreviewRequest(fps=100), pb.PreviewRequest(fps=5, quality=101), pb.PreviewRequest(lease_s=-1)):
        answer = dispatch(pb.Request(preview=request))
        assert answer.status == pb.STATUS_INVALID_ARGUMENT and "preview" in answer.message


def test_a_firmware_without_a_preview_answers_unsupported(make_preview_device) -> None:  # noqa: ANN001
    sensor = make_preview_device(preview=False).connect()
    with pytest.raises(seedcam.RpcError, match="no preview stream") as caught:
        sensor.start_preview(5)
    assert caught.value.status == "UNSUPPORTED"
    assert not sensor.preview.running


def test_a_jpeg_with_a_missing_piece_is_counted_and_not_delivered() -> None:
    client = PreviewClient(lambda request, timeout: pb.Response())
    got: list[PreviewFrame] = []
    client.subscribe(got.append)

    def piece(frame_id: int, offset: int, data: bytes, total: int) -> pb.PreviewChunk:
        return pb.PreviewChunk(frame_id=frame_id, offset=offset, total_size=total, data=data, width=4, height=3)

    client.chunk(piece(1, 0, b"ab", 6))
    client.chunk(piece(1, 4, b"ef", 6))  # the piece at 2 was lost
    client.chunk(piece(2, 0, b"abc", 6))
    client.chunk(piece(2, 3, b"def", 6))
    client.chunk(piece(3, 0, b"xy", 4))
    client.chunk(piece(4, 0, b"zzzz", 4))  # frame 3 never finished
    assert [(f.frame_id, f.jpeg) for f in got] == [(2, b"abcdef"), (4, b"zzzz")]
    assert client.counts.incomplete == 2 and client.counts.frames == 2

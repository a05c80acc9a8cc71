"""A snapshot on a slow line travels in pieces the host asks for in turn; results keep flowing between them."""

from __future__ import annotations

# ruff: noqa: F811  (tests take the fixtures imported from fake_device as parameters)
from collections.abc import Callable
from dataclasses import replace

import pytest
from fake_device import FAKE_JPEG, WAIT_S, FakeDevice, device, make_device, wait_until  # noqa: F401

import seedcam
from seedcam._proto import seedcam_pb2 as pb
from seedcam.protocol import codec
from seedcam_firmware.rpc import Dispatcher


def test_a_snapshot_in_pieces_arrives_whole(make_device: Callable[..., FakeDevice]) -> None:
    dev = make_device(snapshot_chunk=100, reconnect=False)
    assert dev.sensor is not None
    snapshot = dev.sensor.snapshot(timeout=WAIT_S)
    assert snapshot.jpeg == FAKE_JPEG
    assert dev.services.calls.count("snapshot") == 1  # one JPEG, sent in pieces, not one per piece
    assert len(FAKE_JPEG) > 100 * 5


def test_results_go_out_between_the_pieces(make_device: Callable[..., FakeDevice]) -> None:
    dev = make_device(snapshot_chunk=64, reconnect=False)
    sensor = dev.sensor
    assert sensor is not None
    real = Dispatcher._on_snapshot
    continuations: list[int] = []

    def result_first(self: Dispatcher, request: pb.SnapshotRequest) -> pb.Response:
        if request.offset:  # between two pieces the line is free: the pipeline's result goes out first
            continuations.append(request.offset)
            dev.send_result()
        return real(self, request)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Dispatcher, "_on_snapshot", result_first)
        before = sensor.stats.results_received
        assert sensor.snapshot(timeout=WAIT_S).jpeg == FAKE_JPEG
        during = sensor.stats.results_received - before  # counted on arrival, before the piece after them
    assert len(continuations) >= 5
    assert during == len(continuations)  # every result in between reached the host while the call went on


def test_the_dispatcher_holds_one_snapshot_for_its_continuations() -> None:
    dev = FakeDevice()
    try:
        dispatch = Dispatcher(dev.services, snapshot_chunk=300)
        first = dispatch(pb.Request(snapshot=pb.SnapshotRequest())).snapshot
        assert (first.offset, first.total_size, len(first.jpeg)) == (0, len(FAKE_JPEG), 300)
        request = pb.SnapshotRequest(frame_id=first.frame_id, offset=300, max_bytes=50)
        piece = dispatch(pb.Request(snapshot=request)).snapshot
        assert piece.jpeg == FAKE_JPEG[300:350] and piece.offset == 300
        past = dispatch(pb.Request(snapshot=pb.SnapshotRequest(frame_id=first.frame_id, offset=10**6)))
        assert past.status == pb.STATUS_INVALID_ARGUMENT
        stale = dispatch(pb.Request(snapshot=pb.SnapshotRequest(frame_id=first.frame_id + 1, offset=300)))
        assert stale.status == pb.STATUS_FAILED_PRECONDITION and "take a new one" in stale.message
        whole = Dispatcher(dev.services)(pb.Request(snapshot=pb.SnapshotRequest())).snapshot
        assert codec.snapshot_from_pb(whole).jpeg == FAKE_JPEG  # no chunk limit: as before
    finally:
        dev.close()


def test_a_device_that_sends_a_wrong_piece_is_a_protocol_error(make_device: Callable[..., FakeDevice]) -> None:
    dev = make_device(snapshot_chunk=100, reconnect=False)
    assert dev.sensor is not None
    real = Dispatcher._on_snapshot

    def skipping(self: Dispatcher, request: pb.SnapshotRequest) -> pb.Response:
        response = real(self, request)
        if request.offset:
            response.snapshot.offset += 1  # a piece that does not continue the JPEG
        return response

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Dispatcher, "_on_snapshot", skipping)
        with pytest.raises(seedcam.ProtocolError, match="snapshot piece at offset"):
            dev.sensor.snapshot(timeout=WAIT_S)


def test_a_snapshot_of_frame_0_arrives_whole_in_pieces(make_device: Callable[..., FakeDevice]) -> None:
    dev = make_device(snapshot_chunk=100, reconnect=False)
    assert dev.sensor is not None
    real = type(dev.services).snapshot

    def first_frame(services: object, quality: int) -> seedcam.Snapshot:
        return replace(real(services, quality), frame_id=0)  # a camera's first frame is frame 0

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(type(dev.services), "snapshot", first_frame)
        snapshot = dev.sensor.snapshot(timeout=WAIT_S)
    assert (snapshot.frame_id, snapshot.jpeg) == (0, FAKE_JPEG)
    assert dev.services.calls.count("snapshot") == 1

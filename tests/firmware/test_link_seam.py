"""The typed link seam: one LinkServer, a personality per wire protocol, transports found by entry point."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
import uuid
from dataclasses import replace

import pytest

from seedcam._proto import seedcam_pb2 as pb
from seedcam.protocol import codec
from seedcam.protocol.compact import CompactDecoder
from seedcam.protocol.framing import Channel, Decoder, Encoder, Flag, Frame
from seedcam.transport import Transport, open_transport
from seedcam.types import DeviceInfo, Health, LaneState, LaneStatus, LinkStats, Result
from seedcam_firmware.link_native import NativePersonality
from seedcam_firmware.link_personality import FrameDecoder, FrameEncoder, Outgoing, Personality, Reply
from seedcam_firmware.link_server import LinkServer
from seedcam_firmware.visionseed._proto import visionseed_pb2 as vs
from seedcam_firmware.visionseed.datav2 import decode_datav2
from seedcam_firmware.visionseed.framing import VisionSeedDecoder
from seedcam_firmware.visionseed.link import RpcOutcome, VisionSeedPersonality
from seedcam_firmware.visionseed.results import MODEL_LANE

WAIT_S = 5.0
RESULT = Result(
    frame_id=7,
    capture_timestamp_us=1_000,
    timings_us={"task:lane": 900},
    model_ids=("lane-v2",),
    lane=LaneState(LaneStatus.OK, 0.05, -0.06, 0.2, 0.9, 0.8, 0.7, 0.45),
    frame_width=320,
    frame_height=240,
)
HEALTH = Health("boot", 1.0, 30.0, 10, 10, 0, LinkStats())
INFO = DeviceInfo(1, "0.1.0", "boot", "SN1", 4096)


def _url() -> str:
    return f"pair://seam-{uuid.uuid4().hex[:12]}"


def _read_until(host: Transport, feed, count: int) -> list:  # noqa: ANN001
    got: list = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < count:
        assert time.monotonic() < deadline, f"got {len(got)} of {count} frames"
        got.extend(feed(host.read(65536, 0.05)))
    return got


class _Recorder(Personality):
    """A toy protocol: each typed value goes out as its repr on the LOG channel; a frame is echoed."""

    def __init__(self) -> None:
        self.sent: list[object] = []
        self.started = self.closed = False

    def encoder(self, max_frame_size: int) -> FrameEncoder:
        return Encoder(max_frame_size=max_frame_size)

    def decoder(self, max_frame_size: int) -> FrameDecoder:
        return Decoder(max_frame_size)

    def _out(self, value: object) -> Outgoing:
        self.sent.append(value)
        return Outgoing(Channel.LOG, type(value).__name__.encode())

    def result(self, result: Result) -> tuple[Outgoing, ...]:
        return (self._out(result),)

    def health(self, health: Health) -> Outgoing:
        return self._out(health)

    def hello(self, info: DeviceInfo) -> Outgoing:
        return self._out(info)

    def handle(self, frame: Frame, reply: Reply) -> None:
        reply(frame.channel, frame.payload[::-1], seq=frame.seq, flags=Flag.RESPONSE)

    def start(self) -> None:
        self.started = True

    def close(self) -> None:
        self.closed = True


def test_any_personality_plugs_into_the_one_link_server() -> None:
    url, personality = _url(), _Recorder()
    server = LinkServer(url, personality)
    host = open_transport(url)
    try:
        server.start()
        assert personality.started and server.personality is personality
        assert server.send_result(RESULT) and server.send_health(HEALTH) and server.send_hello(INFO)
        assert not server.send_log(pb.LogRecord(message="x"))  # no such message in this protocol: not sent
        assert server.frames_dropped == 0
        decoder = Decoder()
        frames = _read_until(host, decoder.feed, 3)
        assert [f.payload for f in frames] == [b"Result", b"Health", b"DeviceInfo"]
        assert personality.sent == [RESULT, HEALTH, INFO]  # the typed values themselves
        host.write(Encoder().encode(Channel.CONTROL, b"abc", seq=9), WAIT_S)
        (echo,) = _read_until(host, decoder.feed, 1)
        assert (echo.payload, echo.seq, echo.flags & Flag.RESPONSE) == (b"cba", 9, Flag.RESPONSE)
    finally:
        server.close()
        host.close()
    assert personality.closed


def test_a_request_handler_is_short_for_the_native_personality() -> None:
    server = LinkServer(_url(), lambda request: pb.Response())
    try:
        assert isinstance(server.personality, NativePersonality)
    finally:
        server.close()


def test_the_native_personality_encodes_with_the_sdk_codec_and_stamps_the_send_time() -> None:
    personality = NativePersonality(lambda request: pb.Response())
    before = time.monotonic_ns() // 1000
    captured = replace(RESULT, capture_timestamp_us=before - 5000)  # 5 ms ago
    announcement, outgoing = personality.result(captured)  # the first result needs a dictionary first
    assert (announcement.channel, outgoing.channel) == (Channel.STATUS, Channel.RESULT)
    event = pb.StatusEvent.FromString(announcement.payload)
    decoder = CompactDecoder()
    decoder.set_dictionary(codec.result_dictionary_from_pb(event.dictionary))
    decoded = decoder.decode(outgoing.payload)
    assert 5000 - 10 <= decoded.timings_us["capture_to_send"] < 5000 + 1_000_000
    assert decoded.send_timestamp_us >= before - 100  # capture times travel in 100 us steps
    assert decoded.frame_id == RESULT.frame_id and decoded.model_ids == RESULT.model_ids
    assert RESULT.lane is not None and decoded.lane is not None
    assert decoded.lane.status == RESULT.lane.status
    assert abs(decoded.lane.offset_m - RESULT.lane.offset_m) <= 5e-5
    # until the announcement is written, every result repeats it; afterwards none does
    assert [o.channel for o in personality.result(RESULT)] == [Channel.STATUS, Channel.RESULT]
    assert announcement.on_sent is not None
    announcement.on_sent()
    assert [o.channel for o in personality.result(RESULT)] == [Channel.RESULT]
    hello = pb.StatusEvent.FromString(personality.hello(INFO).payload)
    assert hello.hello.device.result_dictionary.generation == event.dictionary.generation
    assert codec.device_info_from_pb(hello.hello.device) == INFO
    health = pb.StatusEvent.FromString(personality.health(HEALTH).payload)
    assert codec.health_from_pb(health.health) == HEALTH


def _no_rpc(rpc: vs.YtRpc) -> RpcOutcome:
    return vs.YtRpcResponse(code=vs.YtRpcResponse.ERROR_OTHER), None


def test_the_visionseed_personality_sends_a_result_without_a_protobuf_round_trip(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_round_trip(*args: object, **kwargs: object) -> None:
        raise AssertionError("the VisionSeed send path went through the native protobuf codec")

    monkeypatch.setattr(codec, "result_to_pb", no_round_trip)
    monkeypatch.setattr(codec, "result_from_pb", no_round_trip)
    url = _url()
    server = LinkServer(url, VisionSeedPersonality(_no_rpc))
    host = open_transport(url)
    try:
        server.start()
        assert server.send_result(RESULT)
        (payload,) = _read_until(host, VisionSeedDecoder().feed, 1)
        result = vs.YtMsg.FromString(payload).result
        assert result.frameId == RESULT.frame_id
        assert [n.path for n in decode_datav2(result.dataV2)] == [(MODEL_LANE,)]
    finally:
        server.close()
        host.close()


def test_the_ffs_transport_is_found_through_its_entry_point_without_importing_the_firmware() -> None:
    script = (
        "import sys; from seedcam.transport import backends; "
        "print(backends().get('ffs')); print('seedcam_firmware' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["seedcam_firmware.usb.ffs:FfsTransport", "False"]


def test_a_host_that_leaves_is_logged_as_an_event_not_a_fault(caplog: pytest.LogCaptureFixture) -> None:
    """The link server tells a host closing its end (PeerClosed) from a broken link: INFO, not WARNING."""
    url = _url()
    server = LinkServer(url, _Recorder(), reopen_interval=0.05)
    host = open_transport(url)
    try:
        with caplog.at_level(logging.INFO, logger="seedcam_firmware.link_server"):
            server.start()
            host.close()
            deadline = time.monotonic() + WAIT_S
            while not any("the host left" in r.getMessage() for r in caplog.records):
                assert time.monotonic() < deadline, "the server never noticed the host leaving"
                time.sleep(0.01)
        levels = {r.levelno for r in caplog.records if r.name == "seedcam_firmware.link_server"}
        assert logging.WARNING not in levels and logging.ERROR not in levels
    finally:
        server.close()

"""Protocol versions meet: each side refuses the other's with an error that names both versions."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

import seedcam
from seedcam._proto import seedcam_pb2 as pb
from seedcam.protocol import codec
from seedcam.protocol.framing import PROTOCOL_VERSION, Channel, Decoder, Flag, Frame, encode_frame
from seedcam.transport import open_transport
from seedcam.types import Health, LinkStats
from seedcam_firmware.link_server import LinkServer

WAIT_S = 5.0
OLD = 1  # the protocol the first hosts and firmware spoke (its Request and Response are version 2's)


def _url() -> str:
    return f"pair://version-{uuid.uuid4().hex[:12]}"


def test_a_host_of_protocol_1_is_answered_in_its_framing_with_both_versions_named() -> None:
    url = _url()
    handled: list[pb.Request] = []

    def handler(request: pb.Request) -> pb.Response:
        handled.append(request)
        return pb.Response()

    server = LinkServer(url, handler)
    host = open_transport(url)
    try:
        server.start()
        request = pb.Request(info=pb.InfoRequest(host_protocol_version=OLD)).SerializeToString()
        host.write(encode_frame(Frame(Channel.CONTROL, 11, request, version=OLD)), WAIT_S)
        decoder = Decoder(answer_versions=frozenset({OLD}))  # hands over the frames an old host would read
        deadline = time.monotonic() + WAIT_S
        answers: list[Frame] = []
        while not answers:
            assert time.monotonic() < deadline, "no answer to the old host's request"
            answers = [f for f in decoder.feed(host.read(65536, 0.05)) if f.version == OLD]
        (answer,) = answers
        assert (answer.channel, answer.seq, answer.flags) == (Channel.CONTROL, 11, Flag.RESPONSE)
        response = pb.Response.FromString(answer.payload)
        assert response.status == pb.STATUS_UNSUPPORTED
        assert f"protocol {PROTOCOL_VERSION}" in response.message and f"protocol {OLD}" in response.message
        assert handled == []  # the request itself was not acted on
        assert server.counters.bad_version == 1
    finally:
        server.close()
        host.close()


def test_the_sdk_refuses_a_device_of_protocol_1_at_once_naming_both_versions() -> None:
    url = _url()
    device = open_transport(url)  # an old device: it drops our frames and sends its own version's
    stop = threading.Event()

    def old_device() -> None:
        health = pb.StatusEvent(health=pb.Health())
        codec.health_to_pb(Health("old-boot", 1.0, 30.0, 1, 1, 0, LinkStats()), health.health)
        seq = 0
        while not stop.is_set():
            device.read(65536, 0.05)
            device.write(encode_frame(Frame(Channel.STATUS, seq, health.SerializeToString(), version=OLD)), WAIT_S)
            seq += 1
            stop.wait(0.1)

    thread = threading.Thread(target=old_device, daemon=True)
    thread.start()
    started = time.monotonic()
    try:
        with pytest.raises(seedcam.ProtocolVersionMismatch) as caught:
            seedcam.open(url, timeout=30.0, reconnect=False)
        assert time.monotonic() - started < 10.0, "refused only when the handshake timed out"
        assert (caught.value.device_version, caught.value.host_version) == (OLD, PROTOCOL_VERSION)
        assert f"protocol {OLD}" in str(caught.value) and f"protocol {PROTOCOL_VERSION}" in str(caught.value)
        assert "update the firmware" in str(caught.value)
    finally:
        stop.set()
        thread.join(WAIT_S)
        device.close()

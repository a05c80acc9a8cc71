"""The handshake's dictionary and the announced ones meet in the order the link carried them.

A sensor that is already running announces a new dictionary generation (and sends the
result that needs it) right after it answered the host's opening ``info`` call. Whichever
thread gets there first, the host must keep the newer generation and drop no result it can
decode.
"""

# ruff: noqa: F811  (tests take the fixtures imported from fake_device as parameters)
from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from fake_device import WAIT_S, FakeDevice, make_result, wait_until

import seedcam.sensor
from seedcam._compact_results import CompactResults
from seedcam._proto import seedcam_pb2 as pb
from seedcam.protocol import codec
from seedcam.protocol.compact import CompactEncoder, StaleDictionary
from seedcam.protocol.framing import Channel
from seedcam.types import DeviceInfo


class _SilentBoard(FakeDevice):
    """A board on a UART: it cannot tell when a host attaches, so it sends no Hello."""

    def send_hello(self, boot_id: str | None = None) -> None:
        return


@pytest.fixture
def board() -> Iterator[FakeDevice]:
    dev = _SilentBoard()
    yield dev
    dev.close()


def test_results_announced_right_after_the_handshake_answer_are_all_delivered(
    board: FakeDevice, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The calling thread takes in the handshake's answer only after the reader has seen what followed it."""
    opener = threading.get_ident()
    original = seedcam.sensor.Sensor._observe_device
    held: list[DeviceInfo] = []

    def late_caller(sensor: seedcam.sensor.Sensor, info: DeviceInfo) -> None:
        if threading.get_ident() == opener and not held:
            held.append(info)
            # the link now carries: answer (no dictionary yet), announcement of generation 1, result 0
            board.send_result(0)
            wait_until(
                lambda: sensor.stats.results_received + sensor.stats.results_stale >= 1,
                what="the reader thread to take result 0",
            )
        original(sensor, info)

    monkeypatch.setattr(seedcam.sensor.Sensor, "_observe_device", late_caller)
    sensor = board.connect(reconnect=False)
    assert held, "the handshake went through the delayed caller"
    board.send_result(1)
    board.send_result(2)
    wait_until(lambda: sensor.stats.results_received + sensor.stats.results_stale >= 3, what="three results in")
    got = [sensor.recv(timeout=WAIT_S) for _ in range(sensor.stats.results_received)]
    assert [r.frame_id for r in got if r is not None] == [0, 1, 2]
    assert sensor.stats.results_stale == 0
    assert got[-1] is not None and got[-1].model_ids == ("lane-int8@1.0.0",)


def _device_info(boot_id: str, encoder: CompactEncoder) -> pb.DeviceInfo:
    info = pb.DeviceInfo(boot_id=boot_id)
    codec.result_dictionary_to_pb(encoder.dictionary, info.result_dictionary)
    return info


def _announce(encoder: CompactEncoder, frame_id: int) -> tuple[pb.ResultDictionary, bytes]:
    fresh, payload = encoder.encode(make_result(frame_id), 2_000_000 + frame_id * 33_333)
    assert fresh is not None
    return codec.result_dictionary_to_pb(fresh), payload


def test_an_older_handshake_answer_does_not_replace_a_dictionary_announced_before_it() -> None:
    """The device filled its answer in, then announced generation 1 before the answer went out."""
    encoder = CompactEncoder()
    answer = _device_info("boot-a", encoder)  # generation 0: no result encoded yet
    announcement, payload = _announce(encoder, 7)
    host = CompactResults()
    host.announced(announcement)
    host.device(answer)  # the first DeviceInfo of this link: the boot is news, the dictionary is not
    assert host.decode(payload, 0.0).frame_id == 7


def test_a_restarted_device_counts_its_generations_from_one_again() -> None:
    old = CompactEncoder()
    host = CompactResults()
    host.device(_device_info("boot-a", old))
    for frame_id in range(3):  # generation 3 of boot-a
        old.set_timings(("off", "summary", "full")[frame_id])
        host.announced(_announce(old, frame_id)[0])
    new = CompactEncoder()
    _, payload = new.encode(make_result(1), 2_000_000)  # generation 1 of boot-b
    host.device(_device_info("boot-b", new))
    assert host.decode(payload, 0.0).frame_id == 1


def test_a_refresh_after_a_stale_result_takes_the_devices_dictionary_as_it_is() -> None:
    """A dictionary of unknown origin (taken before the first DeviceInfo) must not block the one in force."""
    stray = CompactEncoder()
    host = CompactResults()
    for frame_id in range(2):  # generation 2, announced before the device restarted as boot-b
        stray.set_timings(("off", "summary")[frame_id])
        host.announced(_announce(stray, frame_id)[0])
    current = CompactEncoder()
    _, payload = current.encode(make_result(5), 2_000_000)  # boot-b, generation 1
    host.device(_device_info("boot-b", current))
    with pytest.raises(StaleDictionary):
        host.decode(payload, 0.0)
    host.device(_device_info("boot-b", current), refresh=True)  # what the fetch after a stale result does
    assert host.decode(payload, 0.0).frame_id == 5


def test_a_response_hook_runs_on_the_reader_thread_before_the_call_returns(board: FakeDevice) -> None:
    sensor = board.connect(reconnect=False)
    seen: list[tuple[int, int]] = []
    request = pb.Request(ping=pb.PingRequest(payload=b"hook"))
    frame = sensor.session.call(
        Channel.CONTROL,
        request.SerializeToString(),
        WAIT_S,
        on_response=lambda f: seen.append((threading.get_ident(), f.seq)),
    )
    assert seen == [(seen[0][0], frame.seq)]
    assert seen[0][0] != threading.get_ident()

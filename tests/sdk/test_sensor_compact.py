"""A sensor reads protocol 2's compact results: the dictionary from the device, and what happens when one is missed."""

# ruff: noqa: F811  (tests take the fixtures imported from fake_device as parameters)
from __future__ import annotations

from fake_device import WAIT_S, FakeDevice, device, make_device, make_result, wait_until  # noqa: F401

from seedcam.protocol.framing import Channel
from seedcam_firmware.link_native import NativePersonality


def test_results_carry_the_names_the_device_announced(device: FakeDevice) -> None:
    assert device.sensor is not None
    device.send_result(3)
    result = device.sensor.recv(timeout=WAIT_S)
    assert result is not None
    assert (result.frame_id, result.model_ids) == (3, ("lane-int8@1.0.0",))
    assert (result.frame_width, result.frame_height) == (320, 240)
    assert device.sensor.stats.results_stale == 0


def test_a_result_whose_announcement_was_lost_is_counted_and_the_host_fetches_the_dictionary(
    device: FakeDevice,
) -> None:
    sensor = device.sensor
    assert sensor is not None
    personality = device.server.personality
    assert isinstance(personality, NativePersonality)
    infos_before = device.services.calls.count("device_info")
    announcement, stale = personality.result(make_result(5))  # a new generation: the announcement never goes out
    assert announcement.channel == Channel.STATUS
    device.send_payload(Channel.RESULT, stale.payload)
    wait_until(lambda: sensor.stats.results_stale == 1, what="the stale result counted")
    wait_until(lambda: device.services.calls.count("device_info") > infos_before, what="the host asking again")
    *_, fresh = personality.result(make_result(6))
    device.send_payload(Channel.RESULT, fresh.payload)  # still unannounced: the info call's answer carried it
    got = sensor.recv(timeout=WAIT_S)
    assert got is not None and got.frame_id == 6
    assert sensor.recv(timeout=0.2) is None  # frame 5 was dropped, not delivered late

"""Replayed and duplicated frames are counted and dropped; undefined flag bits are refused (issue 14, finding 13).

The rules are those of :mod:`seedcam.protocol.sequence`; the firmware's link uses the same
decoder, so the device counts and refuses the same way (checked at the end through the real
LinkServer of fake_device).
"""

# ruff: noqa: F811  (tests take the fixtures imported from fake_device as parameters)

from __future__ import annotations

import pytest
from fake_device import (  # noqa: F401 - fixtures
    FakeDevice,
    device,
    make_device,
    wait_until,
)
from framing_helpers import assert_accounting, ref_frame

from seedcam._proto import seedcam_pb2 as pb
from seedcam.protocol.framing import Channel, Decoder, Flag, Frame, encode_frame
from seedcam.protocol.sequence import SEQ_WINDOW

R, S, C = Channel.RESULT, Channel.STATUS, Channel.CONTROL


def _frames(channel: Channel, seqs: list[int], flags: Flag = Flag.NONE) -> list[Frame]:
    return [Frame(channel, seq, b"p%d" % seq, flags) for seq in seqs]


def _stream(frames: list[Frame]) -> bytes:
    return b"".join(encode_frame(f) for f in frames)


def test_a_duplicated_frame_is_delivered_once_and_counted() -> None:
    frame = Frame(R, 7, b"result")
    decoder = Decoder()
    stream = encode_frame(frame) * 2
    assert decoder.feed(stream) == [frame]
    assert decoder.counters.duplicates == 1
    assert decoder.counters.seq_lost == 0 and decoder.counters.corrupted == 0
    assert_accounting(decoder, [frame], stream)


def test_an_old_frame_replayed_inside_the_window_is_dropped_and_counted() -> None:
    history = _frames(R, list(range(1, 11)))
    decoder = Decoder()
    assert decoder.feed(_stream(history)) == history
    replay = history[3:6]  # numbers 4..6 again
    later = _frames(R, [11, 12])
    assert decoder.feed(_stream(replay + later)) == later
    assert decoder.counters.duplicates == 3
    assert decoder.counters.seq_lost == 0  # the replay did not disturb loss counting


def test_a_replay_on_one_channel_does_not_touch_another() -> None:
    decoder = Decoder()
    results, status = _frames(R, [5, 6]), _frames(S, [5, 6])
    assert decoder.feed(_stream([results[0], status[0], results[1], status[1]])) == [
        results[0],
        status[0],
        results[1],
        status[1],
    ]
    assert decoder.feed(_stream([results[1]])) == []
    assert decoder.counters.duplicates == 1


def test_a_duplicated_response_is_dropped_and_counted() -> None:
    answers = _frames(C, [40, 41, 39], Flag.RESPONSE)  # answers may come out of order
    decoder = Decoder()
    assert decoder.feed(_stream(answers)) == answers
    assert decoder.feed(_stream([answers[0], answers[2]])) == []
    assert decoder.counters.duplicates == 2
    # a request with the same number is another frame, not a duplicate of the response
    (request,) = _frames(C, [40])
    assert decoder.feed(encode_frame(request)) == [request]


def test_a_number_far_behind_the_window_is_a_restart_not_a_replay() -> None:
    decoder = Decoder()
    assert len(decoder.feed(_stream(_frames(R, [1000, 1001])))) == 2
    behind = _frames(R, [1001 - SEQ_WINDOW, 1002 - SEQ_WINDOW])
    assert decoder.feed(_stream(behind)) == behind
    assert decoder.counters.duplicates == 0 and decoder.counters.seq_lost == 0


def test_a_sender_that_starts_again_from_0_is_heard_at_once() -> None:
    """A host restarted on a UART the firmware never saw close numbers from 0 again: nothing may be dropped."""
    decoder = Decoder()
    first_host = _frames(C, [0, 1, 2])
    assert decoder.feed(_stream(first_host)) == first_host
    second_host = _frames(C, [0, 1, 2, 3])
    assert decoder.feed(_stream(second_host)) == second_host
    assert decoder.counters.duplicates == 0 and decoder.counters.seq_lost == 0
    # the same first request twice (``seedcam info`` run twice) is heard twice too
    again = Decoder()
    (info,) = _frames(C, [0])
    assert again.feed(encode_frame(info) * 2) == [info, info]


def test_wrap_around_is_neither_loss_nor_duplicate() -> None:
    decoder = Decoder()
    frames = _frames(R, [65534, 65535, 0, 1])
    assert decoder.feed(_stream(frames)) == frames
    assert decoder.feed(_stream(_frames(R, [65535]))) == []  # behind by 2 after the wrap: a replay
    assert decoder.counters.duplicates == 1 and decoder.counters.seq_lost == 0


def test_reset_sequence_forgets_what_was_seen() -> None:
    decoder = Decoder()
    frames = _frames(R, [5, 6]) + _frames(C, [9], Flag.RESPONSE)
    decoder.feed(_stream(frames))
    decoder.reset_sequence()
    assert decoder.feed(_stream(frames)) == frames
    assert decoder.counters.duplicates == 0


def test_a_window_of_0_turns_duplicate_detection_off() -> None:
    decoder = Decoder(replay_window=0)
    frame = Frame(R, 7, b"x")
    assert decoder.feed(encode_frame(frame) * 3) == [frame] * 3
    assert decoder.counters.duplicates == 0
    with pytest.raises(ValueError):
        Decoder(replay_window=-1)


# ------------------------------------------------------------------ flags


@pytest.mark.parametrize("flags", [0x02, 0x04, 0x80, 0x81, 0xFF])
def test_undefined_flag_bits_are_refused_and_counted(flags: int) -> None:
    after = Frame(R, 1, b"next")
    decoder = Decoder()
    stream = ref_frame(R, 0, b"x", flags=flags) + encode_frame(after)
    assert decoder.feed(stream) == [after]
    assert decoder.counters.bad_flags == 1
    assert decoder.counters.resyncs == 1 and decoder.counters.corrupted == 1
    assert_accounting(decoder, [after], stream)


@pytest.mark.parametrize("flags", [0x02, 0x80])
def test_the_encoder_refuses_undefined_flag_bits(flags: int) -> None:
    with pytest.raises(ValueError, match="undefined"):
        encode_frame(Frame(R, 0, b"", Flag(flags)))


# ------------------------------------------------------- the firmware end


def test_the_device_answers_a_duplicated_request_once_and_counts_it(device: FakeDevice) -> None:
    session = device.sensor.session
    answers: list[Frame] = []
    session.subscribe(Channel.CONTROL, answers.append)  # frames no call waits for: ours
    request = encode_frame(Frame(C, 900, pb.Request(ping=pb.PingRequest(payload=b"once")).SerializeToString()))
    session._transport.write(request * 2, 1.0)  # the same frame twice, as a duplicating proxy would
    wait_until(lambda: device.server.counters.duplicates == 1, what="the device to count the duplicate")
    later = encode_frame(Frame(C, 901, pb.Request(ping=pb.PingRequest(payload=b"later")).SerializeToString()))
    session._transport.write(later, 1.0)
    wait_until(lambda: len(answers) == 2, what="the answers")
    assert [(f.seq, pb.Response.FromString(f.payload).pong.payload) for f in answers] == [
        (900, b"once"),
        (901, b"later"),
    ]


def test_the_device_refuses_a_request_with_undefined_flags(device: FakeDevice) -> None:
    session = device.sensor.session
    answers: list[Frame] = []
    session.subscribe(Channel.CONTROL, answers.append)
    ping = pb.Request(ping=pb.PingRequest(payload=b"x")).SerializeToString()
    session._transport.write(ref_frame(C, 900, ping, flags=0x40) + ref_frame(C, 901, ping), 1.0)
    wait_until(lambda: answers, what="the answer to the well-formed request")
    assert [f.seq for f in answers] == [901]
    assert device.server.counters.bad_flags == 1


def test_the_device_reports_its_duplicates_and_refusals_in_health(device: FakeDevice) -> None:
    session = device.sensor.session
    frame = encode_frame(Frame(Channel.LOG, 3, b""))
    session._transport.write(frame * 3 + ref_frame(Channel.LOG, 4, b"", flags=0x10), 1.0)
    wait_until(lambda: device.server.counters.bad_flags == 1, what="the device to read the frames")
    device.send_health()
    wait_until(lambda: device.sensor.health is not None, what="a health report")
    link = device.sensor.stats.device_link
    assert link is not None and (link.duplicates, link.bad_flags) == (2, 1)

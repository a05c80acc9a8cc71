"""The device side of a replay: a recording played back as the firmware would send it (sans-IO).

:class:`ReplayDevice` holds a recording's timeline and answers a host's frames.
Results go out re-encoded as the firmware encodes them (the compact layout of
:mod:`seedcam.protocol.compact`, announcing each new dictionary first), health
reports and log records as recorded, each at its recorded arrival time
(``log_time``) relative to the first, divided by ``speed``. The clock starts
at the host's first request (its handshake; the answer goes out first), or
:data:`START_AFTER_S` after the link opened. Requests are answered the way the firmware's dispatcher answers:
``info`` from the recorded device info (with the dictionary in force now),
``list_models`` from its models, ``ping`` with its payload, ``preview`` as a
device answers it: from then on, while the host's lease holds (it renews it as
it would a sensor's), the recorded preview JPEGs go out on the timeline as a
device sends them (``StatusEvent.preview`` pieces), each with the frame id of
its recorded result, so ``seedcam view`` on a replay shows the recorded images;
anything that needs
a live device (config, tasks, snapshots, reboot, updates...) with
``STATUS_UNAVAILABLE``.

With ``loop`` the recording starts over when it ends, its frame ids, sensor
times and uptimes moved on by one pass each time, so the stream stays a
running sensor's. Without, the stream ends with a device log record saying so
and the link stays up and silent.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass

from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import ProtocolError, RecordingError
from seedcam.protocol import codec
from seedcam.protocol.compact import SUMMARY_STAGE, CompactEncoder
from seedcam.protocol.framing import Channel, Decoder, Encoder, Flag, Frame
from seedcam.recording import topics
from seedcam.recording.reader import RecordingReader

__all__ = ["ReplayDevice", "START_AFTER_S"]

log = logging.getLogger(__name__)

#: the replay starts this long after the link opened when no request came first
START_AFTER_S = 1.0
_ANSWERED = {"info", "list_models", "ping", "preview"}
_DEFAULT_LEASE_S = 5.0
_PIECE_HEADROOM = 512  # protobuf and frame overhead around a preview piece


@dataclass(frozen=True)
class _Entry:
    at_s: float  #: seconds after the first message (recorded arrival times)
    topic: str
    message: object


class ReplayDevice:
    """A recording as a device: frames out on its timeline, answers to the host's requests.

    Not thread-safe: the transport serialises its calls.

    Args:
        path: the recording.
        name: what the answers call it (the URL).
        speed: playback speed (2: twice as fast); ``math.inf``: as fast as the host reads.
        loop: start over at the end.

    Raises:
        RecordingError: not a recording, or one without a device info or results.
        ValueError: speed not above 0.
    """

    def __init__(self, path: str, *, name: str = "", speed: float = 1.0, loop: bool = False) -> None:
        if not speed > 0:
            raise ValueError(f"replay speed must be above 0, got {speed!r}")
        self.name = name or path
        self.speed = speed
        self.loop = loop
        reader = RecordingReader(path)
        messages = list(reader.messages())
        infos = [m.message for m in messages if m.topic == topics.DEVICE_INFO and isinstance(m.message, pb.DeviceInfo)]
        if not infos:
            raise RecordingError(f"{path} holds no {topics.DEVICE_INFO}: not a seedcam recording")
        first = messages[0].log_time_ns
        self._timeline = [_Entry((m.log_time_ns - first) / 1e9, m.topic, m.message) for m in messages[1:]]
        self.truncated = reader.truncated
        self._info = infos[0]
        span = self._timeline[-1].at_s if self._timeline else 0.0
        self._pass_s = span + 0.05  # a pass of a loop: the recording plus a frame's gap
        results = [e.message for e in self._timeline if isinstance(e.message, pb.Result)]
        self._frame_span = (max(r.frame_id for r in results) - min(r.frame_id for r in results) + 1) if results else 0
        self._time_span_us = round(self._pass_s * 1e6)
        self._encoder = Encoder(max_frame_size=self._info.max_frame_size or 65536)
        self._decoder = Decoder(self._info.max_frame_size or 65536)
        self._results = CompactEncoder(self._info.result_dictionary.timings or "summary")
        self._reference_forward_m = self._info.result_dictionary.reference_forward_m
        self._index = 0
        self._pass = 0
        self._start: float | None = None
        self._ended = False
        self.results_sent = 0
        previews = [
            e.message for e in self._timeline if e.topic == topics.PREVIEW and isinstance(e.message, pb.PreviewChunk)
        ]
        times = [e.at_s for e in self._timeline if e.topic == topics.PREVIEW]
        span_s = times[-1] - times[0] if len(times) > 1 else 0.0
        self._preview_fps = (len(times) - 1) / span_s if span_s > 0 else 0.0
        self._preview_size = (previews[0].width, previews[0].height) if previews else (0, 0)
        self._preview_until: float | None = None  # the host's lease on the preview stream ends then

    @property
    def started(self) -> bool:
        return self._start is not None

    @property
    def ended(self) -> bool:
        """The recording has been played to its end (never with ``loop``)."""
        return self._ended

    def start(self, now: float) -> None:
        """Start the timeline at monotonic instant ``now`` (once)."""
        if self._start is None:
            self._start = now
            log.info("%s: replaying %d messages at speed %g", self.name, len(self._timeline), self.speed)

    def next_due(self) -> float | None:
        """The monotonic instant the next frame is due, or None (not started, or played to the end)."""
        if self._start is None or self._ended:
            return None
        if self._index >= len(self._timeline):
            return self._start  # the end (or the next pass) is due now
        if math.isinf(self.speed):
            return self._start
        return self._start + (self._pass * self._pass_s + self._timeline[self._index].at_s) / self.speed

    def due(self, now: float, max_bytes: int = 65536) -> bytes:
        """The encoded frames whose time has come by ``now`` (about ``max_bytes`` at most; the rest stay due)."""
        out = bytearray()
        while not self._ended and len(out) < max_bytes:
            due = self.next_due()
            if due is None or due > now:
                break
            if self._index >= len(self._timeline):
                out += self._end_of_pass()
                continue
            entry = self._timeline[self._index]
            self._index += 1
            out += self._emit(entry, now)
        return bytes(out)

    def receive(self, data: bytes, now: float) -> bytes:
        """Take the host's bytes; returns the encoded answers to the requests they finish."""
        out = bytearray()
        for frame in self._decoder.feed(data):
            if frame.flags & Flag.RESPONSE:
                continue
            if frame.channel == Channel.CONTROL:
                self.start(now)
                out += self._answer(frame, now)
            elif frame.channel == Channel.TRANSFER:
                answer = pb.UpdateResponse(
                    status=pb.STATUS_UNAVAILABLE, message=f"{self.name} is a recording: updates need a live sensor"
                )
                out += self._encoder.encode(
                    Channel.TRANSFER, answer.SerializeToString(), flags=Flag.RESPONSE, seq=frame.seq
                )
        return bytes(out)

    # ------------------------------------------------------------------ answers

    def _answer(self, frame: Frame, now: float) -> bytes:
        try:
            request = codec.parse(pb.Request, frame.payload)
        except ProtocolError as exc:
            response = pb.Response(status=pb.STATUS_INVALID_ARGUMENT, message=str(exc))
        else:
            kind = request.WhichOneof("body")
            if kind == "info":
                response = pb.Response(info=self._info)
                codec.result_dictionary_to_pb(self._results.dictionary, response.info.result_dictionary)
            elif kind == "list_models":
                response = pb.Response(models=pb.ModelList(models=self._info.models))
            elif kind == "ping":
                response = pb.Response(pong=pb.Pong(payload=request.ping.payload))
            elif kind == "preview":
                response = pb.Response(preview=self._preview_request(request.preview, now))
            else:
                response = pb.Response(
                    status=pb.STATUS_UNAVAILABLE,
                    message=f"{self.name} is a recording: {kind or 'this request'} needs a live sensor",
                )
        return self._encoder.encode(Channel.CONTROL, response.SerializeToString(), flags=Flag.RESPONSE, seq=frame.seq)

    # ------------------------------------------------------------------ the timeline

    def _preview_request(self, request: pb.PreviewRequest, now: float) -> pb.PreviewSettings:
        """Start, renew or stop the recorded preview stream (``fps`` 0 stops it)."""
        lease_s = request.lease_s or _DEFAULT_LEASE_S
        self._preview_until = now + lease_s if request.fps > 0 else None
        if not self._preview_fps:
            message = f"{self.name} is a recording without previews: none will come"
        else:
            message = f"{self.name} is a recording: its previews as recorded, {self._preview_fps:.1f} a second"
        return pb.PreviewSettings(
            fps=min(request.fps, self._preview_fps * self.speed) if request.fps > 0 else 0.0,
            quality=request.quality or 70,
            max_width=request.max_width or 320,
            line_limited=False,
            message=message,
            lease_s=lease_s,
            width=self._preview_size[0],
            height=self._preview_size[1],
        )

    def _preview(self, recorded: pb.PreviewChunk, now: float) -> bytes:
        """A recorded preview, as the device sends one, while the host's lease holds."""
        if self._preview_until is None or now > self._preview_until:
            return b""
        size = len(recorded.data)
        piece_size = max(1024, (self._info.max_frame_size or 65536) - _PIECE_HEADROOM)
        out = bytearray()
        for offset in range(0, size, piece_size):
            chunk = pb.PreviewChunk()
            chunk.CopyFrom(recorded)
            chunk.frame_id += self._pass * self._frame_span
            chunk.capture_timestamp_us += self._pass * self._time_span_us
            chunk.offset, chunk.total_size = offset, size
            chunk.data = recorded.data[offset : offset + piece_size]
            out += self._status(pb.StatusEvent(preview=chunk))
        return bytes(out)

    def _emit(self, entry: _Entry, now: float) -> bytes:
        message = entry.message
        if entry.topic == topics.RESULT and isinstance(message, pb.Result):
            return self._result(message)
        if entry.topic == topics.HEALTH and isinstance(message, pb.Health):
            health = pb.Health()
            health.CopyFrom(message)
            health.timestamp_us += self._pass * self._time_span_us
            health.uptime_s += self._pass * self._pass_s
            if health.latest_frame_id:
                health.latest_frame_id += self._pass * self._frame_span
            return self._status(pb.StatusEvent(health=health))
        if entry.topic == topics.LOG and isinstance(message, pb.LogRecord):
            record = pb.LogRecord()
            record.CopyFrom(message)
            record.timestamp_us += self._pass * self._time_span_us
            return self._encoder.encode(Channel.LOG, record.SerializeToString())
        if entry.topic == topics.DICTIONARY and isinstance(message, pb.ResultDictionary):
            self._reference_forward_m = message.reference_forward_m  # exact, where a Result holds a float32
            if message.timings and message.timings != self._results.timings:
                self._results.set_timings(message.timings)
            return b""
        if entry.topic == topics.DEVICE_INFO and isinstance(message, pb.DeviceInfo):
            self._info = message
            event = pb.StatusEvent(hello=pb.Hello(device=message))
            codec.result_dictionary_to_pb(self._results.dictionary, event.hello.device.result_dictionary)
            return self._status(event)
        if entry.topic == topics.PREVIEW and isinstance(message, pb.PreviewChunk):
            return self._preview(message, now)
        return b""  # Foxglove's copies of the previews and topics of other tools are not part of the link's stream

    def _result(self, message: pb.Result) -> bytes:
        result = codec.result_from_pb(message)
        timings = {stage: us for stage, us in result.timings_us.items() if stage != SUMMARY_STAGE}
        lane = result.lane
        if lane is not None and self._reference_forward_m:
            lane = dataclasses.replace(lane, reference_forward_m=self._reference_forward_m)
        shift_us = self._pass * self._time_span_us
        result = dataclasses.replace(
            result,
            frame_id=result.frame_id + self._pass * self._frame_span,
            capture_timestamp_us=result.capture_timestamp_us + shift_us,
            timings_us=timings,
            lane=lane,
        )
        send_us = message.send_timestamp_us + shift_us if message.send_timestamp_us else result.capture_timestamp_us
        fresh, payload = self._results.encode(result, send_us)
        out = b""
        if fresh is not None:
            out = self._status(pb.StatusEvent(dictionary=codec.result_dictionary_to_pb(fresh)))
        self.results_sent += 1
        return out + self._encoder.encode(Channel.RESULT, payload)

    def _status(self, event: pb.StatusEvent) -> bytes:
        return self._encoder.encode(Channel.STATUS, event.SerializeToString())

    def _end_of_pass(self) -> bytes:
        if self.loop and self._timeline:
            self._pass += 1
            self._index = 0
            return b""
        self._ended = True
        note = f"end of the recording {self.name}: {self.results_sent} results replayed; nothing more will come"
        log.info("%s", note)
        record = pb.LogRecord(level=logging.WARNING, logger="replay", message=note)
        return self._encoder.encode(Channel.LOG, record.SerializeToString())

"""Record what a sensor sends — device info, results, health, logs, dictionaries — into an MCAP file.

The recorder listens on the sensor's session (:attr:`seedcam.Sensor.session`)
and its result callbacks, on the reader thread, and only queues there: a writer
thread of its own converts and writes, so a slow disk never slows the link. When
the queue is full (the disk cannot keep up) it drops and counts
(:attr:`RecorderStats.dropped`). ::

    import seedcam
    from seedcam.recording import Recorder

    with seedcam.open("/dev/ttyACM0") as sensor, Recorder(sensor, "run.mcap") as recorder:
        sensor.session.wait_closed(10.0)  # record 10 s
    written, dropped = recorder.stats.results, recorder.stats.dropped
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

from google.protobuf.message import Message

from seedcam._frame_pairs import FramePairs
from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import ProtocolError, RecordingError, RpcError, SensorError
from seedcam.protocol import codec
from seedcam.protocol.framing import PROTOCOL_VERSION, Channel, Frame
from seedcam.recording import foxglove, topics
from seedcam.recording.writer import RecordingWriter
from seedcam.types import PreviewFrame, Result

__all__ = ["RecordedSensor", "Recorder", "RecorderStats"]

log = logging.getLogger(__name__)

_QUEUE_SIZE = 20_000  #: messages held for the writer thread (minutes of results at 30 fps)
_MATCH_WINDOW = 256  #: results (and previews) kept to pair a preview with the result of its frame
_STOP = object()


class _Session(Protocol):
    """What the recorder uses of :class:`seedcam.session.Session`."""

    def subscribe(self, channel: Channel, callback: Callable[[Frame], None]) -> Callable[[], None]: ...

    def call(self, channel: Channel, payload: bytes, timeout: float | None = None, *, what: str = "") -> Frame: ...


class RecordedSensor(Protocol):
    """What the recorder uses of :class:`seedcam.Sensor` (its session and its result callbacks)."""

    @property
    def session(self) -> _Session: ...

    def on_result(self, callback: Callable[[Result], None]) -> Callable[[], None]: ...

    def on_preview(self, callback: Callable[[PreviewFrame], None]) -> Callable[[], None]: ...


@dataclass(frozen=True)
class RecorderStats:
    """What a recorder has done so far."""

    results: int
    health: int
    logs: int
    previews: int
    dropped: int  #: messages dropped because the writer thread fell behind (or failed)
    messages: int  #: messages written
    results_on_disk: int  #: results in complete chunks, handed to the OS (what a crash now keeps)
    bytes_written: int
    seconds: float  #: since the recording started
    error: str  #: why writing stopped (a full disk...), empty while all is well
    queue_high_water: int = 0  #: the most messages that waited for the writer thread at once (of 20 000)


class _Clock:
    """Host arrival times as ns since the Unix epoch, from the monotonic clock (exact gaps)."""

    def __init__(self) -> None:
        self.epoch_ns = time.time_ns()
        self.monotonic = time.monotonic()

    def ns(self, monotonic: float | None = None) -> int:
        now = time.monotonic() if monotonic is None else monotonic
        return self.epoch_ns + round((now - self.monotonic) * 1e9)


class Recorder:
    """Records a sensor's stream into ``path`` from :meth:`start` (or ``with``) to :meth:`stop`.

    Args:
        sensor: an open sensor.
        path: the ``.mcap`` file to write (replaced when it exists).
        writer_options: passed to :class:`~seedcam.recording.writer.RecordingWriter`
            (``chunk_size``, ``flush_interval_s``, ``fsync``).

    Raises:
        RecordingError: the file cannot be created, or the mcap packages are missing.
    """

    def __init__(self, sensor: RecordedSensor, path: str | os.PathLike[str], **writer_options: Any) -> None:
        self.sensor = sensor
        self._writer = RecordingWriter(path, library=f"seedcam {_version()}", **writer_options)
        self._queue: queue.Queue[object] = queue.Queue(_QUEUE_SIZE)
        self._clock = _Clock()
        self._unsubscribe: list[Callable[[], None]] = []
        self._thread: threading.Thread | None = None
        self._counts = {topics.RESULT: 0, topics.HEALTH: 0, topics.LOG: 0, topics.PREVIEW: 0}
        self._dropped = 0
        self._high_water = 0
        self._pairs = FramePairs(results_kept=_MATCH_WINDOW, previews_kept=_MATCH_WINDOW)  # writer thread
        self._error = ""
        self._stopped = False

    @property
    def path(self) -> str:
        return str(self._writer.path)

    @property
    def queue_capacity(self) -> int:
        """How many messages may wait for the writer thread before the recorder drops (and counts)."""
        return self._queue.maxsize

    @property
    def stats(self) -> RecorderStats:
        return RecorderStats(
            results=self._counts[topics.RESULT],
            health=self._counts[topics.HEALTH],
            logs=self._counts[topics.LOG],
            previews=self._counts[topics.PREVIEW],
            dropped=self._dropped,
            messages=self._writer.messages,
            results_on_disk=self._writer.on_disk.get(topics.RESULT, 0),
            bytes_written=self._writer.bytes_written,
            seconds=time.monotonic() - self._clock.monotonic,
            error=self._error,
            queue_high_water=self._high_water,
        )

    def start(self) -> Recorder:
        """Write the device info and listen from now on (once).

        Raises:
            SensorTimeout, LinkBroken: the device did not answer the info request.
            RecordingError: the file cannot be written.
        """
        if self._thread is not None:
            return self
        session = self.sensor.session
        self._unsubscribe += [
            self.sensor.on_result(self._on_result),
            self.sensor.on_preview(self._on_preview),
            session.subscribe(Channel.STATUS, self._on_status),
            session.subscribe(Channel.LOG, self._on_log),
        ]
        self._thread = threading.Thread(target=self._write_loop, name=f"seedcam-recorder {self.path}", daemon=True)
        self._thread.start()
        info = self._device_info()
        self._put(topics.DEVICE_INFO, info, self._clock.ns(), round(info.uptime_s * 1e9))
        return self

    def stop(self) -> RecorderStats:
        """Stop listening, write what is queued, finish the file. Idempotent.

        Returns:
            The final statistics.

        Raises:
            RecordingError: the file could not be finished (it is readable up to its last chunk).
        """
        if not self._stopped:
            self._stopped = True
            for unsubscribe in self._unsubscribe:
                unsubscribe()
            thread = self._thread
            while thread is not None and thread.is_alive():  # a writer that failed has left already
                try:
                    self._queue.put(_STOP, timeout=0.2)
                    break
                except queue.Full:
                    continue
            if thread is not None:
                thread.join()
            try:
                self._writer.close()
            except RecordingError as exc:
                self._error = self._error or str(exc)
                raise
        return self.stats

    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def add(self, topic: str, message: Message, publish_time_ns: int, arrival_monotonic: float | None = None) -> None:
        """Record a message of another source (a preview frame...) on ``topic``, from any thread."""
        self._put(topic, message, self._clock.ns(arrival_monotonic), publish_time_ns)

    # ------------------------------------------------------------------ reader thread: queue only

    def _device_info(self) -> pb.DeviceInfo:
        """The device info with the result dictionary in force (the replay encodes with it)."""
        request = pb.Request(info=pb.InfoRequest(host_protocol_version=PROTOCOL_VERSION))
        frame = self.sensor.session.call(Channel.CONTROL, request.SerializeToString(), what="info")
        response = codec.parse(pb.Response, frame.payload)
        if response.status != pb.STATUS_OK:  # as Sensor's calls do: never record an empty device
            raise RpcError(codec.status_name(response.status), response.status, response.message)
        return response.info

    def _on_result(self, result: Result) -> None:
        self._put(topics.RESULT, result, self._clock.ns(result.received_monotonic), result.capture_timestamp_us * 1000)

    def _on_preview(self, frame: PreviewFrame) -> None:
        self._put(topics.PREVIEW, frame, self._clock.ns(), frame.timestamp_us * 1000)

    def _on_status(self, frame: Frame) -> None:
        event = self._parse(pb.StatusEvent, frame)
        if event is None:
            return
        now = self._clock.ns()
        kind = event.WhichOneof("body")
        if kind == "health":
            self._put(topics.HEALTH, event.health, now, event.health.timestamp_us * 1000)
        elif kind == "dictionary":
            self._put(topics.DICTIONARY, event.dictionary, now, event.dictionary.timestamp_us * 1000)
        elif kind == "hello":
            self._put(topics.DEVICE_INFO, event.hello.device, now, round(event.hello.device.uptime_s * 1e9))

    def _on_log(self, frame: Frame) -> None:
        record = self._parse(pb.LogRecord, frame)
        if record is not None:
            self._put(topics.LOG, record, self._clock.ns(), record.timestamp_us * 1000)

    @staticmethod
    def _parse(message_type: type[Any], frame: Frame) -> Any:
        try:
            return codec.parse(message_type, frame.payload)
        except ProtocolError:
            return None  # the sensor counts it; nothing to record

    def _put(self, topic: str, value: object, log_time_ns: int, publish_time_ns: int) -> None:
        if self._stopped or self._error:
            if self._error:
                self._dropped += 1
            return
        try:
            self._queue.put_nowait((topic, value, log_time_ns, publish_time_ns))
        except queue.Full:
            self._dropped += 1
            return
        waiting = self._queue.qsize()
        if waiting > self._high_water:
            self._high_water = waiting

    # ------------------------------------------------------------------ writer thread

    def _write_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            assert isinstance(item, tuple)
            topic: str = item[0]
            value: object = item[1]
            log_time_ns: int = item[2]
            publish_time_ns: int = item[3]
            try:
                if isinstance(value, PreviewFrame):
                    self._write_preview(value, log_time_ns, publish_time_ns)
                elif isinstance(value, Result):
                    self._writer.write(topic, codec.result_to_pb(value), log_time_ns, publish_time_ns)
                    self._match_result(value, log_time_ns)
                else:
                    assert isinstance(value, Message)
                    self._writer.write(topic, value, log_time_ns, publish_time_ns)
            except SensorError as exc:
                self._error = str(exc)
                self._dropped += 1 + self._queue.qsize()
                return  # the file stays readable up to its last chunk; stop() reports the error
            if topic in self._counts:
                self._counts[topic] += 1

    def _write_preview(self, frame: PreviewFrame, log_time_ns: int, publish_time_ns: int) -> None:
        """The preview on the seedcam topic and as Foxglove's image; its boxes once its result is known."""
        self._writer.write(topics.PREVIEW, foxglove.preview_chunk(frame), log_time_ns, publish_time_ns)
        self._writer.write(topics.PREVIEW_IMAGE, foxglove.compressed_image(frame), log_time_ns, publish_time_ns)
        result = self._pairs.add_preview(frame)
        if result is not None:  # else its result comes later
            self._writer.write(
                topics.PREVIEW_BOXES, foxglove.image_annotations(frame, result), log_time_ns, publish_time_ns
            )

    def _match_result(self, result: Result, log_time_ns: int) -> None:
        frame = self._pairs.add_result(result)
        if frame is not None:
            boxes = foxglove.image_annotations(frame, result)
            self._writer.write(topics.PREVIEW_BOXES, boxes, log_time_ns, frame.timestamp_us * 1000)


def _version() -> str:
    import seedcam

    return seedcam.__version__

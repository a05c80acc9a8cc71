"""Read a seedcam recording, also one cut short by a crash or a full disk.

The reader goes through the file front to back (the ``mcap`` package's stream
reader, which needs neither the summary nor the footer a crashed writer never
wrote) and checks each chunk's CRC. A chunk is taken whole or not at all: a
file that ends inside a chunk, or whose tail is garbage, yields every message of
its complete chunks and reports itself :attr:`RecordingReader.truncated`, with
the reason. ::

    from seedcam.recording import RecordingReader

    reader = RecordingReader("run.mcap")
    lanes = {result.frame_id: result.lane for result in reader.results()}
    if reader.truncated:
        log.warning("run.mcap was cut short: %s", reader.truncation)
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf.message import DecodeError, Message

from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import RecordingError
from seedcam.protocol import codec
from seedcam.recording import topics
from seedcam.types import DeviceInfo, Health, Result

__all__ = ["RecordedMessage", "RecordingReader"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RecordedMessage:
    """One message of a recording.

    Attributes:
        topic: its topic (see :mod:`seedcam.recording.topics`).
        schema: its schema's name, e.g. ``seedcam.v1.Result``.
        log_time_ns: when it arrived at the host, ns since the Unix epoch.
        publish_time_ns: the sensor's time of it, ns on the sensor's clock.
        sequence: its number on its topic (0, 1, 2 ...).
        message: the decoded protobuf message, or None for a schema this SDK does not know.
    """

    topic: str
    schema: str
    log_time_ns: int
    publish_time_ns: int
    sequence: int
    message: Message | None


def _mcap_reading() -> Any:
    try:
        from mcap import exceptions, stream_reader
        from mcap.records import Channel, Footer, Header, Message, Schema
    except ImportError as exc:
        raise RecordingError("reading recordings needs the mcap packages: pip install 'seedcam[record]'") from exc
    return exceptions, stream_reader, (Channel, Footer, Header, Message, Schema)


class RecordingReader:
    """The messages of one recording, in the order they were written.

    Args:
        path: the ``.mcap`` file.

    Raises:
        RecordingError: the file cannot be opened, or it is not an MCAP file.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise RecordingError(f"no recording at {self.path}")
        self.truncated = False  #: the file ended before its footer: cut by a crash or a full disk
        self.truncation = ""  #: why the reader stopped early (empty when it read the whole file)
        self.profile = ""  #: the MCAP header's profile (``seedcam`` for the SDK's recordings)

    def messages(self, only: Iterable[str] | None = None) -> Iterator[RecordedMessage]:
        """Yield the messages (of the topics in ``only``, or all) from the start of the file.

        Reading stops quietly at the first damaged or incomplete record; :attr:`truncated`
        and :attr:`truncation` then say so.

        Raises:
            RecordingError: the file is not an MCAP file.
        """
        exceptions, stream_reader, (channel_t, footer_t, header_t, message_t, schema_t) = _mcap_reading()
        wanted = None if only is None else set(only)
        schemas: dict[int, str] = {}
        channels: dict[int, tuple[str, str]] = {}
        self.truncated, self.truncation = False, ""
        with open(self.path, "rb") as stream:
            reader = stream_reader.StreamReader(stream, validate_crcs=True)
            records = reader.records
            finished = False
            while True:
                try:
                    record = next(records)
                except StopIteration:
                    finished = True
                    break
                except exceptions.InvalidMagic as exc:
                    if stream.tell() <= 8:
                        raise RecordingError(f"{self.path} is not an MCAP recording") from exc
                    self._cut(f"bad closing magic: {exc}")
                    break
                except exceptions.EndOfFile:
                    self._cut("the file ends inside a record (the writer was stopped mid-chunk)")
                    break
                except (exceptions.McapError, ValueError, struct.error, EOFError, MemoryError) as exc:
                    # a damaged chunk: bad CRC, a length beyond the file, garbage that does not decompress
                    self._cut(f"a damaged record at byte {stream.tell()}: {exc}")
                    break
                except Exception as exc:  # noqa: BLE001 - zstd/lz4 raise their own error types
                    self._cut(f"a record that does not decode at byte {stream.tell()}: {exc}")
                    break
                if isinstance(record, header_t):
                    self.profile = record.profile
                elif isinstance(record, schema_t):
                    schemas[record.id] = record.name
                elif isinstance(record, channel_t):
                    channels[record.id] = (record.topic, schemas.get(record.schema_id, ""))
                elif isinstance(record, message_t):
                    topic, schema = channels.get(record.channel_id, ("", ""))
                    if wanted is not None and topic not in wanted:
                        continue
                    yield RecordedMessage(
                        topic,
                        schema,
                        record.log_time,
                        record.publish_time,
                        record.sequence,
                        self._decode(schema, record.data),
                    )
                elif isinstance(record, footer_t):
                    finished = True
            if not finished and not self.truncated:
                self._cut("no footer")

    def _cut(self, why: str) -> None:
        self.truncated, self.truncation = True, why
        log.info("%s was cut short: %s; read up to its last complete chunk", self.path, why)

    @staticmethod
    def _decode(schema: str, data: bytes) -> Message | None:
        cls = topics.message_class(schema)
        if cls is None:
            return None
        message: Message = cls()
        try:
            message.ParseFromString(data)
        except DecodeError:
            return None
        return message

    # ------------------------------------------------------------------ typed views

    def results(self) -> list[Result]:
        """Every recorded result, as the SDK's dataclass (``received_monotonic``: the arrival, in s since the epoch)."""
        found = []
        for item in self.messages([topics.RESULT]):
            if isinstance(item.message, pb.Result):
                found.append(codec.result_from_pb(item.message, received_monotonic=item.log_time_ns / 1e9))
        return found

    def health(self) -> list[Health]:
        """Every recorded health report."""
        return [
            codec.health_from_pb(item.message)
            for item in self.messages([topics.HEALTH])
            if isinstance(item.message, pb.Health)
        ]

    def device_info(self) -> DeviceInfo | None:
        """The first recorded device info, or None when the recording holds none."""
        for item in self.messages([topics.DEVICE_INFO]):
            if isinstance(item.message, pb.DeviceInfo):
                return codec.device_info_from_pb(item.message)
        return None

"""An MCAP file of protobuf messages, chunked, compressed and closed off often enough to survive a crash.

Built on the ``mcap`` package's writer (``seedcam[record]``). Messages go into
chunks compressed with zstd; a chunk is finished when it holds ``chunk_size``
bytes or ``flush_interval_s`` after its first message, then written and flushed
to the OS (and fsynced), so a recording cut by SIGKILL, a power cut or a full
disk loses at most its last, unfinished chunk: :mod:`seedcam.recording.reader`
reads every complete chunk of such a file. A file closed normally also has the
summary section (statistics, chunk and message indexes) that lets Foxglove seek.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import IO, Any

from google.protobuf.message import Message

from seedcam.errors import RecordingError
from seedcam.recording.topics import PROFILE

__all__ = ["RecordingWriter", "DEFAULT_CHUNK_SIZE", "DEFAULT_FLUSH_INTERVAL_S"]

log = logging.getLogger(__name__)

#: a chunk is finished at this many uncompressed bytes...
DEFAULT_CHUNK_SIZE = 256 * 1024
#: ...or this many seconds after the last chunk was finished, whichever comes first
DEFAULT_FLUSH_INTERVAL_S = 1.0


def _mcap() -> Any:
    try:
        from mcap import writer
        from mcap_protobuf.schema import build_file_descriptor_set
    except ImportError as exc:
        raise RecordingError("recording needs the mcap packages: pip install 'seedcam[record]'") from exc
    return writer, build_file_descriptor_set


class RecordingWriter:
    """Writes protobuf messages by topic into an MCAP file.

    Thread-safe. Use as a context manager, or call :meth:`close`.

    Args:
        path: the file to create (an existing one is replaced).
        chunk_size: uncompressed bytes after which a chunk is finished.
        flush_interval_s: seconds after which a chunk is finished anyway (what a crash may lose).
        fsync: fsync the file after each chunk (a power cut then loses at most one chunk too).
        library: the MCAP header's library field.

    Raises:
        RecordingError: the mcap packages are missing, or the file cannot be created.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        flush_interval_s: float = DEFAULT_FLUSH_INTERVAL_S,
        fsync: bool = True,
        library: str = "seedcam",
    ) -> None:
        if chunk_size < 1 or flush_interval_s <= 0:
            raise ValueError("chunk_size and flush_interval_s must be positive")
        writer_module, self._descriptor_set = _mcap()
        self.path = Path(path)
        self._lock = threading.Lock()
        self._fsync = fsync
        self._flush_interval_s = flush_interval_s
        self._schemas: dict[str, int] = {}
        self._channels: dict[str, int] = {}
        self._sequence: dict[int, int] = {}
        self._failed: RecordingError | None = None
        self._closed = False
        self._size_at_close = 0
        self.messages = 0  #: messages written so far
        self._pending: dict[str, int] = {}
        self.on_disk: dict[str, int] = {}  #: topic -> messages in complete chunks handed to the OS
        try:
            self._file: IO[bytes] = open(self.path, "wb")  # noqa: SIM115 - closed by close()
        except OSError as exc:
            raise RecordingError(f"cannot create {self.path}: {exc.strerror or exc}") from exc
        self._writer = writer_module.Writer(
            self._file, chunk_size=chunk_size, compression=writer_module.CompressionType.ZSTD
        )
        self._guard(lambda: self._writer.start(profile=PROFILE, library=library))
        self._last_flush = time.monotonic()

    @property
    def bytes_written(self) -> int:
        """Bytes in the file so far (complete chunks and what went before them)."""
        if self._closed:
            return self._size_at_close
        try:
            return os.fstat(self._file.fileno()).st_size
        except (OSError, ValueError):
            return 0

    def write(self, topic: str, message: Message, log_time_ns: int, publish_time_ns: int) -> None:
        """Append one message to ``topic`` (registered with its schema on first use).

        Raises:
            RecordingError: the file cannot be written (a full disk...), now or before; or the writer is closed.
        """
        with self._lock:
            if self._failed is not None:
                raise self._failed
            if self._closed:
                raise RecordingError(f"{self.path} is closed")
            channel = self._channels.get(topic)
            if channel is None:
                channel = self._register(topic, message)
            sequence = self._sequence.get(channel, 0)
            self._sequence[channel] = sequence + 1
            data = message.SerializeToString()
            self._guard(lambda: self._writer.add_message(channel, log_time_ns, data, publish_time_ns, sequence))
            self.messages += 1
            self._pending[topic] = self._pending.get(topic, 0) + 1
            if time.monotonic() - self._last_flush >= self._flush_interval_s:
                self._flush()

    def flush(self) -> None:
        """Finish the chunk in progress and hand it to the OS now.

        Raises:
            RecordingError: the file cannot be written.
        """
        with self._lock:
            if self._failed is not None:
                raise self._failed
            if not self._closed:
                self._flush()

    def close(self) -> None:
        """Write the last chunk and the summary, and close the file. Idempotent.

        Raises:
            RecordingError: the file could not be finished (it stays readable up to its last chunk).
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                if self._failed is None:
                    self._guard(self._writer.finish)
                    self._sync()
            finally:
                self._release()

    def _release(self) -> None:
        """Close the file; what a failed writer still buffered is lost (its chunks on disk are not)."""
        try:
            self._size_at_close = os.fstat(self._file.fileno()).st_size
            self._file.close()
        except OSError as exc:
            if self._failed is None:
                self._failed = RecordingError(f"cannot write {self.path}: {exc.strerror or exc}")
                raise self._failed from exc

    def __enter__(self) -> RecordingWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _register(self, topic: str, message: Message) -> int:
        name = message.DESCRIPTOR.full_name
        schema = self._schemas.get(name)
        if schema is None:
            data = self._descriptor_set(type(message)).SerializeToString()
            schema = self._guard(lambda: self._writer.register_schema(name=name, encoding="protobuf", data=data))
            self._schemas[name] = schema
        channel: int = self._guard(
            lambda: self._writer.register_channel(topic=topic, message_encoding="protobuf", schema_id=schema)
        )
        self._channels[topic] = channel
        return channel

    def _flush(self) -> None:
        self._guard(self._writer.flush)
        self._sync()
        self.on_disk = dict(self._pending)
        self._last_flush = time.monotonic()

    def _sync(self) -> None:
        if self._fsync:
            self._guard(lambda: os.fsync(self._file.fileno()))

    def _guard(self, action: Any) -> Any:
        """Run a write; an OS error (a full disk) fails this writer for good with a RecordingError."""
        try:
            return action()
        except OSError as exc:
            self._failed = RecordingError(f"cannot write {self.path}: {exc.strerror or exc}")
            log.error("%s", self._failed)
            raise self._failed from exc

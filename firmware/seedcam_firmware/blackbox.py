"""The black box: the last seconds of the stream in memory, frozen to storage when something goes wrong.

The daemon hands the black box every result (with its frame, for the low-rate
thumbnails), every health report and every log record it sends. They are kept,
as the protobuf messages of a ``BlackBoxEntry``, in a ring bounded by time
(``blackbox.seconds``), count (``max_entries``) and bytes (``max_bytes``).
A trigger freezes a copy of the ring into one ``BlackBoxFile``:

- the lane status turns lost (``on_lane_lost``), the lane-lost result the last entry;
- a detection labelled ``label`` scores at least ``label_score``;
- ``crc_burst`` CRC errors on the link within :data:`CRC_WINDOW_S` (seen in the health reports);
- a host's request (:meth:`BlackBox.trigger`).

A trigger other than the host's fires again only ``cooldown_s`` after it last did. The copy is
taken at once, on the thread that saw the trigger; a writer thread of its own serialises it and
writes it atomically (temp file, fsync, rename, fsync the folder) into ``blackbox.dir``, keeping
the newest ``max_files`` (with no ``dir``, in memory, lost at a restart). A host lists the files
and pulls one in pieces (:meth:`BlackBox.read`); the host SDK turns it into an MCAP recording.
"""

from __future__ import annotations

import collections
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from seedcam._proto import seedcam_pb2 as pb
from seedcam.protocol import codec
from seedcam.types import DeviceInfo, Health, LaneStatus, Result
from seedcam_firmware.camera.base import Frame
from seedcam_firmware.config_sections import BlackboxConfig
from seedcam_firmware.jpeg import encode_jpeg, scale_to_width
from seedcam_firmware.rpc import RequestFailed
from seedcam_firmware.storage.atomic import cleanup_temp, write_atomically

__all__ = ["CRC_WINDOW_S", "SUFFIX", "BlackBox"]

log = logging.getLogger(__name__)

#: the window a burst of CRC errors is counted in
CRC_WINDOW_S = 5.0
#: the file name ending of a frozen black box
SUFFIX = ".seedbb"
_THUMBNAIL_QUALITY = 60
_MAX_REASON = 200
_HOST_WAIT_S = 10.0  #: how long a host's trigger waits for its file to be written


@dataclass(frozen=True)
class _Thumbnail:
    """A frame scaled down for the black box, not yet JPEG-encoded."""

    frame_id: int
    timestamp_us: int
    image: np.ndarray


#: what the ring keeps: a wire entry (health, log), or a result or thumbnail encoded only when frozen
_Kept = pb.BlackBoxEntry | Result | _Thumbnail


@dataclass
class _Freeze:
    info: pb.BlackBoxFileInfo
    entries: list[_Kept]  #: results and thumbnails stay as they are until the writer thread encodes them
    done: threading.Event = field(default_factory=threading.Event)
    error: str = ""


class BlackBox:
    """The sensor's black box (thread-safe; :meth:`start` it, :meth:`close` it).

    Args:
        settings: returns the ``[blackbox]`` section in force (read on every use: its keys are live).
        device_info: who the sensor is, written into each frozen file.
        boot_id: this boot's id, in each file's info.
        max_piece: the most file bytes one answer to a pull carries (it must fit a link frame).
    """

    def __init__(
        self,
        settings: Callable[[], BlackboxConfig],
        device_info: Callable[[], DeviceInfo],
        boot_id: str,
        *,
        max_piece: int = 32 * 1024,
    ) -> None:
        if max_piece < 1:
            raise ValueError("max_piece must be >= 1")
        self._max_piece = max_piece
        self._settings = settings
        self._device_info = device_info
        self._boot_id = boot_id
        self._lock = threading.Lock()
        # (sensor time, entry, bytes): results are kept as they are (frozen dataclasses) and encoded
        # only when a copy is frozen, so keeping them costs the frame nothing but a reference
        self._ring: collections.deque[tuple[int, _Kept, int]] = collections.deque()
        self._ring_bytes = 0
        self._files: dict[str, pb.BlackBoxFileInfo] = {}  # name -> info, oldest first
        self._memory: dict[str, bytes] = {}  # the files, when there is no blackbox.dir
        self._sequence = 0
        self._last_fired: dict[str, float] = {}
        self._lane_lost = False
        self._last_thumbnail = float("-inf")
        self._crc: collections.deque[tuple[float, int]] = collections.deque()
        self._jobs: queue.Queue[_Freeze | None] = queue.Queue(maxsize=4)
        self._thread = threading.Thread(target=self._write_loop, name="seedcam-blackbox", daemon=True)
        self.freezes_dropped = 0  #: triggers whose copy was dropped: the writer was still busy with earlier ones

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Index the files frozen before (an earlier boot's) and start the writer."""
        folder = self._folder()
        if folder is not None and folder.is_dir():
            cleanup_temp(folder)
            paths = sorted(folder.glob(f"*{SUFFIX}"))
            for path in paths:
                info = _read_info(path)
                if info is not None:
                    self._files[info.name] = info
            # numbering goes on past every file there, a damaged one too (it is left for a person to look at)
            self._sequence = max((_sequence_of(path.name.removesuffix(SUFFIX)) for path in paths), default=0)
        self._thread.start()

    def close(self) -> None:
        """Write what is frozen already, then stop the writer. Idempotent."""
        if self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join(timeout=10.0)

    # ------------------------------------------------------------------ the stream (daemon threads)

    def add_result(self, frame: Frame | None, result: Result) -> None:
        """Keep a result (and, at ``thumbnail_fps``, its frame's thumbnail); check its triggers."""
        cfg = self._settings()
        if cfg.seconds <= 0:
            return
        now = time.monotonic()
        if frame is not None and cfg.thumbnail_fps > 0 and now - self._last_thumbnail >= 1.0 / cfg.thumbnail_fps:
            self._last_thumbnail = now
            # only scaled down here, on the send thread; JPEG-encoded by the writer when a copy is frozen
            small = _scaled(frame.image, cfg.thumbnail_width)
            self._keep(cfg, frame.timestamp_us, _Thumbnail(frame.frame_id, frame.timestamp_us, small))
        self._keep(cfg, result.capture_timestamp_us, result)
        lost = result.lane is not None and result.lane.status is LaneStatus.LOST
        if lost and not self._lane_lost and cfg.on_lane_lost:
            self._fire(cfg, "lane_lost", f"the lane was lost at frame {result.frame_id}", result.capture_timestamp_us)
        if result.lane is not None:
            self._lane_lost = lost
        if cfg.label:
            for detection in result.detections:
                if detection.label == cfg.label and detection.score >= cfg.label_score:
                    why = f"{detection.label} scored {detection.score:.2f} at frame {result.frame_id}"
                    self._fire(cfg, "label", why, result.capture_timestamp_us)
                    break

    def add_health(self, health: Health) -> None:
        """Keep a health report; a burst of CRC errors triggers."""
        cfg = self._settings()
        if cfg.seconds <= 0:
            return
        entry = pb.BlackBoxEntry(timestamp_us=health.timestamp_us)
        codec.health_to_pb(health, entry.health)
        self._keep(cfg, health.timestamp_us, entry)
        now = time.monotonic()
        errors = health.link.crc_errors
        self._crc.append((now, errors))
        while self._crc and now - self._crc[0][0] > CRC_WINDOW_S:
            self._crc.popleft()
        burst = errors - self._crc[0][1]
        if cfg.crc_burst and burst >= cfg.crc_burst:
            self._fire(cfg, "crc_burst", f"{burst} CRC errors within {CRC_WINDOW_S:g} s", health.timestamp_us)
            self._crc.clear()

    def add_log(self, record: pb.LogRecord) -> None:
        """Keep a log record (one the link sends to the host)."""
        cfg = self._settings()
        if cfg.seconds > 0:
            self._keep(cfg, record.timestamp_us, pb.BlackBoxEntry(timestamp_us=record.timestamp_us, log=record))

    def _keep(self, cfg: BlackboxConfig, timestamp_us: int, entry: _Kept) -> None:
        if isinstance(entry, Result):
            size = _result_size(entry)
        elif isinstance(entry, _Thumbnail):
            size = entry.image.nbytes // 10  # about its JPEG's size
        else:
            size = entry.ByteSize()
        with self._lock:
            self._ring.append((timestamp_us, entry, size))
            self._ring_bytes += size
            horizon = timestamp_us - round(cfg.seconds * 1e6)
            ring = self._ring
            while len(ring) > 1 and (
                ring[0][0] < horizon or len(ring) > cfg.max_entries or self._ring_bytes > cfg.max_bytes
            ):
                self._ring_bytes -= ring.popleft()[2]

    # ------------------------------------------------------------------ triggers

    def trigger(self, reason: str) -> pb.BlackBoxFileInfo:
        """A host's trigger: freeze now and wait until the file is written.

        Raises:
            RequestFailed: the black box is off (``blackbox.seconds = 0``), the writer is busy, or
                the file could not be written.
        """
        cfg = self._settings()
        if cfg.seconds <= 0:
            raise RequestFailed(pb.STATUS_FAILED_PRECONDITION, "the black box is off (blackbox.seconds = 0)")
        why = reason[:_MAX_REASON] or "a host asked"
        job = self._fire(cfg, "host", why, time.monotonic_ns() // 1000)
        if job is None:
            raise RequestFailed(pb.STATUS_UNAVAILABLE, "the black box is still writing earlier files; try again")
        if not job.done.wait(_HOST_WAIT_S):
            raise RequestFailed(
                pb.STATUS_UNAVAILABLE, f"black box {job.info.name} not written within {_HOST_WAIT_S:g} s"
            )
        if job.error:
            raise RequestFailed(pb.STATUS_INTERNAL, f"black box {job.info.name} not written: {job.error}")
        return self._files.get(job.info.name, job.info)

    def _fire(self, cfg: BlackboxConfig, trigger: str, reason: str, at_us: int) -> _Freeze | None:
        now = time.monotonic()
        with self._lock:
            if trigger != "host" and now - self._last_fired.get(trigger, float("-inf")) < cfg.cooldown_s:
                return None
            self._last_fired[trigger] = now
            self._sequence += 1
            entries = [entry for _, entry, _ in self._ring]
            info = pb.BlackBoxFileInfo(
                name=f"bb-{self._sequence:05d}-{trigger}",
                trigger=trigger,
                reason=reason,
                trigger_timestamp_us=at_us,
                first_timestamp_us=self._ring[0][0] if self._ring else at_us,
                results=sum(1 for entry in entries if isinstance(entry, Result)),
                entries=len(entries),
                boot_id=self._boot_id,
            )
        job = _Freeze(info, entries)
        try:
            self._jobs.put_nowait(job)
        except queue.Full:
            self.freezes_dropped += 1
            log.warning("black box: %s dropped, the writer is still busy", info.name)
            return None
        log.info("black box: %s frozen (%s): %d entries, %d results", info.name, reason, info.entries, info.results)
        return job

    # ------------------------------------------------------------------ storage (writer thread)

    def _folder(self) -> Path | None:
        folder = self._settings().dir
        return Path(folder) if folder else None

    def _write_loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                self._write(job)
            except Exception as exc:  # noqa: BLE001 - a full disk must not stop the sensor
                job.error = str(exc)
                log.error("black box: cannot write %s: %s", job.info.name, exc)
            finally:
                job.done.set()

    def _write(self, job: _Freeze) -> None:
        frozen = pb.BlackBoxFile(info=job.info, entries=[_as_entry(entry) for entry in job.entries])
        codec.device_info_to_pb(self._device_info(), frozen.device)
        data = frozen.SerializeToString()
        info = pb.BlackBoxFileInfo()
        info.CopyFrom(job.info)
        info.size = len(data)
        folder = self._folder()
        if folder is not None:
            write_atomically(folder / f"{info.name}{SUFFIX}", data)
        with self._lock:
            if folder is None:
                self._memory[info.name] = data
            self._files[info.name] = info
            surplus = list(self._files)[: max(0, len(self._files) - self._settings().max_files)]
            for name in surplus:
                del self._files[name]
                self._memory.pop(name, None)
        for name in surplus:
            if folder is not None:
                (folder / f"{name}{SUFFIX}").unlink(missing_ok=True)
            log.info("black box: %s removed (blackbox.max_files)", name)

    # ------------------------------------------------------------------ host requests

    def list(self) -> pb.BlackBoxList:
        """The frozen files, oldest first."""
        with self._lock:
            return pb.BlackBoxList(files=list(self._files.values()), seconds=self._settings().seconds)

    def read(self, name: str, offset: int, max_bytes: int) -> pb.BlackBoxPiece:
        """A piece of one frozen file: ``max_bytes`` from ``offset`` (0, or beyond ``max_piece``: ``max_piece``).

        Raises:
            RequestFailed: ``NOT_FOUND`` for a name not in the list (or removed since),
                ``INVALID_ARGUMENT`` for an offset past its end.
        """
        max_bytes = min(max_bytes, self._max_piece) if max_bytes > 0 else self._max_piece
        with self._lock:
            info = self._files.get(name)
            data = self._memory.get(name)
        if info is None:
            known = ", ".join(self._files) or "none"
            raise RequestFailed(pb.STATUS_NOT_FOUND, f"no black-box file {name!r} (there are: {known})")
        if offset > info.size:
            raise RequestFailed(pb.STATUS_INVALID_ARGUMENT, f"offset {offset} past the {info.size}-byte file {name}")
        if data is None:
            folder = self._folder()
            try:
                assert folder is not None
                with open(folder / f"{name}{SUFFIX}", "rb") as fh:
                    fh.seek(offset)
                    piece = fh.read(max_bytes)
            except OSError as exc:
                raise RequestFailed(pb.STATUS_NOT_FOUND, f"black-box file {name} unreadable: {exc}") from exc
        else:
            piece = data[offset : offset + max_bytes]
        return pb.BlackBoxPiece(name=name, offset=offset, total_size=info.size, data=piece)


def _sequence_of(name: str) -> int:
    parts = name.split("-")
    return int(parts[1]) if len(parts) >= 3 and parts[1].isdigit() else 0


def _read_info(path: Path) -> pb.BlackBoxFileInfo | None:
    """The info of a file frozen before (None, with a warning, for one that does not parse)."""
    try:
        data = path.read_bytes()
        frozen = pb.BlackBoxFile.FromString(data)
    except Exception as exc:  # noqa: BLE001 - a damaged file is skipped, not fatal
        log.warning("black box: %s unreadable, skipped: %s", path, exc)
        return None
    info = frozen.info
    info.size = len(data)
    if info.name != path.name.removesuffix(SUFFIX):
        log.warning("black box: %s names itself %r, skipped", path, info.name)
        return None
    return info


def _result_size(result: Result) -> int:
    """About the bytes a result takes as a ``BlackBoxEntry`` (counted against ``max_bytes``; not encoded here)."""
    texts = sum(16 + len(line.text) + len(line.char_confidences) for line in result.text_lines)
    return 96 + 40 * len(result.detections) + texts + 24 * len(result.classifications)


def _scaled(image: np.ndarray, max_width: int) -> np.ndarray:
    scaled = scale_to_width(image, max_width)
    return scaled.copy() if scaled is image else scaled  # the camera may reuse its buffer


def _as_entry(entry: _Kept) -> pb.BlackBoxEntry:
    if isinstance(entry, Result):
        return pb.BlackBoxEntry(timestamp_us=entry.capture_timestamp_us, result=codec.result_to_pb(entry))
    if isinstance(entry, _Thumbnail):
        jpeg, width, height = encode_jpeg(entry.image, _THUMBNAIL_QUALITY)
        chunk = pb.PreviewChunk(
            frame_id=entry.frame_id,
            capture_timestamp_us=entry.timestamp_us,
            width=width,
            height=height,
            total_size=len(jpeg),
            data=jpeg,
        )
        return pb.BlackBoxEntry(timestamp_us=entry.timestamp_us, thumbnail=chunk)
    return entry

"""The sensor's black box from the host: list its frozen files, pull one, write it as an MCAP recording.

The firmware keeps the last seconds of its stream in memory and freezes a copy
when something goes wrong (the lane lost, a label above a score, a burst of CRC
errors, a host's :meth:`seedcam.Sensor.blackbox_trigger`). ::

    import seedcam

    with seedcam.open("/dev/ttyACM0") as sensor:
        frozen = sensor.blackbox_list()  # each file's name, trigger, reason and seconds
        sensor.blackbox_pull("bb-00003-lane_lost", "lost.mcap")

    from seedcam.recording import RecordingReader
    results = RecordingReader("lost.mcap").results()  # the lane-lost result is the last

A pulled file is an ordinary seedcam recording (:mod:`seedcam.recording.topics`),
plus the file's info on ``/seedcam/blackbox``; its times (``log_time`` and
``publish_time``) are the sensor's clock. Writing it needs ``seedcam[record]``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from google.protobuf.message import DecodeError

from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import ProtocolError
from seedcam.protocol import codec
from seedcam.types import BlackBoxFileInfo, PreviewFrame

__all__ = ["BLACKBOX_TOPIC", "Progress", "parse_file", "pull_bytes", "write_mcap"]

log = logging.getLogger(__name__)

#: the topic of a pulled black box's own info in its MCAP file
BLACKBOX_TOPIC = "/seedcam/blackbox"

#: progress(received_bytes, total_bytes), called after each piece
Progress = Callable[[int, int], None]
#: sends a request and returns the OK response (``Sensor._call``)
Call = Callable[[pb.Request, float | None], pb.Response]


def pull_bytes(call: Call, name: str, *, progress: Progress | None = None, timeout: float | None = None) -> bytes:
    """Fetch a frozen file piece by piece (results keep flowing between the pieces).

    Args:
        call: the sensor's request call.
        name: the file's name.
        progress: called with (bytes received, total) after each piece.
        timeout: for each piece (default: the sensor's timeout).

    Raises:
        RpcError: ``NOT_FOUND`` for a name the sensor does not have (any more), ``UNSUPPORTED``
            from a firmware without a black box.
        ProtocolError: a piece does not continue the file where the last one ended (or is empty).
        SensorTimeout: a piece did not come within ``timeout``.
    """
    if not name:
        raise ValueError("name a black-box file (seedcam blackbox list shows them)")
    pieces: list[bytes] = []
    received, total = 0, None
    while total is None or received < total:
        request = pb.Request(blackbox_pull=pb.BlackBoxPullRequest(name=name, offset=received))
        piece = call(request, timeout).blackbox_piece
        if total is None:
            total = piece.total_size
        if piece.offset != received or piece.total_size != total or received + len(piece.data) > total:
            raise ProtocolError(
                f"black-box piece at offset {piece.offset} of {len(piece.data)} bytes, asked {received}"
            )
        if not piece.data and received < total:
            raise ProtocolError(f"black box {name}: the sensor sent an empty piece at {received} of {total} bytes")
        pieces.append(piece.data)
        received += len(piece.data)
        if progress is not None:
            progress(received, total)
    return b"".join(pieces)


def parse_file(data: bytes) -> pb.BlackBoxFile:
    """A pulled file's message.

    Raises:
        ProtocolError: the bytes are not a black-box file.
    """
    try:
        frozen = pb.BlackBoxFile.FromString(data)
    except DecodeError as exc:
        raise ProtocolError(f"the pulled black box does not parse: {exc}") from exc
    if not frozen.info.name:
        raise ProtocolError("the pulled bytes are not a black-box file (no info)")
    return frozen


def write_mcap(data: bytes, path: str | os.PathLike[str]) -> BlackBoxFileInfo:
    """Write a pulled black box as a seedcam MCAP recording (``seedcam[record]``).

    Returns:
        The file's info (its size: the pulled bytes).

    Raises:
        ProtocolError: ``data`` is not a black-box file.
        RecordingError: the mcap packages are missing, or ``path`` cannot be written.
    """
    from seedcam.recording import foxglove, topics
    from seedcam.recording.writer import RecordingWriter

    frozen = parse_file(data)
    info = pb.BlackBoxFileInfo()
    info.CopyFrom(frozen.info)
    info.size = len(data)
    start_ns = (frozen.entries[0].timestamp_us if frozen.entries else info.trigger_timestamp_us) * 1000
    thumbnails: dict[int, PreviewFrame] = {}
    with RecordingWriter(path, library="seedcam blackbox") as writer:
        writer.write(topics.DEVICE_INFO, frozen.device, start_ns, round(frozen.device.uptime_s * 1e9))
        writer.write(BLACKBOX_TOPIC, info, start_ns, info.trigger_timestamp_us * 1000)
        for entry in frozen.entries:
            at_ns = entry.timestamp_us * 1000
            kind = entry.WhichOneof("body")
            if kind == "result":
                writer.write(topics.RESULT, entry.result, at_ns, at_ns)
                frame = thumbnails.pop(entry.result.frame_id, None)
                if frame is not None:
                    result = codec.result_from_pb(entry.result)
                    writer.write(topics.PREVIEW_BOXES, foxglove.image_annotations(frame, result), at_ns, at_ns)
            elif kind == "health":
                writer.write(topics.HEALTH, entry.health, at_ns, at_ns)
            elif kind == "log":
                writer.write(topics.LOG, entry.log, at_ns, at_ns)
            elif kind == "thumbnail":
                chunk = entry.thumbnail
                frame = PreviewFrame(chunk.frame_id, chunk.capture_timestamp_us, chunk.data, chunk.width, chunk.height)
                writer.write(topics.PREVIEW, chunk, at_ns, at_ns)
                writer.write(topics.PREVIEW_IMAGE, foxglove.compressed_image(frame), at_ns, at_ns)
                thumbnails[chunk.frame_id] = frame
    log.info("black box %s written to %s: %d entries", info.name, path, len(frozen.entries))
    return codec.blackbox_file_info_from_pb(info)

"""The sensor's calls that move images and files: snapshots, the preview stream, the black box.

A part of :class:`seedcam.Sensor` (its base class here), kept apart so the sensor's own
module stays about the link, results and the device's state.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from seedcam import blackbox
from seedcam._preview import PreviewClient
from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import ProtocolError, SensorTimeout
from seedcam.protocol import codec
from seedcam.protocol.framing import Frame
from seedcam.types import BlackBoxFileInfo, PreviewFrame, PreviewSettings, Snapshot

__all__ = ["MediaCalls"]


class MediaCalls:
    """Snapshots, the preview stream and the black box of a :class:`seedcam.Sensor`."""

    _preview: PreviewClient

    if TYPE_CHECKING:  # provided by Sensor

        @property
        def url(self) -> str: ...

        @property
        def timeout(self) -> float: ...

        def _call(
            self,
            request: pb.Request,
            timeout: float | None = None,
            on_response: Callable[[Frame], None] | None = None,
        ) -> pb.Response: ...

    def snapshot(self, quality: int = 0, timeout: float | None = None) -> Snapshot:
        """Take a JPEG of the current camera frame (``quality`` 1..100, 0 = device default).

        On a slow line the device sends the JPEG in pieces (results keep flowing between
        them); this call asks for them in turn, all within ``timeout``.

        Raises:
            ValueError: quality out of range.
            RpcError: ``FAILED_PRECONDITION`` before the first frame, or when the device no
                longer holds the JPEG of a snapshot in pieces (another snapshot was taken).
            SensorTimeout: the JPEG did not arrive whole within ``timeout``.
            ProtocolError: a piece does not continue the JPEG where the last one ended.
        """
        if not 0 <= quality <= 100:
            raise ValueError("JPEG quality must be 0..100")
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        first = self._call(pb.Request(snapshot=pb.SnapshotRequest(quality=quality)), timeout).snapshot
        snapshot = codec.snapshot_from_pb(first)
        pieces = [first.jpeg]
        received = len(first.jpeg)
        while received < first.total_size:  # a slow line: the device sends the JPEG in pieces
            left = deadline - time.monotonic()
            if left <= 0:
                raise SensorTimeout(f"snapshot from {self.url}: {received} of {first.total_size} bytes in time")
            request = pb.SnapshotRequest(frame_id=snapshot.frame_id, offset=received)
            piece = self._call(pb.Request(snapshot=request), left).snapshot
            if piece.offset != received or not piece.jpeg or received + len(piece.jpeg) > first.total_size:
                raise ProtocolError(
                    f"snapshot piece at offset {piece.offset} of {len(piece.jpeg)} bytes, asked {received}"
                )
            pieces.append(piece.jpeg)
            received += len(piece.jpeg)
        return replace(snapshot, jpeg=b"".join(pieces)) if len(pieces) > 1 else snapshot

    # ------------------------------------------------------------------ preview stream

    def start_preview(
        self, fps: float, quality: int = 70, max_width: int = 320, timeout: float | None = None
    ) -> PreviewSettings:
        """Ask for JPEGs of the frames whose results arrive (or change their rate, quality, width).

        Each JPEG goes to the :meth:`on_preview` callbacks; its ``frame_id`` is that of the
        Result of the same frame. The device sends them only in the link capacity the results
        leave over (at 115200 baud that may be well below ``fps``: the answer says so in
        ``line_limited`` and ``message``). The stream stays on while this sensor is open (the
        SDK renews its lease); the device stops it when the lease lapses.

        Raises:
            ValueError: ``fps`` not in (0, 60], ``quality`` not 1..100, ``max_width`` below 16.
            RpcError: the device refused (``UNSUPPORTED``: its firmware has no preview stream).
            SensorTimeout: no answer within ``timeout``.
        """
        return self._preview.start(fps, quality, max_width, timeout)

    def stop_preview(self, timeout: float | None = None) -> None:
        """Stop the preview stream (and its lease renewals).

        Raises:
            SensorTimeout: no answer within ``timeout`` (the device's lease lapses anyway).
        """
        self._preview.stop(timeout)

    def on_preview(self, callback: Callable[[PreviewFrame], None]) -> Callable[[], None]:
        """Call ``callback(frame)`` on the reader thread for every whole preview JPEG; keep it quick.

        Returns:
            A function that unregisters the callback.
        """
        return self._preview.subscribe(callback)

    @property
    def preview(self) -> PreviewClient:
        """The preview stream's host end (its counters and newest frame)."""
        return self._preview

    # ------------------------------------------------------------------ black box

    def blackbox_list(self, timeout: float | None = None) -> tuple[BlackBoxFileInfo, ...]:
        """The black-box files the sensor has frozen, oldest first (see :mod:`seedcam.blackbox`).

        Raises:
            RpcError: ``UNSUPPORTED`` from a firmware without a black box.
        """
        response = self._call(pb.Request(blackbox_list=pb.BlackBoxListRequest()), timeout)
        return tuple(codec.blackbox_file_info_from_pb(info) for info in response.blackbox_list.files)

    def blackbox_pull(
        self,
        name: str,
        path: str | os.PathLike[str],
        progress: blackbox.Progress | None = None,
        timeout: float | None = None,
    ) -> BlackBoxFileInfo:
        """Fetch one black-box file in pieces and write it to ``path`` as an MCAP recording.

        Needs ``seedcam[record]``. Results keep flowing between the pieces.

        Args:
            name: a name from :meth:`blackbox_list`.
            path: the ``.mcap`` file to write (replaced when it exists).
            progress: called with (bytes received, total) after each piece.
            timeout: for each piece.

        Raises:
            RpcError: ``NOT_FOUND`` for a name the sensor does not have (any more).
            ProtocolError: the pieces do not make a black-box file.
            RecordingError: the mcap packages are missing, or ``path`` cannot be written.
        """
        data = blackbox.pull_bytes(self._call, name, progress=progress, timeout=timeout)
        return blackbox.write_mcap(data, path)

    def blackbox_trigger(self, reason: str = "", timeout: float | None = None) -> BlackBoxFileInfo:
        """Freeze the black box now (``reason`` is kept in the file); returns the new file's info.

        Raises:
            RpcError: ``FAILED_PRECONDITION`` when the black box is off (``blackbox.seconds = 0``),
                ``UNAVAILABLE`` while it is still writing earlier files.
        """
        response = self._call(pb.Request(blackbox_trigger=pb.BlackBoxTriggerRequest(reason=reason)), timeout)
        return codec.blackbox_file_info_from_pb(response.blackbox_file)

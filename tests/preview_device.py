"""A device with a REAL preview stream on a ``pair://`` link, for SDK and viewer tests.

The firmware's :class:`~seedcam_firmware.link_server.LinkServer`, its
:class:`~seedcam_firmware.rpc.Dispatcher` and :class:`~seedcam_firmware.preview.PreviewStream`
run as on a board; only the camera and the tasks are the test's: :meth:`PreviewDevice.step`
sends the Result of a drawn frame (a white square on grey at a known place, with a detection
of it) and offers the frame to the preview stream, as the pipeline's send stage does.
"""

from __future__ import annotations

import itertools
import threading
import uuid
from typing import Any

import numpy as np
from fake_device import FakeServices

import seedcam
from seedcam.protocol.framing import Channel
from seedcam.types import Box, Detection, Result
from seedcam_firmware.camera.base import Frame
from seedcam_firmware.link_server import LinkServer
from seedcam_firmware.preview import PreviewStream
from seedcam_firmware.rpc import Dispatcher

__all__ = ["SQUARE", "PreviewDevice", "draw_frame"]

#: where the drawn frames' white square is (normalised box), and so the detection
SQUARE = Box(0.25, 0.25, 0.5, 0.5)
WIDTH, HEIGHT = 640, 480


def draw_frame(frame_id: int) -> Frame:
    """A grey 640x480 frame with a white square at :data:`SQUARE`."""
    image = np.full((HEIGHT, WIDTH, 3), 90, np.uint8)
    x0, y0, x1, y1 = SQUARE.to_pixels(WIDTH, HEIGHT)
    image[y0:y1, x0:x1] = 255
    return Frame(frame_id=frame_id, timestamp_us=1_000_000 + frame_id * 50_000, image=image)


class PreviewDevice:
    """The device end: link server, dispatcher and preview stream; frames sent by :meth:`step`.

    Args:
        line_rate_bps: the preview stream's idea of the line rate (None: a fast link).
        preview: False: a firmware without a preview stream (requests answered UNSUPPORTED).
    """

    def __init__(self, *, line_rate_bps: int | None = None, preview: bool = True) -> None:
        self.url = f"pair://preview-{uuid.uuid4().hex[:12]}"
        self.services = FakeServices()
        self.latest: Frame | None = None
        self.stream = PreviewStream(
            lambda event: self.server.send(Channel.STATUS, event),
            bytes_sent=lambda: self.server.counters.bytes_tx,
            latest_frame=lambda: self.latest,
            line_rate_bps=line_rate_bps,
            max_frame_size=65536,
        )
        dispatcher = Dispatcher(self.services, preview=self.stream.request if preview else None)
        self.server = LinkServer(self.url, dispatcher, on_connect=self._hello, write_timeout=1.0)
        self._ids = itertools.count()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.sensors: list[seedcam.Sensor] = []
        self.server.start()
        self.stream.start()

    def _hello(self) -> None:
        self.server.send_hello(self.services.device_info())

    def connect(self, **options: Any) -> seedcam.Sensor:
        options.setdefault("timeout", 5.0)
        sensor = seedcam.open(self.url, **options)
        self.sensors.append(sensor)
        return sensor

    def step(self) -> int:
        """Send the Result of the next frame and offer the frame to the preview; returns its id."""
        frame = draw_frame(next(self._ids))
        self.latest = frame
        result = Result(
            frame_id=frame.frame_id,
            capture_timestamp_us=frame.timestamp_us,
            detections=(Detection(1, "stop", 0.9, SQUARE),),
            model_ids=("det-int8@0.3.0",),
            frame_width=WIDTH,
            frame_height=HEIGHT,
        )
        self.server.send_result(result)
        self.stream.offer(frame)
        return frame.frame_id

    def start_streaming(self, interval_s: float = 0.02) -> None:
        """Call :meth:`step` every ``interval_s`` from a thread until :meth:`close`."""

        def loop() -> None:
            while not self._stopping.wait(interval_s):
                self.step()

        self._thread = threading.Thread(target=loop, name="preview-device", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        for sensor in self.sensors:
            sensor.close()
        self.stream.close()
        self.server.close()

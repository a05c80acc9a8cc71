"""The LOG channel forwarder and the link it logs about."""

from __future__ import annotations

import logging
import threading
import time
import uuid

from seedcam._proto import seedcam_pb2 as pb
from seedcam.protocol.framing import Channel, Decoder
from seedcam.transport import open_transport
from seedcam_firmware.link_log import LinkLogHandler
from seedcam_firmware.link_server import LinkServer


def test_an_error_logged_inside_a_send_is_forwarded_without_deadlock() -> None:
    url = f"pair://link-log-{uuid.uuid4().hex[:8]}"
    server = LinkServer(url, lambda request: pb.Response(), max_frame_size=1024)
    host = open_transport(url)
    handler = LinkLogHandler(lambda record: server.send(Channel.LOG, record))
    logger = logging.getLogger("seedcam_firmware")
    logger.addHandler(handler)
    try:
        sent: list[bool] = []
        too_big = pb.Snapshot(jpeg=b"x" * 5000)
        sender = threading.Thread(target=lambda: sent.append(server.send(Channel.RESULT, too_big)))
        sender.start()
        sender.join(5)
        assert not sender.is_alive(), "sending an oversize frame deadlocked with the log forwarder"
        assert sent == [False] and server.frames_dropped == 1
        decoder, logs = Decoder(), []
        deadline = time.monotonic() + 5
        while not logs and time.monotonic() < deadline:
            for frame in decoder.feed(host.read(65536, 0.1)):
                if frame.channel == Channel.LOG:
                    logs.append(pb.LogRecord.FromString(frame.payload))
        assert logs and "over the frame size limit" in logs[0].message
        assert logs[0].level == logging.ERROR and logs[0].logger == "seedcam_firmware.link_server"
    finally:
        logger.removeHandler(handler)
        server.close()
        host.close()

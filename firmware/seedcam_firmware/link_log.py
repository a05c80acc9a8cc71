"""Forward the firmware's warnings and errors to the host on the link's LOG channel."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from seedcam._proto import seedcam_pb2 as pb

__all__ = ["LinkLogHandler"]

_MAX_MESSAGE = 1000


class LinkLogHandler(logging.Handler):
    """A logging handler that sends each record as a ``LogRecord`` frame.

    ``send`` must not block (the link drops what it cannot write). Records
    logged while sending one (the link's own warnings) are not forwarded, so a
    broken link cannot feed itself.

    Args:
        send: hands one LogRecord to the link; returns False when it was dropped.
        level: the lowest level forwarded.
    """

    def __init__(self, send: Callable[[pb.LogRecord], bool], level: int = logging.WARNING) -> None:
        super().__init__(level)
        self._send = send
        self._busy = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(self._busy, "active", False):
            return
        self._busy.active = True
        try:
            message = record.getMessage()
            self._send(
                pb.LogRecord(
                    level=record.levelno,
                    logger=record.name,
                    message=message[:_MAX_MESSAGE],
                    timestamp_us=time.monotonic_ns() // 1000,
                )
            )
        except Exception:  # logging must never take the firmware down
            pass
        finally:
            self._busy.active = False

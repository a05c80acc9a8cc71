"""A motor controller on a serial port (an Arduino/STM32 driving the ESC and the steering servo).

The line protocol is ASCII, one message per line, NMEA-style: ``$`` + comma
separated fields + ``*`` + a two-digit hex XOR checksum of the characters
between ``$`` and ``*`` + ``\\n``. Integers only, so a small MCU parses it with
``strtol``.

=====================================  ==============================================
host → motor controller                meaning
=====================================  ==============================================
``$D,<seq>,<speed_mm_s>,<steer_mrad>`` drive: signed speed (mm/s), front-wheel angle
                                       (mrad, positive = left). ``$D,..,0,0`` stops.
=====================================  ==============================================

=============================================  ======================================
motor controller → host                        meaning
=============================================  ======================================
``$T,<seq>,<odometer_mm>,<speed_mm_s>``        telemetry after each drive line (seq
                                               echoes it): wheel odometer, speed
``$E,<seq>,<code>``                            a fault (code: the MCU's own number)
=============================================  ======================================

The motor controller must brake to a stop on its own when no valid ``$D`` line
arrived for 250 ms, so a crashed host or a pulled cable stops the car too.
Example: ``$D,7,350,-120*77`` drives at 0.35 m/s with the wheels 0.12 rad to
the right.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from seedcam.agv.config import DriveCommand
from seedcam.agv.motor import Motor
from seedcam.errors import LinkBroken, ProtocolError, SensorTimeout

__all__ = ["SerialMotorController", "Telemetry", "checksum", "encode_drive", "parse_line"]

log = logging.getLogger(__name__)

_MAX_LINE = 128


def checksum(body: str) -> str:
    """The two hex digits of the XOR of ``body``'s characters."""
    value = 0
    for ch in body.encode("ascii"):
        value ^= ch
    return f"{value:02X}"


def encode_drive(seq: int, command: DriveCommand) -> bytes:
    """The ``$D`` line for ``command`` (speed in mm/s, steering in mrad, rounded)."""
    body = f"D,{seq & 0xFFFF},{round(command.speed_mps * 1000)},{round(command.steering_rad * 1000)}"
    return f"${body}*{checksum(body)}\n".encode("ascii")


@dataclass(frozen=True)
class Telemetry:
    """A ``$T`` line: what the motor controller measured."""

    seq: int
    odometer_m: float
    speed_mps: float


def parse_line(line: bytes) -> Telemetry | int | None:
    """Parse one line from the motor controller.

    Returns:
        :class:`Telemetry` for ``$T``, the fault code (int) for ``$E``, None for an empty line.

    Raises:
        ProtocolError: a malformed line or a bad checksum.
    """
    text = line.strip().decode("ascii", errors="replace")
    if not text:
        return None
    if not text.startswith("$") or "*" not in text:
        raise ProtocolError(f"motor controller sent a malformed line {text!r}")
    body, _, given = text[1:].rpartition("*")
    if given.upper() != checksum(body):
        raise ProtocolError(f"motor controller line {text!r} has a bad checksum")
    fields = body.split(",")
    try:
        if fields[0] == "T" and len(fields) == 4:
            return Telemetry(int(fields[1]), int(fields[2]) / 1000.0, int(fields[3]) / 1000.0)
        if fields[0] == "E" and len(fields) == 3:
            return int(fields[2])
    except ValueError as exc:
        raise ProtocolError(f"motor controller line {text!r}: {exc}") from exc
    raise ProtocolError(f"motor controller sent an unknown message {text!r}")


class SerialMotorController(Motor):
    """Drive a motor controller over a serial port with the line protocol above.

    Args:
        url: the port (``/dev/ttyUSB0``) or any pyserial URL (``loop://`` for tests).
        baudrate: line rate.
        write_timeout: seconds a drive line may take to go out.

    Raises:
        LinkBroken: the port cannot be opened.
    """

    def __init__(self, url: str, baudrate: int = 115200, *, write_timeout: float = 0.05) -> None:
        import serial  # pyserial: a dependency of the SDK

        self.url = url
        self.faults: list[int] = []  #: fault codes reported by the motor controller
        self.bad_lines = 0  #: lines that failed to parse
        self._serial_error = serial.SerialException
        self._write_timeout_error = serial.SerialTimeoutException
        try:
            self._port = serial.serial_for_url(url, baudrate=baudrate, timeout=0, write_timeout=write_timeout)
        except (serial.SerialException, OSError, ValueError) as exc:
            raise LinkBroken(f"cannot open motor controller {url}: {exc}") from exc
        self._lock = threading.Lock()
        self._seq = 0
        self._buffer = bytearray()
        self._telemetry: Telemetry | None = None
        self._closed = False

    def drive(self, command: DriveCommand) -> None:
        """Send a ``$D`` line, then read whatever telemetry has arrived.

        Raises:
            LinkBroken: the port failed or is closed.
            SensorTimeout: the line did not go out within the write timeout.
        """
        with self._lock:
            if self._closed:
                raise LinkBroken(f"motor controller {self.url} is closed")
            self._seq = (self._seq + 1) & 0xFFFF
            try:
                self._port.write(encode_drive(self._seq, command))
                waiting = self._port.in_waiting
                data = self._port.read(waiting) if waiting else b""
            except self._write_timeout_error as exc:
                raise SensorTimeout(f"motor controller {self.url} did not take a command in time") from exc
            except (self._serial_error, OSError) as exc:
                raise LinkBroken(f"motor controller {self.url} failed: {exc}") from exc
            self._take(data)

    def _take(self, data: bytes) -> None:
        self._buffer += data
        while True:
            end = self._buffer.find(b"\n")
            if end < 0:
                if len(self._buffer) > _MAX_LINE:  # no line end in sight: resynchronise
                    self._buffer.clear()
                    self.bad_lines += 1
                return
            line = bytes(self._buffer[: end + 1])
            del self._buffer[: end + 1]
            try:
                message = parse_line(line)
            except ProtocolError as exc:
                self.bad_lines += 1
                log.debug("%s", exc)
                continue
            if isinstance(message, Telemetry):
                self._telemetry = message
            elif isinstance(message, int):
                self.faults.append(message)
                log.warning("motor controller %s reports fault %d", self.url, message)

    def odometer_m(self) -> float | None:
        """The odometer of the latest telemetry, or None before any."""
        telemetry = self._telemetry
        return telemetry.odometer_m if telemetry else None

    def speed_mps(self) -> float | None:
        """The speed of the latest telemetry, or None before any."""
        telemetry = self._telemetry
        return telemetry.speed_mps if telemetry else None

    def close(self) -> None:
        """Send a stop line (best effort) and close the port. Idempotent."""
        if self._closed:
            return
        try:
            self.stop()
        except (LinkBroken, SensorTimeout) as exc:
            log.warning("could not send the final stop to %s: %s", self.url, exc)
        with self._lock:
            self._closed = True
            self._port.close()

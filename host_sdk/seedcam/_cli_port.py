"""Which port the ``seedcam`` CLI opens, at which baud rate, and what it says when it cannot.

The port comes from ``-p/--port``, else ``$SEEDCAM_PORT``, else discovery; the
baud rate of a serial port from the URL's ``?baud=``, else ``-b/--baud``, else
``$SEEDCAM_BAUD``, else the transport's default (921600). A port that cannot be
opened is one line, like esptool's: ``port /dev/ttyUSB0 busy or missing: <reason>``.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os

import seedcam
from seedcam._cli_common import EXIT_DEVICE, EXIT_USER, CliError
from seedcam.discovery import PORT_ENV, resolve_url
from seedcam.errors import LinkBroken
from seedcam.transport.url_options import TransportUrl, parse_transport_url

__all__ = ["BAUD_ENV", "open_sensor", "sensor_url"]

log = logging.getLogger(__name__)

#: environment variable holding the default baud rate of a serial port (like esptool's ESPTOOL_BAUD)
BAUD_ENV = "SEEDCAM_BAUD"

_BUSY = (errno.EAGAIN, errno.EWOULDBLOCK, errno.EBUSY)


def _baud(args: argparse.Namespace) -> int | None:
    """``--baud``, else ``$SEEDCAM_BAUD``, else None; a bad value is a usage error naming where it came from."""
    text: str | None = getattr(args, "baud", None)
    where = "-b/--baud"
    if text is None:
        text = os.environ.get(BAUD_ENV, "").strip() or None
        where = f"${BAUD_ENV}"
    if text is None:
        return None
    digits = text.strip()
    if not digits.isdigit() or int(digits) <= 0:
        raise CliError(f"bad baud rate {text!r} from {where}: a whole number of bit/s above 0, e.g. 115200", EXIT_USER)
    return int(digits)


def _is_serial(url: TransportUrl) -> bool:
    return "://" not in url.base


def _origin(args: argparse.Namespace) -> str:
    """Where the port came from, for messages: `` (from $SEEDCAM_PORT)`` or nothing."""
    if not args.port and not args.serial and os.environ.get(PORT_ENV, "").strip():
        return f" (from ${PORT_ENV})"
    return ""


def sensor_url(args: argparse.Namespace) -> str:
    """The URL the command opens: the port, with the baud rate and ``--trace`` applied.

    Raises:
        NoSensorFound: no port given and not exactly one sensor found.
        CliError: a bad ``--baud`` or ``$SEEDCAM_BAUD`` (exit 1).
        ValueError: the URL's options are malformed.
    """
    baud = _baud(args)
    parsed = parse_transport_url(resolve_url(args.port, serial=args.serial))
    if baud is not None and parsed.baud is None:  # ?baud= in the URL wins
        if _is_serial(parsed):
            parsed = parsed.with_baud(baud)
        else:
            log.info("baud rate %d not used: %s is not a serial port", baud, parsed.base)
    if getattr(args, "trace", False):
        parsed = parsed.with_trace()
    return str(parsed)


def open_sensor(args: argparse.Namespace) -> seedcam.Sensor:
    """Open the sensor the arguments name (``--port``, ``--baud``, ``--serial``, ``--timeout``, ``--trace``).

    Raises:
        CliError: a bad baud rate (exit 1); a serial port that is busy or missing (exit 2).
        NoSensorFound: no port given and not exactly one sensor found.
        LinkBroken, SensorTimeout: the link failed or the sensor did not answer.
    """
    url = sensor_url(args)
    try:
        return seedcam.open(url, timeout=args.timeout)
    except LinkBroken as exc:
        parsed = parse_transport_url(url)
        if exc.strerror is None or not _is_serial(parsed):  # not an OS error of the port itself
            raise
        if exc.errno is None:  # pyserial's own complaint, e.g. "Could not configure port: ..."
            reason = exc.strerror.rpartition(f"{parsed.base}: ")[2]
        elif exc.errno in _BUSY:
            reason = f"in use by another program ({os.strerror(exc.errno)})"
        else:
            reason = os.strerror(exc.errno)
        raise CliError(f"port {parsed.base}{_origin(args)} busy or missing: {reason}", EXIT_DEVICE) from exc

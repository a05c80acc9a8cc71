"""Which port the ``seedcam`` CLI opens, at which baud rate, and what it says when it cannot.

The port comes from ``-p/--port``, else ``$SEEDCAM_PORT``, else the CLI's config
file (:mod:`seedcam._cli_config`), else discovery; the baud rate of a serial port
from the URL's ``?baud=``, else ``-b/--baud``, else ``$SEEDCAM_BAUD``, else the
config file, else the transport's default (921600). A port that cannot be
opened is one line, like esptool's: ``port /dev/ttyUSB0 busy or missing: <reason>``.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os

import seedcam
from seedcam._cli_common import EXIT_DEVICE, EXIT_USER, CliError
from seedcam._cli_config import ToolConfig, load_tool_config
from seedcam.discovery import PORT_ENV, resolve_url
from seedcam.errors import LinkBroken
from seedcam.transport.url_options import TransportUrl, parse_transport_url

__all__ = ["BAUD_ENV", "open_sensor", "sensor_url"]

log = logging.getLogger(__name__)

#: environment variable holding the default baud rate of a serial port (like esptool's ESPTOOL_BAUD)
BAUD_ENV = "SEEDCAM_BAUD"

_BUSY = (errno.EAGAIN, errno.EWOULDBLOCK, errno.EBUSY)


def _baud(args: argparse.Namespace, config: ToolConfig) -> int | None:
    """``--baud``, else ``$SEEDCAM_BAUD``, else the config file's, else None.

    Raises:
        CliError: a bad value, naming where it came from (exit 1).
    """
    text: str | None = getattr(args, "baud", None)
    where = "-b/--baud"
    if text is None:
        text = os.environ.get(BAUD_ENV, "").strip() or None
        where = f"${BAUD_ENV}"
    if text is None:
        return config.baud
    digits = text.strip()
    if not digits.isdigit() or int(digits) <= 0:
        raise CliError(f"bad baud rate {text!r} from {where}: a whole number of bit/s above 0, e.g. 115200", EXIT_USER)
    return int(digits)


def _is_serial(url: TransportUrl) -> bool:
    return "://" not in url.base


def _origin(args: argparse.Namespace, config: ToolConfig) -> str:
    """Where the port came from, for messages: `` (from $SEEDCAM_PORT)``, the config file, or nothing."""
    if args.port or args.serial:
        return ""
    if os.environ.get(PORT_ENV, "").strip():
        return f" (from ${PORT_ENV})"
    return f" (from {config.path})" if config.port else ""


def sensor_url(args: argparse.Namespace) -> str:
    """The URL the command opens: the port, with the baud rate and ``--trace`` applied.

    Raises:
        NoSensorFound: no port given and not exactly one sensor found.
        CliError: a bad ``--baud``, ``$SEEDCAM_BAUD`` or config file (exit 1).
        ValueError: the URL's options are malformed.
    """
    config = load_tool_config()
    baud = _baud(args, config)
    port = args.port
    if not port and not args.serial and not os.environ.get(PORT_ENV, "").strip():
        port = config.port  # after the command line and the environment, before discovery
    parsed = parse_transport_url(resolve_url(port, serial=args.serial))
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
        origin = _origin(args, load_tool_config())
        raise CliError(f"port {parsed.base}{origin} busy or missing: {reason}", EXIT_DEVICE) from exc

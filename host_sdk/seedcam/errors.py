"""The single error hierarchy of seedcam, shared by the SDK, firmware and tools.

Every error a library call lets escape is a :class:`SensorError`. Subclasses
also inherit the matching built-in exception, so ``except TimeoutError`` and
``except OSError`` keep working in code that does not know seedcam.
Bad arguments raise plain :class:`ValueError`.
"""

from __future__ import annotations

__all__ = [
    "SensorError",
    "SensorTimeout",
    "LinkBroken",
    "PeerClosed",
    "ProtocolError",
    "RpcError",
    "BundleError",
    "SignatureError",
    "BrokerError",
    "CatalogError",
    "UpdateRefused",
    "NoSensorFound",
    "DeviceMismatch",
    "ProtocolVersionMismatch",
    "RecordingError",
]


class SensorError(Exception):
    """Root of every error raised by seedcam."""


class SensorTimeout(SensorError, TimeoutError):
    """A blocking call did not complete within its timeout."""


class LinkBroken(SensorError, OSError):
    """The transport is closed, vanished or failed (cable pulled, port gone)."""


class PeerClosed(LinkBroken):
    """The other end went away: end of file (the other side closed, or a USB serial adapter was unplugged),
    a pty whose other side was closed, a connection reset, a USB host that unconfigured the device.

    Often the ordinary end of a session rather than a fault: the link may be opened again.
    """


class ProtocolError(SensorError):
    """The peer sent something that violates the seedcam protocol."""


class ProtocolVersionMismatch(ProtocolError):
    """The device speaks another seedcam protocol version than this host package.

    The session stops at the first intact frame of another version; the message names both.

    Attributes:
        device_version: the version of the device's frames.
        host_version: the version this package speaks.
    """

    def __init__(self, device_version: int, host_version: int) -> None:
        newer = "host package" if device_version > host_version else "firmware"
        super().__init__(
            f"the device speaks seedcam protocol {device_version}, this host package protocol {host_version}: "
            f"update the {newer} so both speak the same version"
        )
        self.device_version = device_version
        self.host_version = host_version


class RpcError(SensorError):
    """The device answered a request with a non-OK status code.

    Attributes:
        status: the device's status code name, e.g. ``"INVALID_ARGUMENT"``.
        code: the numeric status code from the schema.
        detail: the device's human-readable message.
    """

    def __init__(self, status: str, code: int, detail: str) -> None:
        super().__init__(f"device answered {status}: {detail}" if detail else f"device answered {status}")
        self.status = status
        self.code = code
        self.detail = detail


class BundleError(SensorError):
    """A model bundle is malformed, mismatched or fails its checks."""


class SignatureError(BundleError):
    """A signature does not pass (a bundle's, an ``ota/set`` request's).

    Attributes:
        reason: ``unsigned``, ``unknown_key`` or ``bad_signature``.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class CatalogError(SensorError):
    """A model catalog or a bundle fetched from it cannot be trusted or used.

    Raised by :mod:`seedcam.catalog` before anything goes to a sensor: the index or its
    signature cannot be read, the signature does not verify with a trusted key, an entry is
    malformed or absent, or a downloaded bundle differs from its entry (size, sha256) or
    fails its own checks and signature.
    """


class BrokerError(SensorError, OSError):
    """The MQTT broker of :mod:`seedcam.fleet` cannot be reached or refused the connection.

    Attributes:
        refused: the broker answered and refused (bad user name or password, not
            authorized), so trying again will not help; False when it was unreachable.
    """

    def __init__(self, message: str, *, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


class UpdateRefused(BundleError):
    """The sensor refused an update (a bundle, or a slot request such as a rollback).

    Raised on the host by :mod:`seedcam.updates` when the device answers an
    update request with a refusal, or when a flashed firmware did not confirm
    its health and the sensor went back to the previous one (``reverted``).

    Attributes:
        reason: the device's machine-readable cause: ``bad_signature``, ``unsigned``,
            ``unknown_key``, ``counter``, ``target``, ``truncated``, ``sha256``,
            ``not_tflite``, ``input_shape``, ``selftest_nan``, ``selftest_mismatch``,
            ``model``, ``no_space``, ``busy``, ``header`` (outside the header's schema
            or bounds), ``identity`` (the header names another model or firmware than
            its manifest or wheel), ``reverted`` (a firmware that did not confirm its
            health) ...
        status: the device's status code name, e.g. ``"INVALID_ARGUMENT"``.
        detail: the device's message.
    """

    def __init__(self, reason: str, status: str, detail: str) -> None:
        super().__init__(f"update refused ({reason}): {detail}")
        self.reason = reason
        self.status = status
        self.detail = detail


class NoSensorFound(SensorError, LookupError):
    """Discovery found no sensor, or several where exactly one was needed."""


class DeviceMismatch(SensorError):
    """The link now leads to another device than the one first connected to.

    Raised when a reconnect (or a firmware restart behind a port that stayed open)
    brings up a device whose serial number or board differs from the one the
    session first met: another board took over a ``--pty-link`` symlink or a USB
    serial path. The session stops: calls that waited for the link, and every later
    call, raise this error, and a push in progress stops instead of resuming on the
    other device. An empty serial number or board (a device that does not report
    one) is not compared.

    Attributes:
        url: the port or URL.
        expected_serial, expected_board: the device first connected to.
        found_serial, found_board: the device there now.
    """

    def __init__(
        self, url: str, expected_serial: str, expected_board: str, found_serial: str, found_board: str
    ) -> None:
        super().__init__(
            f"{url} leads to another device now: expected serial {expected_serial or '(none)'} on board "
            f"{expected_board or '(none)'}, found serial {found_serial or '(none)'} on board {found_board or '(none)'}"
        )
        self.url = url
        self.expected_serial = expected_serial
        self.expected_board = expected_board
        self.found_serial = found_serial
        self.found_board = found_board


class RecordingError(SensorError):
    """A recording cannot be written or read: not an MCAP file, no seedcam topics, a full disk.

    A recording cut short (a crash, a full disk) is not an error to read: the reader
    yields what its complete chunks hold and says that it was cut.
    """

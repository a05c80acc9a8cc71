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
    "ProtocolError",
    "RpcError",
    "BundleError",
    "NoSensorFound",
]


class SensorError(Exception):
    """Root of every error raised by seedcam."""


class SensorTimeout(SensorError, TimeoutError):
    """A blocking call did not complete within its timeout."""


class LinkBroken(SensorError, OSError):
    """The transport is closed, vanished or failed (cable pulled, port gone)."""


class ProtocolError(SensorError):
    """The peer sent something that violates the seedcam protocol."""


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


class NoSensorFound(SensorError, LookupError):
    """Discovery found no sensor, or several where exactly one was needed."""

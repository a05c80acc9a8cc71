"""Firmware-side errors; all rooted at :class:`seedcam.SensorError`."""

from __future__ import annotations

from seedcam._proto import seedcam_pb2 as pb
from seedcam.errors import BundleError, SensorError

__all__ = [
    "BundleError",
    "CameraError",
    "ConfigError",
    "FirmwareError",
    "ModelError",
    "ReadOnlyConfigKey",
    "TaskUnavailable",
    "UnknownConfigKey",
    "UpdateRefusal",
]


class FirmwareError(SensorError):
    """Root of errors raised inside the firmware."""


class ConfigError(FirmwareError, ValueError):
    """The configuration file or a config change is invalid (names the key and file)."""


class UnknownConfigKey(ConfigError, KeyError):
    """A config section or key that does not exist (the message names it and suggests one)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class ReadOnlyConfigKey(ConfigError):
    """A host tried to change a key it may not change over the link (``updates.*``, ...)."""


class TaskUnavailable(ConfigError):
    """A task was asked for whose model did not load (answered ``UNAVAILABLE`` to the host)."""


class CameraError(FirmwareError, OSError):
    """A camera source cannot be opened or stopped delivering frames."""


class ModelError(FirmwareError):
    """A model cannot be loaded or run (missing file, not TFLite, wrong shape...).

    Attributes:
        reason: machine-readable cause: ``not_tflite``, ``input_shape`` or ``model`` (anything else).
    """

    def __init__(self, message: str, reason: str = "model") -> None:
        super().__init__(message)
        self.reason = reason


class UpdateRefusal(FirmwareError, BundleError):
    """The device's decision to refuse an update bundle or a slot request, and the answer it sends.

    The update service raises it and answers the host with its reason and status;
    the host raises :class:`seedcam.UpdateRefused` when that answer arrives.

    Attributes:
        reason: machine-readable cause sent to the host (``bad_signature``, ``counter``,
            ``not_tflite``, ``selftest_nan`` ...; see ``UpdateResponse.reason`` in the schema).
        status: the status code to answer with (a ``seedcam.v1.StatusCode`` value).
    """

    def __init__(self, reason: str, message: str, status: pb.StatusCode = pb.STATUS_INVALID_ARGUMENT) -> None:
        super().__init__(message)
        self.reason = reason
        self.status = status

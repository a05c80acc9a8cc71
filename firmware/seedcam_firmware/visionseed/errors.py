"""The one error the VisionSeed adapter raises: a refusal carrying VisionSeed's return code."""

from __future__ import annotations

from seedcam_firmware.errors import FirmwareError
from seedcam_firmware.visionseed._proto import visionseed_pb2 as vs

__all__ = ["VisionSeedRequestError"]


class VisionSeedRequestError(FirmwareError):
    """A VisionSeed request is refused; ``code`` is the ``YtRpcResponse.ReturnCode`` to answer with.

    Args:
        code: e.g. ``vs.YtRpcResponse.ERROR_INVALID_PATH``.
        message: why, for the ``strData`` of the answer and the log.
    """

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code

    @property
    def code_name(self) -> str:
        """The return code's name, e.g. ``ERROR_INVALID_PATH``."""
        return vs.YtRpcResponse.ReturnCode.Name(self.code)

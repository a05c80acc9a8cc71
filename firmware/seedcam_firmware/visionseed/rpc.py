"""VisionSeed RPCs onto the device services the native protocol uses.

=====================  =====================================================================
function               seedcam
=====================  =====================================================================
getDeviceInfo (1)      ``strData``: ``VERSION seedcam BOARD SERIAL WxH tasks=.. models=..``
reboot (3)             answers SUCC, then (0.5 s later) the firmware restarts: a new boot, heartbeat 0
getLastError (4)       ``strData``: the last refused request and the link counters
setCameraRotation(13)  ``camera.rotation`` (0/90/180/270, or 1-3 quarter turns); after a reboot
listFile (20)          ``fileListResult`` of ``/`` or ``/models/...`` (at most 100 entries)
uploadFile (21)        chunked, CONTINUE until the last chunk; a ``.tflite`` + ``.json`` pair in
                       ``/models`` becomes a checked model bundle (a new one only; refused
                       with ERROR_PERMISSION while ``updates.public_keys`` are set)
deleteFile (22)        a file, or a bundle no loaded model uses
getConfig (24)         ``filePart.data``: the domain's TOML text
setConfig (25)         ``filePart{path=domain, data=TOML}``
resetConfig (26)       the domain back to its defaults
anything else          ERROR_NOT_EXIST ("not supported"), with the reason in ``strData``
=====================  =====================================================================

setExposure is answered ERROR_NOT_EXIST too: none of the camera backends
(synthetic, video, folder, V4L2 through OpenCV) offers manual exposure control.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol, cast

from seedcam._proto import seedcam_pb2 as pb
from seedcam.types import ConfigValue, DeviceInfo, Health, ModelInfo
from seedcam_firmware.config import FirmwareConfig
from seedcam_firmware.errors import ConfigError, ReadOnlyConfigKey, TaskUnavailable, UnknownConfigKey
from seedcam_firmware.rpc import RequestFailed
from seedcam_firmware.visionseed._proto import visionseed_pb2 as vs
from seedcam_firmware.visionseed.config_text import config_text, set_config_text
from seedcam_firmware.visionseed.custom_model import (
    DESCRIPTOR_SUFFIX,
    MODEL_SUFFIX,
    import_model_pair,
    recover_models_dir,
)
from seedcam_firmware.visionseed.errors import VisionSeedRequestError
from seedcam_firmware.visionseed.files import DeviceFiles
from seedcam_firmware.visionseed.link import RpcOutcome

__all__ = ["PRODUCT", "REBOOT_DELAY_S", "VisionSeedRpc", "VisionSeedServices"]

log = logging.getLogger(__name__)

PRODUCT = "seedcam"  #: the second token of getDeviceInfo
REBOOT_DELAY_S = 0.5  #: between answering reboot and going down, so the answer is read first
_Code = vs.YtRpcResponse
_Fn = vs.YtRpc
_ROTATIONS = (0, 90, 180, 270)
_STATUS_CODES: dict[int, vs.YtRpcResponse.ReturnCode] = {
    pb.STATUS_INVALID_ARGUMENT: _Code.ERROR_PARAMETERS,
    pb.STATUS_NOT_FOUND: _Code.ERROR_NOT_EXIST,
    pb.STATUS_UNSUPPORTED: _Code.ERROR_NOT_EXIST,
}


class VisionSeedServices(Protocol):
    """What the VisionSeed handler needs of the daemon: the native services plus a restart."""

    config: FirmwareConfig

    def device_info(self) -> DeviceInfo: ...

    def health(self) -> Health: ...

    def config_get(self, key: str) -> ConfigValue: ...

    def config_set(self, key: str, value: object) -> ConfigValue: ...

    def config_reset(self, key: str) -> ConfigValue: ...

    def list_models(self) -> Sequence[ModelInfo]: ...

    def request_restart(self) -> None: ...


def _token(text: str) -> str:
    """One space-free token (clients split the device info on spaces)."""
    return "_".join(str(text).split()) or "-"


class VisionSeedRpc:
    """Answers VisionSeed RPCs; never raises (every failure is a return code with its reason).

    Args:
        services: the daemon.
        files: the device's file area (default: the models folder of ``services.config``).
    """

    def __init__(self, services: VisionSeedServices, files: DeviceFiles | None = None) -> None:
        self._services = services
        self._boot_models = services.config.models  # where the loaded models came from (changes wait for a reboot)
        self.files = files or DeviceFiles(Path(services.config.models.dir), protected=self._loaded_bundles)
        self._lock = threading.Lock()
        self.last_error = ""
        for action in recover_models_dir(self.files.models_dir):  # what a power cut left half done
            log.warning("models folder: %s", action)
        self._handlers: dict[int, Callable[[vs.YtRpc], RpcOutcome]] = {
            _Fn.getDeviceInfo: self._device_info,
            _Fn.reboot: self._reboot,
            _Fn.getLastError: self._last_error,
            _Fn.setCameraRotation: self._set_rotation,
            _Fn.listFile: self._list_file,
            _Fn.uploadFile: self._upload_file,
            _Fn.deleteFile: self._delete_file,
            _Fn.getConfig: self._get_config,
            _Fn.setConfig: self._set_config,
            _Fn.resetConfig: self._reset_config,
        }

    def __call__(self, rpc: vs.YtRpc) -> RpcOutcome:
        name = _Fn.Function.Name(rpc.func) if rpc.func in _Fn.Function.values() else str(rpc.func)
        handler = self._handlers.get(rpc.func)
        if handler is None:
            return self._refused(name, _Code.ERROR_NOT_EXIST, f"{name} is not supported by seedcam"), None
        try:
            with self._lock:  # one request at a time, as on the original device
                return handler(rpc)
        except VisionSeedRequestError as exc:
            return self._refused(name, exc.code, str(exc)), None
        except RequestFailed as exc:
            return self._refused(name, _STATUS_CODES.get(exc.status, _Code.ERROR_OTHER), str(exc)), None
        except UnknownConfigKey as exc:
            return self._refused(name, _Code.ERROR_NOT_EXIST, str(exc)), None
        except TaskUnavailable as exc:
            return self._refused(name, _Code.ERROR_OTHER, str(exc)), None
        except ReadOnlyConfigKey as exc:
            return self._refused(name, _Code.ERROR_PERMISSION, str(exc)), None
        except ConfigError as exc:
            return self._refused(name, _Code.ERROR_PARAMETERS, str(exc)), None
        except Exception as exc:  # a handler bug answers ERROR_OTHER instead of killing the link
            log.exception("VisionSeed %s failed", name)
            return self._refused(name, _Code.ERROR_OTHER, f"{type(exc).__name__}: {exc}"), None

    def _refused(self, name: str, code: int, message: str) -> vs.YtRpcResponse:
        self.last_error = f"{name}: {_Code.ReturnCode.Name(code)}: {message}"
        log.info("VisionSeed %s refused: %s", name, self.last_error)
        return vs.YtRpcResponse(code=cast(_Code.ReturnCode, code), strData=message[:1000])

    def _loaded_bundles(self) -> Iterator[Path]:
        for model in self._services.list_models():
            try:
                yield self._boot_models.manifest_path(model.task).parent
            except ConfigError:
                continue

    # ------------------------------------------------------------------ device

    def _device_info(self, _: vs.YtRpc) -> RpcOutcome:
        info = self._services.device_info()
        tokens = [
            info.firmware_version,
            PRODUCT,
            info.board,
            info.serial_number,
            f"{info.frame_width}x{info.frame_height}",
            f"boot={info.boot_id}",
            f"tasks={','.join(info.tasks_enabled) or '-'}",
            f"models={','.join(m.id for m in info.models if m.active) or '-'}",
        ]
        return vs.YtRpcResponse(code=_Code.SUCC, strData=" ".join(_token(t) for t in tokens)), None

    def _reboot(self, _: vs.YtRpc) -> RpcOutcome:
        # the answer must reach the host before the link closes (a pty's unread bytes die with it)
        timer = threading.Timer(REBOOT_DELAY_S, self._services.request_restart)
        timer.daemon = True
        return vs.YtRpcResponse(code=_Code.SUCC), timer.start

    def _last_error(self, _: vs.YtRpc) -> RpcOutcome:
        health = self._services.health()
        link = health.link
        text = (
            f"last_error={_token(self.last_error or 'none')} frames_rx={link.frames_rx} "
            f"crc_errors={link.crc_errors} decode_errors={link.decode_errors} oversize={link.oversize} "
            f"resyncs={link.resyncs} bytes_dropped={link.bytes_dropped} "
            f"undecodable_requests={health.undecodable_requests} frames_dropped={health.frames_dropped}"
        )
        return vs.YtRpcResponse(code=_Code.SUCC, strData=text), None

    def _set_rotation(self, rpc: vs.YtRpc) -> RpcOutcome:
        if rpc.WhichOneof("params") != "intParams":
            raise VisionSeedRequestError(_Code.ERROR_PARAMETERS, "setCameraRotation takes intParams")
        value = rpc.intParams
        degrees = value * 90 if value in (1, 2, 3) else value
        if degrees not in _ROTATIONS:
            raise VisionSeedRequestError(
                _Code.ERROR_PARAMETERS, f"rotation {value} is not 0/90/180/270 degrees (or 1-3 quarter turns)"
            )
        changed = self._services.config_set("camera.rotation", degrees)
        note = "takes effect after a reboot" if changed.restart_required else "applied"
        return vs.YtRpcResponse(code=_Code.SUCC, strData=f"camera.rotation={degrees} {note}"), None

    # ------------------------------------------------------------------ files

    def _list_file(self, rpc: vs.YtRpc) -> RpcOutcome:
        return vs.YtRpcResponse(code=_Code.SUCC, fileListResult=self.files.list(rpc.strParams)), None

    def _upload_file(self, rpc: vs.YtRpc) -> RpcOutcome:
        if rpc.WhichOneof("params") != "filePart":
            raise VisionSeedRequestError(_Code.ERROR_PARAMETERS, "uploadFile takes a filePart")
        if self._services.config.updates.public_keys:  # a model must then come as a signed bundle
            raise VisionSeedRequestError(
                _Code.ERROR_PERMISSION, "uploads are off while updates.public_keys are set: push a signed bundle"
            )
        progress = self.files.write_part(rpc.filePart)
        if not progress.done:
            return vs.YtRpcResponse(code=_Code.CONTINUE, intData=progress.received), None
        path = progress.path
        if path.parent == self.files.models_dir and path.suffix in (MODEL_SUFFIX, DESCRIPTOR_SUFFIX):
            model = import_model_pair(self.files.models_dir, path.stem, self._services.config)
            if model is not None:
                text = f"installed model {model.id} ({model.task}, {model.precision}) as /models/{path.stem}"
                return vs.YtRpcResponse(code=_Code.SUCC, strData=text), None
        return vs.YtRpcResponse(code=_Code.SUCC, intData=progress.received), None

    def _delete_file(self, rpc: vs.YtRpc) -> RpcOutcome:
        self.files.delete(rpc.strParams)
        return vs.YtRpcResponse(code=_Code.SUCC), None

    # ------------------------------------------------------------------ config

    def _get_config(self, rpc: vs.YtRpc) -> RpcOutcome:
        domain = rpc.strParams
        data = config_text(self._services, domain).encode()
        part = vs.FilePart(path=domain, totalLength=len(data), offset=0, data=data)
        return vs.YtRpcResponse(code=_Code.SUCC, filePart=part), None

    def _set_config(self, rpc: vs.YtRpc) -> RpcOutcome:
        if rpc.WhichOneof("params") != "filePart":
            raise VisionSeedRequestError(_Code.ERROR_PARAMETERS, "setConfig takes a filePart{path=domain, data}")
        try:
            text = rpc.filePart.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise VisionSeedRequestError(_Code.ERROR_PARAMETERS, f"config text is not UTF-8: {exc}") from exc
        summary = set_config_text(self._services, rpc.filePart.path, text)
        return vs.YtRpcResponse(code=_Code.SUCC, strData=summary), None

    def _reset_config(self, rpc: vs.YtRpc) -> RpcOutcome:
        domain = rpc.strParams.strip()
        self._services.config_reset("" if domain == "seedcam" else domain)
        return vs.YtRpcResponse(code=_Code.SUCC), None

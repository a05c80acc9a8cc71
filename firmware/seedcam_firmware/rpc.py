"""Request dispatch: one handler per request kind, every outcome a status code."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from seedcam._proto import seedcam_pb2 as pb
from seedcam.protocol import codec
from seedcam.types import ConfigValue, DeviceInfo, ModelInfo, Snapshot, TaskList
from seedcam_firmware.errors import ConfigError, FirmwareError, ReadOnlyConfigKey, TaskUnavailable, UnknownConfigKey

__all__ = ["BlackBoxService", "DeviceServices", "RequestFailed", "Dispatcher"]

log = logging.getLogger(__name__)


class RequestFailed(FirmwareError):
    """A service refused a request; carries the status code to answer with."""

    def __init__(self, status: pb.StatusCode, message: str) -> None:
        super().__init__(message)
        self.status = status


class DeviceServices(Protocol):
    """What the daemon offers to the host.

    Methods raise :class:`RequestFailed`, :class:`UnknownConfigKey` (answered NOT_FOUND),
    :class:`TaskUnavailable` (a task whose model did not load; answered UNAVAILABLE)
    or :class:`ConfigError` (answered INVALID_ARGUMENT).
    """

    def device_info(self) -> DeviceInfo: ...

    def config_get(self, key: str) -> ConfigValue: ...

    def config_set(self, key: str, value: object) -> ConfigValue: ...

    def config_reset(self, key: str) -> ConfigValue: ...

    def list_models(self) -> Sequence[ModelInfo]: ...

    def select_tasks(self, tasks: Sequence[str]) -> TaskList: ...

    def snapshot(self, quality: int) -> Snapshot: ...

    def reboot(self) -> None:
        """Restart the firmware once the answer has gone out (it comes back with a new boot id)."""
        ...


class BlackBoxService(Protocol):
    """The black box's host requests (:class:`seedcam_firmware.blackbox.BlackBox`)."""

    def list(self) -> pb.BlackBoxList: ...

    def read(self, name: str, offset: int, max_bytes: int) -> pb.BlackBoxPiece: ...

    def trigger(self, reason: str) -> pb.BlackBoxFileInfo: ...


class Dispatcher:
    """Turns a :class:`Request` into a :class:`Response`; never raises.

    Args:
        services: what the requests reach.
        snapshot_chunk: the most JPEG bytes one snapshot answer carries (0: the whole
            JPEG at once). On a slow line a snapshot then travels in pieces the host asks
            for one by one, and the results keep flowing between them; the JPEG is held
            for the continuations until the next new snapshot.
        preview: answers preview requests (:meth:`seedcam_firmware.preview.PreviewStream.request`);
            None: they are answered ``UNSUPPORTED``.
        blackbox: answers the black-box requests (list, pull in pieces of at most
            ``snapshot_chunk`` bytes, trigger); None: they are answered ``UNSUPPORTED``.

    Raises:
        ValueError: a negative ``snapshot_chunk``.
    """

    def __init__(
        self,
        services: DeviceServices,
        *,
        snapshot_chunk: int = 0,
        preview: Callable[[pb.PreviewRequest], pb.PreviewSettings] | None = None,
        blackbox: BlackBoxService | None = None,
    ) -> None:
        if snapshot_chunk < 0:
            raise ValueError("snapshot_chunk must be >= 0")
        self._services = services
        self._preview = preview
        self._blackbox = blackbox
        self._snapshot_chunk = snapshot_chunk
        self._held_snapshot: Snapshot | None = None  # of the latest new snapshot request

    def __call__(self, request: pb.Request) -> pb.Response:
        kind = request.WhichOneof("body")
        handler = getattr(self, f"_on_{kind}", None) if kind else None
        if handler is None:
            return pb.Response(status=pb.STATUS_UNSUPPORTED, message=f"request {kind or '(empty)'} is not supported")
        try:
            return handler(getattr(request, kind))
        except RequestFailed as exc:
            return pb.Response(status=exc.status, message=str(exc))
        except UnknownConfigKey as exc:
            return pb.Response(status=pb.STATUS_NOT_FOUND, message=str(exc))
        except TaskUnavailable as exc:
            return pb.Response(status=pb.STATUS_UNAVAILABLE, message=str(exc))
        except ReadOnlyConfigKey as exc:  # updates.* and friends: only the device's config file sets them
            return pb.Response(status=pb.STATUS_FAILED_PRECONDITION, message=str(exc))
        except ConfigError as exc:
            return pb.Response(status=pb.STATUS_INVALID_ARGUMENT, message=str(exc))
        except Exception as exc:  # a handler bug answers INTERNAL instead of killing the link
            log.exception("request %s failed", kind)
            return pb.Response(status=pb.STATUS_INTERNAL, message=f"{type(exc).__name__}: {exc}")

    def _on_info(self, _: pb.InfoRequest) -> pb.Response:
        response = pb.Response()
        codec.device_info_to_pb(self._services.device_info(), response.info)
        return response

    def _on_ping(self, request: pb.PingRequest) -> pb.Response:
        return pb.Response(pong=pb.Pong(payload=request.payload))

    def _on_reboot(self, _: pb.RebootRequest) -> pb.Response:
        self._services.reboot()  # a host may: it loses only what was not persisted
        return pb.Response()

    def _on_config_get(self, request: pb.ConfigGetRequest) -> pb.Response:
        return _config_response(self._services.config_get(request.key))

    def _on_config_set(self, request: pb.ConfigSetRequest) -> pb.Response:
        try:
            value = json.loads(request.value_json)
        except json.JSONDecodeError as exc:
            raise RequestFailed(pb.STATUS_INVALID_ARGUMENT, f"value for {request.key!r} is not JSON: {exc}") from exc
        except RecursionError:  # "[[[[...": no config value nests more than a table of lists
            raise RequestFailed(
                pb.STATUS_INVALID_ARGUMENT, f"value for {request.key!r} nests too deeply for a config value"
            ) from None
        return _config_response(self._services.config_set(request.key, value))

    def _on_config_reset(self, request: pb.ConfigResetRequest) -> pb.Response:
        return _config_response(self._services.config_reset(request.key))

    def _on_list_models(self, _: pb.ListModelsRequest) -> pb.Response:
        response = pb.Response(models=pb.ModelList())
        codec.model_list_to_pb(self._services.list_models(), response.models)
        return response

    def _on_select_tasks(self, request: pb.SelectTasksRequest) -> pb.Response:
        return pb.Response(tasks=codec.task_list_to_pb(self._services.select_tasks(list(request.tasks))))

    def _on_preview(self, request: pb.PreviewRequest) -> pb.Response:
        if self._preview is None:
            raise RequestFailed(pb.STATUS_UNSUPPORTED, "this device has no preview stream")
        return pb.Response(preview=self._preview(request))

    def _blackbox_service(self) -> BlackBoxService:
        if self._blackbox is None:
            raise RequestFailed(pb.STATUS_UNSUPPORTED, "this device has no black box")
        return self._blackbox

    def _on_blackbox_list(self, _: pb.BlackBoxListRequest) -> pb.Response:
        return pb.Response(blackbox_list=self._blackbox_service().list())

    def _on_blackbox_pull(self, request: pb.BlackBoxPullRequest) -> pb.Response:
        limits = [n for n in (request.max_bytes, self._snapshot_chunk) if n > 0]
        piece = self._blackbox_service().read(request.name, request.offset, min(limits) if limits else 0)
        return pb.Response(blackbox_piece=piece)

    def _on_blackbox_trigger(self, request: pb.BlackBoxTriggerRequest) -> pb.Response:
        return pb.Response(blackbox_file=self._blackbox_service().trigger(request.reason))

    def _on_snapshot(self, request: pb.SnapshotRequest) -> pb.Response:
        if request.quality > 100:
            raise RequestFailed(pb.STATUS_INVALID_ARGUMENT, "JPEG quality must be 0..100")
        if request.offset:  # a continuation of the held snapshot (frame 0 is a frame like any other)
            snapshot = self._held_snapshot
            if snapshot is None or snapshot.frame_id != request.frame_id:
                raise RequestFailed(
                    pb.STATUS_FAILED_PRECONDITION,
                    f"the snapshot of frame {request.frame_id} is no longer held; take a new one",
                )
        else:
            snapshot = self._held_snapshot = self._services.snapshot(request.quality)
        size = len(snapshot.jpeg)
        if request.offset > size:
            raise RequestFailed(pb.STATUS_INVALID_ARGUMENT, f"offset {request.offset} past the {size}-byte JPEG")
        limits = [n for n in (request.max_bytes, self._snapshot_chunk) if n > 0]
        end = min(size, request.offset + min(limits)) if limits else size
        answer = codec.snapshot_to_pb(replace(snapshot, jpeg=snapshot.jpeg[request.offset : end]))
        answer.offset, answer.total_size = request.offset, size
        return pb.Response(snapshot=answer)


def _config_response(value: ConfigValue) -> pb.Response:
    return pb.Response(config=codec.config_value_to_pb(value))

"""The sensor's calls about its configuration and models: config get/set/reset, models, tasks.

A part of :class:`seedcam.Sensor` (its base class here), kept apart so the sensor's own
module stays about the link, results and the device's state.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from seedcam._proto import seedcam_pb2 as pb
from seedcam.protocol import codec
from seedcam.protocol.framing import Frame
from seedcam.types import ConfigValue, ModelInfo, TaskList

__all__ = ["ConfigCalls"]


class ConfigCalls:
    """Config, model and task calls of a :class:`seedcam.Sensor`."""

    if TYPE_CHECKING:  # provided by Sensor

        def _call(
            self,
            request: pb.Request,
            timeout: float | None = None,
            on_response: Callable[[Frame], None] | None = None,
        ) -> pb.Response: ...

    def config_get(self, key: str = "", timeout: float | None = None) -> object:
        """Read a config value by dotted key (``"camera.fps"``), a section, or all (``""``).

        Raises:
            RpcError: ``NOT_FOUND`` for an unknown key.
        """
        response = self._call(pb.Request(config_get=pb.ConfigGetRequest(key=key)), timeout)
        return codec.config_value_from_pb(response.config).value

    def config_set(self, key: str, value: object, timeout: float | None = None) -> ConfigValue:
        """Change a config value; returns what the device stored and whether it needs a restart.

        Raises:
            ValueError: ``value`` cannot be encoded as JSON.
            RpcError: ``NOT_FOUND`` (unknown key) or ``INVALID_ARGUMENT`` (bad value).
        """
        try:
            encoded = json.dumps(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"config value for {key!r} is not JSON-encodable: {exc}") from exc
        response = self._call(pb.Request(config_set=pb.ConfigSetRequest(key=key, value_json=encoded)), timeout)
        return codec.config_value_from_pb(response.config)

    def config_reset(self, key: str = "", timeout: float | None = None) -> ConfigValue:
        """Reset a key, a section or (``""``) the whole config to defaults."""
        response = self._call(pb.Request(config_reset=pb.ConfigResetRequest(key=key)), timeout)
        return codec.config_value_from_pb(response.config)

    def models(self, timeout: float | None = None) -> tuple[ModelInfo, ...]:
        """List the model bundles on the device."""
        response = self._call(pb.Request(list_models=pb.ListModelsRequest()), timeout)
        return codec.model_list_from_pb(response.models)

    def class_labels(self, task: str = "detect", timeout: float | None = None) -> tuple[str, ...]:
        """The class names of the model that runs ``task``, by class id: all of them, not only those seen.

        Asks the device (:meth:`models`), so a model pushed since the sensor was opened counts.
        ``labels[class_id]`` is the label a :class:`~seedcam.types.Detection` (``detect``) or
        :class:`~seedcam.types.Classification` (``classify``) of that model carries.

        Returns:
            The active model's :attr:`~seedcam.types.ModelInfo.labels` (the first loaded one when
            none is active); empty when no model runs the task or the firmware names no labels.

        Raises:
            SensorTimeout, LinkBroken: the call failed.
        """
        models = [m for m in self.models(timeout) if m.task == task]
        chosen = [m for m in models if m.active] or models
        return chosen[0].labels if chosen else ()

    def select_tasks(self, tasks: list[str] | tuple[str, ...], timeout: float | None = None) -> TaskList:
        """Choose which tasks run (e.g. ``["lane"]``); an empty list turns all off.

        Raises:
            RpcError: ``INVALID_ARGUMENT`` for an unknown task.
        """
        response = self._call(pb.Request(select_tasks=pb.SelectTasksRequest(tasks=list(tasks))), timeout)
        return codec.task_list_from_pb(response.tasks)

"""The class names of a sensor's models: ModelInfo.labels over the link and Sensor.class_labels."""

# ruff: noqa: F811  (tests take the fixtures imported from fake_device as parameters)

from __future__ import annotations

from fake_device import (  # noqa: F401 - fixtures
    FakeDevice,
    device,
    make_device,
)

from seedcam.protocol import codec
from seedcam.types import ModelInfo

SIGNS = ("stop", "speed_limit", "turn_left", "turn_right", "crossing", "parking", "plate")


def detector(version: str, labels: tuple[str, ...], *, active: bool) -> ModelInfo:
    return ModelInfo(f"det-v{version}", "det", version, "detect", "int8", active=active, labels=labels)


def test_labels_round_trip_and_default_to_none() -> None:
    info = detector("4.0.0", SIGNS, active=True)
    assert codec.model_info_from_pb(codec.model_info_to_pb(info)) == info
    bare = ModelInfo("lane-int8", "lane", "2.0.0", "lane", "int8")
    assert codec.model_info_from_pb(codec.model_info_to_pb(bare)).labels == ()


def test_class_labels_are_the_active_models_and_follow_a_push(device: FakeDevice) -> None:
    services = device.services
    base = services.models
    services.models = (*base, detector("3.0.0", ("a", "b"), active=False), detector("4.0.0", SIGNS, active=True))
    sensor = device.sensor
    assert sensor.class_labels() == SIGNS  # the active detector's, not the inactive one's
    assert sensor.info().models[-1].labels == SIGNS  # DeviceInfo carries them too (the Hello)
    assert sensor.class_labels("lane") == ()  # a model without class names
    assert sensor.class_labels("classify") == ()  # no model runs the task

    services.models = (*base, detector("5.0.0", ("cone", "person"), active=True))  # a new model since opening
    assert sensor.class_labels("detect") == ("cone", "person")
    services.models = (*base, detector("5.0.0", ("cone",), active=False))  # loaded, its task switched off
    assert sensor.class_labels("detect") == ("cone",)

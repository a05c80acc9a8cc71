"""The topic tree of one sensor under ``{base}/{device_id}/`` (docs/fleet.md describes every payload)."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Topics", "check_topic_part", "device_id_from_serial"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def check_topic_part(value: str, what: str) -> str:
    """``value`` if it can stand in a topic (no wildcard, no empty level, no leading ``$``).

    Raises:
        ValueError: it cannot, naming ``what``.
    """
    if not value or any(c in value for c in "+#\x00") or value.startswith("$"):
        raise ValueError(f"{what} {value!r}: not usable in an MQTT topic (empty, a wildcard, NUL or a leading $)")
    if any(not level for level in value.split("/")):
        raise ValueError(f"{what} {value!r}: an empty topic level")
    return value


def device_id_from_serial(serial: str) -> str:
    """A topic-safe device id from a serial number (``SC-0001`` stays, odd characters become ``_``)."""
    cleaned = _UNSAFE.sub("_", serial).strip("_")
    return cleaned or "seedcam"


@dataclass(frozen=True)
class Topics:
    """Every topic of one device."""

    base: str
    device_id: str

    def __post_init__(self) -> None:
        check_topic_part(self.base, "topic base")
        check_topic_part(self.device_id, "device id")
        if "/" in self.device_id:
            raise ValueError(f"device id {self.device_id!r}: one topic level, no '/'")

    @property
    def root(self) -> str:
        return f"{self.base}/{self.device_id}"

    @property
    def status(self) -> str:
        """Retained, QoS 1: online / offline (the broker's Last Will), with the boot id."""
        return f"{self.root}/status"

    @property
    def info(self) -> str:
        """Retained: capabilities, firmware and model versions."""
        return f"{self.root}/info"

    @property
    def health(self) -> str:
        """Retained, periodic: the device's health and the bridge's counters."""
        return f"{self.root}/health"

    @property
    def results(self) -> str:
        """Every result as protobuf ``seedcam.v1.Result`` bytes; sequence number in a user property."""
        return f"{self.root}/results"

    @property
    def results_json(self) -> str:
        """The optional JSON form of every result (with ``seq``)."""
        return f"{self.root}/results/json"

    @property
    def events(self) -> str:
        """QoS 1: detection appeared / changed / ended, lane lost / found, stop sign, plate read."""
        return f"{self.root}/events"

    @property
    def summary(self) -> str:
        """Retained, at most once a second: lane offset, detection count, last plate (Home Assistant reads it)."""
        return f"{self.root}/summary"

    @property
    def snapshot(self) -> str:
        """Retained JPEG bytes of the latest snapshot taken on request."""
        return f"{self.root}/snapshot"

    @property
    def config_set(self) -> str:
        """Desired config: ``{"version": N, "config": {"camera.fps": 15}}``."""
        return f"{self.root}/config/set"

    @property
    def config_state(self) -> str:
        """Retained, QoS 1: what the device reported for the last desired config."""
        return f"{self.root}/config/state"

    def cmd(self, name: str) -> str:
        """A request; the answer goes to the MQTT 5 response topic with its correlation data."""
        return f"{self.root}/cmd/{name}"

    @property
    def cmd_filter(self) -> str:
        return f"{self.root}/cmd/+"

    @property
    def ota_set(self) -> str:
        """A catalog entry to install (name, version, sha256, signature), never the bytes."""
        return f"{self.root}/ota/set"

    @property
    def ota_state(self) -> str:
        """Retained, QoS 1: the progress and outcome of the last ota/set."""
        return f"{self.root}/ota/state"

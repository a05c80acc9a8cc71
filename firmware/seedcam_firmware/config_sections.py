"""The sections of the firmware configuration, and the whole of it.

The firmware's own sections are declared here; the ``models`` keys of the
tasks, the default ``tasks.enabled`` and the tasks' own sections come from the
task catalog (:mod:`seedcam_firmware.task_catalog`), so a new task needs no
edit here. :data:`SECTIONS` and :data:`KEYS` list what exists, in file order.
Reading, changing and writing a config is :mod:`seedcam_firmware.config`.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar, TypeVar

from seedcam.protocol.compact import TIMINGS_MODES
from seedcam_firmware import factory
from seedcam_firmware.config_schema import (
    KeySpec,
    Section,
    check_device,
    check_fourcc,
    check_link_url,
    check_name,
    check_serial,
    default_serial_number,
    section_keys,
    setting,
    unknown_key_error,
)
from seedcam_firmware.task_catalog import KNOWN_TASKS, TASKS

__all__ = [
    "CAMERA_SOURCES",
    "BlackboxConfig",
    "DEFAULT_MODELS_DIR",
    "KEYS",
    "LINK_PROTOCOLS",
    "PRECISIONS",
    "SECTIONS",
    "CameraConfig",
    "DeviceConfig",
    "FirmwareConfig",
    "LinkConfig",
    "ModelsConfig",
    "PipelineConfig",
    "RuntimeConfig",
    "TasksConfig",
    "UpdatesConfig",
]

#: Model variants a bundle may ship (``models.<task>_precision``).
PRECISIONS: tuple[str, ...] = ("int8", "float32")
#: Camera backends known to :func:`seedcam_firmware.camera.factory.open_camera`.
CAMERA_SOURCES: tuple[str, ...] = ("synthetic", "v4l2", "picamera2", "video", "folder", "sim")
#: Wire protocols the link speaks: ours, or VisionSeed's (see ``seedcam_firmware.visionseed``).
LINK_PROTOCOLS: tuple[str, ...] = ("seedcam", "visionseed")
#: The default ``models.dir``: the repository's ``models/`` in a checkout, the factory models
#: inside the package when installed (:mod:`seedcam_firmware.factory`).
DEFAULT_MODELS_DIR = str(factory.models_dir())
_PUBLIC_KEY_RE = re.compile(r"[0-9a-fA-F]{64}")

_C = TypeVar("_C", bound=type)
_S = TypeVar("_S", bound=Section)


@dataclass(frozen=True)
class DeviceConfig(Section):
    """``[device]``: identity reported in the Hello exchange."""

    section_name: ClassVar[str] = "device"
    serial_number: str = setting(
        factory=default_serial_number,
        check=check_serial,
        host="local",
        doc="serial number; default: hash of /etc/machine-id (stable per board)",
    )
    name: str = setting("seedcam", check=check_name, live=True, host="yes", doc="human-readable name")


@dataclass(frozen=True)
class CameraConfig(Section):
    """``[camera]``: which frame source to open and how to shape its frames.

    ``width``/``height`` is the capture size (frames are resized to it);
    ``rotation`` (clockwise degrees) is applied after, so at 90/270 the delivered
    frames are ``height`` x ``width``. ``fps = 0`` means the source's own rate.
    """

    section_name: ClassVar[str] = "camera"
    source: str = setting("synthetic", choices=CAMERA_SOURCES, host="local", doc="frame source backend")
    device: str | int = setting(
        "/dev/video0",
        check=check_device,
        host="local",
        doc="v4l2 device path or index; picamera2: an index picks the camera (a path: the first)",
    )
    pixel_format: str = setting(
        "",
        check=check_fourcc,
        host="local",
        doc="v4l2: the FourCC to capture in (YUYV, MJPG, RGB3 ...); empty = the driver's default",
    )
    path: str = setting(
        "",
        is_path=True,
        host="local",
        doc="video file (source=video), image folder (source=folder) or the simulator's socket (source=sim)",
    )
    scene: str = setting(
        "",
        is_path=True,
        host="local",
        doc="synthetic source: a scene TOML file rendered on every frame; empty = a wandering drive",
    )
    width: int = setting(320, lo=16, hi=4096, host="yes", doc="frame width in pixels")
    height: int = setting(240, lo=16, hi=4096, host="yes", doc="frame height in pixels")
    fps: float = setting(30.0, lo=0.0, hi=1000.0, host="yes", doc="frame rate; 0 = the source's own rate")
    seed: int = setting(0, lo=0, hi=2**32 - 1, host="yes", doc="random seed of the synthetic scene")
    loop: bool = setting(True, host="yes", doc="video/folder: restart at the end instead of failing")
    rotation: int = setting(0, choices=(0, 90, 180, 270), host="yes", doc="clockwise rotation in degrees")


@dataclass(frozen=True)
class LinkConfig(Section):
    """``[link]``: the firmware end of the host link."""

    section_name: ClassVar[str] = "link"
    url: str = setting(
        "pty",
        check=check_link_url,
        host="local",
        doc="pty, pty:///path/to/symlink, a serial device path, or tcp-listen://host:port",
    )
    protocol: str = setting(
        "seedcam",
        choices=LINK_PROTOCOLS,
        host="yes",
        doc="wire protocol: seedcam (native) or visionseed (the original VisionSeed host SDKs work unchanged)",
    )
    baudrate: int = setting(921600, lo=1200, hi=12_000_000, host="yes", doc="UART baud rate")
    max_frame_size: int = setting(65536, lo=1024, hi=16 * 1024 * 1024, host="yes", doc="largest link frame, bytes")
    health_interval_s: float = setting(
        1.0,
        lo=0.05,
        hi=1.0,
        live=True,
        host="yes",
        doc="seconds between health messages (at most 1 s: silence means a link fault)",
    )
    key_file: str = setting(
        "",
        is_path=True,
        host="local",
        doc="file holding the shared link key (hex) that must sign every request; "
        "empty = none (then tcp-listen:// may only listen on loopback)",
    )


@dataclass(frozen=True)
class RuntimeConfig(Section):
    """``[runtime]``: the TFLite interpreter."""

    section_name: ClassVar[str] = "runtime"
    num_threads: int = setting(2, lo=1, hi=64, host="yes", doc="interpreter threads")
    delegate: str = setting(
        "", is_path=True, host="local", doc="external/NPU delegate .so (native code); empty = CPU only"
    )


def _no_repeats(tasks: tuple[str, ...]) -> str | None:
    return "must not repeat a task" if len(set(tasks)) != len(tasks) else None


@dataclass(frozen=True)
class TasksConfig(Section):
    """``[tasks]``: which perception tasks run on every frame (any of the catalog's)."""

    section_name: ClassVar[str] = "tasks"
    enabled: tuple[str, ...] = setting(
        tuple(name for name, spec in TASKS.items() if spec.enabled),
        choices=KNOWN_TASKS,
        live=True,
        check=_no_repeats,
        host="yes",
        doc="tasks to run",
    )


def _bundle_keys(cls: _C) -> _C:
    """Give the class a ``<task>`` (manifest) and a ``<task>_precision`` key per catalog task."""
    annotations = cls.__dict__["__annotations__"]
    for spec in TASKS.values():
        for key in (spec.name, f"{spec.name}_precision"):
            if key in annotations:  # pragma: no cover - the catalog refuses such names
                raise TypeError(f"task {spec.name!r}: models.{key} exists already")
        annotations[spec.name] = "str"
        setattr(
            cls,
            spec.name,
            setting(
                spec.bundle,
                host="allow-list",
                doc=f"{spec.what} bundle manifest, relative to dir (a host: inside dir or the update slots)",
            ),
        )
        annotations[f"{spec.name}_precision"] = "str"
        setattr(
            cls,
            f"{spec.name}_precision",
            setting(spec.precision, choices=PRECISIONS, host="yes", doc=f"{spec.what} model variant"),
        )
    return cls


@dataclass(frozen=True)
@_bundle_keys
class ModelsConfig(Section):
    """``[models]``: where the model bundles are; a manifest and a precision key per catalog task."""

    section_name: ClassVar[str] = "models"
    dir: str = setting(DEFAULT_MODELS_DIR, is_path=True, host="local", doc="models folder")

    def manifest_path(self, task: str) -> Path:
        """Return the manifest path of ``task``'s bundle.

        Args:
            task: a name from :data:`~seedcam_firmware.task_catalog.KNOWN_TASKS`.

        Raises:
            ConfigError: no ``models.<task>`` key exists.
        """
        if task not in TASKS:
            raise unknown_key_error(f"models.{task}", KEYS, "models")
        return Path(self.dir) / str(getattr(self, task))

    def precision(self, task: str) -> str:
        """Return the configured precision (``int8`` / ``float32``) of ``task``'s model.

        Raises:
            ConfigError: no ``models.<task>_precision`` key exists.
        """
        if task not in TASKS:
            raise unknown_key_error(f"models.{task}_precision", KEYS, "models")
        return str(getattr(self, f"{task}_precision"))


@dataclass(frozen=True)
class UpdatesConfig(Section):
    """``[updates]``: model and firmware updates over the link (A/B slots, signed bundles)."""

    section_name: ClassVar[str] = "updates"
    # every key here is local-only (host="local"): a host must not turn off
    # signature checks or move the slots; only the device's own config file sets them
    dir: str = setting(
        "",
        is_path=True,
        host="local",
        doc="storage folder for slots and the transfer journal; empty = updates disabled",
    )
    public_keys: tuple[str, ...] = setting(
        (),
        check=lambda keys: _public_keys_problem(keys),
        host="local",
        doc="trusted ed25519 public keys (64 hex digits each); when set, unsigned bundles are refused",
    )
    target: str = setting("emulated-linux", host="local", doc="board name a bundle's target must match (or 'any')")
    reserve_mb: float = setting(1.0, lo=0.0, hi=1e6, host="local", doc="free space to keep after storing a bundle, MB")
    confirm_timeout_s: float = setting(
        30.0,
        lo=1.0,
        hi=3600.0,
        host="local",
        doc="a firmware on trial must confirm its health within this time or is reverted",
    )
    canary_window_s: float = setting(
        600.0,
        lo=0.0,
        hi=86400.0,
        host="local",
        doc="a model activated this recently whose outputs turn NaN or infinite is rolled back; 0 = off",
    )


def _public_keys_problem(keys: tuple[str, ...]) -> str | None:
    for key in keys:
        if not _PUBLIC_KEY_RE.fullmatch(key):
            return f"entry {key!r} is not an ed25519 public key (64 hex digits)"
    return None


@dataclass(frozen=True)
class PipelineConfig(Section):
    """``[pipeline]``: queues and encoding."""

    section_name: ClassVar[str] = "pipeline"
    queue_depth: int = setting(2, lo=1, hi=64, host="yes", doc="depth of the bounded latest-wins queues")
    jpeg_quality: int = setting(80, lo=1, hi=100, live=True, host="yes", doc="JPEG quality of snapshots")
    timings: str = setting(
        "summary",
        choices=TIMINGS_MODES,
        live=True,
        host="yes",
        doc="stage timings in each result: off, summary (one capture-to-send figure) or full (every stage)",
    )


@dataclass(frozen=True)
class BlackboxConfig(Section):
    """``[blackbox]``: the last seconds of the stream kept in memory, frozen to storage on a trigger.

    See :mod:`seedcam_firmware.blackbox`; every key but ``dir`` is live.
    """

    section_name: ClassVar[str] = "blackbox"
    dir: str = setting(
        "",
        is_path=True,
        host="local",
        doc="folder of the frozen black-box files; empty = kept in memory only (lost at a restart)",
    )
    seconds: float = setting(10.0, lo=0.0, hi=600.0, live=True, host="yes", doc="seconds kept; 0 = black box off")
    max_entries: int = setting(
        20_000, lo=100, hi=1_000_000, live=True, host="yes", doc="most entries kept (results, health, logs, thumbnails)"
    )
    max_bytes: int = setting(
        4 * 1024 * 1024, lo=65_536, hi=256 * 1024 * 1024, live=True, host="yes", doc="most bytes kept in memory"
    )
    max_files: int = setting(8, lo=1, hi=256, live=True, host="yes", doc="frozen files kept; the oldest go first")
    thumbnail_fps: float = setting(1.0, lo=0.0, hi=10.0, live=True, host="yes", doc="thumbnails a second; 0 = none")
    thumbnail_width: int = setting(160, lo=16, hi=640, live=True, host="yes", doc="thumbnail width in pixels")
    on_lane_lost: bool = setting(True, live=True, host="yes", doc="freeze when the lane status turns lost")
    label: str = setting(
        "", live=True, host="yes", doc="freeze when a detection of this label scores label_score; empty = off"
    )
    label_score: float = setting(0.8, lo=0.0, hi=1.0, live=True, host="yes", doc="the score that label must reach")
    crc_burst: int = setting(
        20, lo=0, hi=1_000_000, live=True, host="yes", doc="freeze when this many CRC errors come within 5 s; 0 = off"
    )
    cooldown_s: float = setting(
        5.0, lo=0.0, hi=3600.0, live=True, host="yes", doc="a trigger fires again only this long after it last fired"
    )


def _task_sections(cls: _C) -> _C:
    """Give the class a field per catalog task with a config section, right after ``models``."""
    annotations = cls.__dict__["__annotations__"]
    ordered: dict[str, object] = {}
    for name, annotation in annotations.items():
        ordered[name] = annotation
        if name != "models":
            continue
        for spec in TASKS.values():
            if spec.section is None:
                continue
            if spec.name in annotations or hasattr(cls, spec.name):  # pragma: no cover - see RESERVED_NAMES
                raise TypeError(f"task {spec.name!r}: FirmwareConfig.{spec.name} exists already")
            ordered[spec.name] = spec.section
            setattr(cls, spec.name, dataclasses.field(default_factory=spec.section))
    annotations.clear()
    annotations.update(ordered)
    return cls


@dataclass(frozen=True)
@_task_sections
class FirmwareConfig:
    """The whole firmware configuration: one attribute per section.

    Besides the sections below, every catalog task with a config section has
    one named after it (``config.detect``), right after ``models``; code that
    wants it typed asks :meth:`section` (``config.section(DetectConfig)``).
    """

    device: DeviceConfig = dataclasses.field(default_factory=DeviceConfig)
    camera: CameraConfig = dataclasses.field(default_factory=CameraConfig)
    link: LinkConfig = dataclasses.field(default_factory=LinkConfig)
    runtime: RuntimeConfig = dataclasses.field(default_factory=RuntimeConfig)
    tasks: TasksConfig = dataclasses.field(default_factory=TasksConfig)
    models: ModelsConfig = dataclasses.field(default_factory=ModelsConfig)
    pipeline: PipelineConfig = dataclasses.field(default_factory=PipelineConfig)
    updates: UpdatesConfig = dataclasses.field(default_factory=UpdatesConfig)
    blackbox: BlackboxConfig = dataclasses.field(default_factory=BlackboxConfig)

    def section(self, cls: type[_S]) -> _S:
        """The section of class ``cls`` (a task reads its own: ``config.section(OcrConfig)``).

        Raises:
            ConfigError: the configuration has no such section.
        """
        value = getattr(self, cls.section_name, None)
        if not isinstance(value, cls):
            raise unknown_key_error(cls.section_name, SECTIONS, "config")
        return value


_HINTS = typing.get_type_hints(FirmwareConfig)
#: Section name → its class, in file order (the firmware's, the tasks' after ``models``).
SECTIONS: Mapping[str, type[Section]] = MappingProxyType(
    {f.name: _HINTS[f.name] for f in dataclasses.fields(FirmwareConfig)}
)
#: Every dotted key with its spec (type, default, rules, ``live``, doc).
KEYS: dict[str, KeySpec] = {spec.key: spec for cls in SECTIONS.values() for spec in section_keys(cls).values()}

"""The firmware configuration: TOML in, frozen dataclasses out.

Precedence, highest first: ``overrides`` (the command line), environment
variables ``SEEDCAM_FW_<SECTION>_<KEY>`` (e.g. ``SEEDCAM_FW_CAMERA_FPS=15``),
the TOML file, the defaults below. An empty file is a valid configuration.

Every section is a frozen dataclass that checks itself on construction, so a
``CameraConfig(width="x")`` fails as loudly as a bad file does. Error messages
name the dotted key and where the value came from::

    config.toml: unknown config key 'camera.fsp' (did you mean 'camera.fps'?)
    config.toml: camera.fps must be a number, got str 'fast'

Keys whose change the daemon applies at run time are marked ``live``; for the
others :func:`requires_restart` returns True.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import tomllib
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from seedcam_firmware.config_schema import (
    KNOWN_TASKS,
    KeySpec,
    check_device,
    check_link_url,
    check_name,
    check_serial,
    coerce_value,
    default_serial_number,
    parse_text,
    section_specs,
    setting,
    unknown_key_error,
)
from seedcam_firmware.errors import ConfigError, ReadOnlyConfigKey

__all__ = [
    "CAMERA_SOURCES",
    "ENV_PREFIX",
    "KEYS",
    "LINK_PROTOCOLS",
    "PRECISIONS",
    "CameraConfig",
    "ClassifyConfig",
    "DetectConfig",
    "DeviceConfig",
    "FirmwareConfig",
    "LinkConfig",
    "ModelsConfig",
    "OcrConfig",
    "PipelineConfig",
    "RuntimeConfig",
    "TasksConfig",
    "UpdatesConfig",
    "check_host_change",
    "host_reset",
    "config_from_dict",
    "config_get",
    "config_reset",
    "config_set",
    "config_to_dict",
    "load_config",
    "requires_restart",
    "to_toml",
]

_log = logging.getLogger(__name__)

#: Prefix of the environment variables that override config keys.
ENV_PREFIX = "SEEDCAM_FW_"
#: Model variants a bundle may ship (``models.<task>_precision``).
PRECISIONS: tuple[str, ...] = ("int8", "float32")
#: Camera backends known to :func:`seedcam_firmware.camera.factory.open_camera`.
CAMERA_SOURCES: tuple[str, ...] = ("synthetic", "v4l2", "video", "folder", "sim")
#: Wire protocols the link speaks: ours, or VisionSeed's (see ``seedcam_firmware.visionseed``).
LINK_PROTOCOLS: tuple[str, ...] = ("seedcam", "visionseed")
#: The repository's ``models/`` folder (the default model location in a checkout).
DEFAULT_MODELS_DIR = str(Path(__file__).resolve().parents[2] / "models")
_PUBLIC_KEY_RE = re.compile(r"[0-9a-fA-F]{64}")


class _Section:
    """Mixin: validate and canonicalise every field after construction."""

    _name: typing.ClassVar[str]

    def __post_init__(self) -> None:
        for name, spec in _SPECS[self._name].items():
            value = coerce_value(spec, getattr(self, name), type(self).__name__)
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class DeviceConfig(_Section):
    """``[device]``: identity reported in the Hello exchange."""

    _name: typing.ClassVar[str] = "device"
    serial_number: str = setting(
        factory=default_serial_number,
        check=check_serial,
        doc="serial number; default: hash of /etc/machine-id (stable per board)",
    )
    name: str = setting(
        "seedcam", check=check_name, live=True, doc="human-readable name"
    )


@dataclass(frozen=True)
class CameraConfig(_Section):
    """``[camera]``: which frame source to open and how to shape its frames.

    ``width``/``height`` is the capture size (frames are resized to it);
    ``rotation`` (clockwise degrees) is applied after, so at 90/270 the delivered
    frames are ``height`` x ``width``. ``fps = 0`` means the source's own rate.
    """

    _name: typing.ClassVar[str] = "camera"
    source: str = setting(
        "synthetic", choices=CAMERA_SOURCES, doc="frame source backend"
    )
    device: str | int = setting(
        "/dev/video0", check=check_device, doc="v4l2 device path or index"
    )
    path: str = setting(
        "",
        is_path=True,
        doc="video file (source=video), image folder (source=folder) or the simulator's socket (source=sim)",
    )
    scene: str = setting(
        "",
        is_path=True,
        doc="synthetic source: a scene TOML file rendered on every frame; empty = a wandering drive",
    )
    width: int = setting(320, lo=16, hi=4096, doc="frame width in pixels")
    height: int = setting(240, lo=16, hi=4096, doc="frame height in pixels")
    fps: float = setting(
        30.0, lo=0.0, hi=1000.0, doc="frame rate; 0 = the source's own rate"
    )
    seed: int = setting(0, lo=0, hi=2**32 - 1, doc="random seed of the synthetic scene")
    loop: bool = setting(
        True, doc="video/folder: restart at the end instead of failing"
    )
    rotation: int = setting(
        0, choices=(0, 90, 180, 270), doc="clockwise rotation in degrees"
    )


@dataclass(frozen=True)
class LinkConfig(_Section):
    """``[link]``: the firmware end of the host link."""

    _name: typing.ClassVar[str] = "link"
    url: str = setting(
        "pty",
        check=check_link_url,
        doc="pty, pty:///path/to/symlink, a serial device path, or tcp-listen://host:port",
    )
    protocol: str = setting(
        "seedcam",
        choices=LINK_PROTOCOLS,
        doc="wire protocol: seedcam (native) or visionseed (the original VisionSeed host SDKs work unchanged)",
    )
    baudrate: int = setting(921600, lo=1200, hi=12_000_000, doc="UART baud rate")
    max_frame_size: int = setting(
        65536, lo=1024, hi=16 * 1024 * 1024, doc="largest link frame, bytes"
    )
    health_interval_s: float = setting(
        1.0,
        lo=0.05,
        hi=1.0,
        live=True,
        doc="seconds between health messages (at most 1 s: silence means a link fault)",
    )


@dataclass(frozen=True)
class RuntimeConfig(_Section):
    """``[runtime]``: the TFLite interpreter."""

    _name: typing.ClassVar[str] = "runtime"
    num_threads: int = setting(2, lo=1, hi=64, doc="interpreter threads")
    delegate: str = setting(
        "", is_path=True, doc="external/NPU delegate .so; empty = CPU only"
    )


@dataclass(frozen=True)
class TasksConfig(_Section):
    """``[tasks]``: which perception tasks run on every frame."""

    _name: typing.ClassVar[str] = "tasks"
    enabled: tuple[str, ...] = setting(
        ("lane", "detect", "ocr"),
        choices=KNOWN_TASKS,
        live=True,
        check=lambda v: "must not repeat a task" if len(set(v)) != len(v) else None,
        doc="tasks to run",
    )


@dataclass(frozen=True)
class ModelsConfig(_Section):
    """``[models]``: where the model bundles are; a manifest and a precision key per task."""

    _name: typing.ClassVar[str] = "models"
    dir: str = setting(DEFAULT_MODELS_DIR, is_path=True, doc="models folder")
    lane: str = setting(
        "lane/manifest.json", doc="lane bundle manifest, relative to dir"
    )
    lane_precision: str = setting(
        "int8", choices=PRECISIONS, doc="lane model variant"
    )
    detect: str = setting(
        "detect/manifest.json", doc="object detector bundle manifest, relative to dir"
    )
    detect_precision: str = setting(
        "int8", choices=PRECISIONS, doc="detector model variant"
    )
    ocr: str = setting(
        "ocr/manifest.json", doc="plate reader (CTC OCR) bundle manifest, relative to dir"
    )
    ocr_precision: str = setting(
        "int8", choices=PRECISIONS, doc="OCR model variant"
    )
    classify: str = setting(
        "road_scene/manifest.json", doc="scene classifier bundle manifest, relative to dir"
    )
    classify_precision: str = setting(
        "int8", choices=PRECISIONS, doc="classifier model variant"
    )

    def manifest_path(self, task: str) -> Path:
        """Return the manifest path of ``task``'s bundle.

        Args:
            task: a name from :data:`~seedcam_firmware.config_schema.KNOWN_TASKS`.

        Raises:
            ConfigError: no ``models.<task>`` key exists.
        """
        if task not in _SPECS["models"] or task.endswith("_precision") or task == "dir":
            raise unknown_key_error(f"models.{task}", KEYS, "models")
        return Path(self.dir) / str(getattr(self, task))

    def precision(self, task: str) -> str:
        """Return the configured precision (``int8`` / ``float32``) of ``task``'s model.

        Raises:
            ConfigError: no ``models.<task>_precision`` key exists.
        """
        key = f"{task}_precision"
        if key not in _SPECS["models"]:
            raise unknown_key_error(f"models.{key}", KEYS, "models")
        return str(getattr(self, key))


@dataclass(frozen=True)
class DetectConfig(_Section):
    """``[detect]``: the object detector's post-processing, all live (next frame).

    These values are what runs: a bundle's manifest may recommend thresholds of
    its own (logged at load when they differ), but the config decides.
    """

    _name: typing.ClassVar[str] = "detect"
    score_threshold: float = setting(
        0.5, lo=0.0, hi=1.0, live=True, doc="drop detections scoring below this"
    )
    iou_threshold: float = setting(
        0.45, lo=0.0, hi=1.0, live=True, doc="non-maximum suppression overlap (IoU) threshold"
    )
    max_detections: int = setting(
        20, lo=1, hi=100, live=True, doc="most detections reported per frame"
    )


@dataclass(frozen=True)
class OcrConfig(_Section):
    """``[ocr]``: reading the text of detected plates, all live (next frame).

    ``pattern`` (a regular expression over the model's alphabet) or ``lexicon``
    (the only words allowed) constrain the reading; they are checked against the
    OCR model's alphabet when set, so an invalid one is refused then.
    """

    _name: typing.ClassVar[str] = "ocr"
    plate_labels: tuple[str, ...] = setting(
        ("plate",), live=True, doc="detection labels whose box is cropped and read"
    )
    max_plates: int = setting(
        4, lo=1, hi=16, live=True, doc="most plates read per frame (highest scores first)"
    )
    min_confidence: float = setting(
        0.5, lo=0.0, hi=1.0, live=True, doc="drop readings less confident than this"
    )
    beam_width: int = setting(
        1, lo=1, hi=64, live=True, doc="1 = greedy CTC decoding; more = beam search of that width"
    )
    pattern: str = setting(
        "", live=True, doc="regular expression a reading must match; empty = any"
    )
    lexicon: tuple[str, ...] = setting(
        (), live=True, doc="the only readings allowed; empty = any"
    )


@dataclass(frozen=True)
class ClassifyConfig(_Section):
    """``[classify]``: the scene classifier's output, live (next frame)."""

    _name: typing.ClassVar[str] = "classify"
    top_k: int = setting(
        3, lo=1, hi=20, live=True, doc="classes reported per frame, best first"
    )


@dataclass(frozen=True)
class UpdatesConfig(_Section):
    """``[updates]``: model and firmware updates over the link (A/B slots, signed bundles)."""

    _name: typing.ClassVar[str] = "updates"
    # every key here is read-only over the link (host_settable=False): a host must not turn off
    # signature checks or move the slots; only the device's own config file sets them
    dir: str = setting(
        "", is_path=True, host_settable=False,
        doc="storage folder for slots and the transfer journal; empty = updates disabled",
    )
    public_keys: tuple[str, ...] = setting(
        (), check=lambda keys: _public_keys_problem(keys), host_settable=False,
        doc="trusted ed25519 public keys (64 hex digits each); when set, unsigned bundles are refused",
    )
    target: str = setting(
        "emulated-linux", host_settable=False, doc="board name a bundle's target must match (or 'any')"
    )
    reserve_mb: float = setting(
        1.0, lo=0.0, hi=1e6, host_settable=False, doc="free space to keep after storing a bundle, MB"
    )
    confirm_timeout_s: float = setting(
        30.0, lo=1.0, hi=3600.0, host_settable=False,
        doc="a firmware on trial must confirm its health within this time or is reverted",
    )


def _public_keys_problem(keys: tuple[str, ...]) -> str | None:
    for key in keys:
        if not _PUBLIC_KEY_RE.fullmatch(key):
            return f"entry {key!r} is not an ed25519 public key (64 hex digits)"
    return None


@dataclass(frozen=True)
class PipelineConfig(_Section):
    """``[pipeline]``: queues and encoding."""

    _name: typing.ClassVar[str] = "pipeline"
    queue_depth: int = setting(
        2, lo=1, hi=64, doc="depth of the bounded latest-wins queues"
    )
    jpeg_quality: int = setting(
        80, lo=1, hi=100, live=True, doc="JPEG quality of snapshots"
    )


_SECTION_TYPES: dict[str, type] = {
    "device": DeviceConfig,
    "camera": CameraConfig,
    "link": LinkConfig,
    "runtime": RuntimeConfig,
    "tasks": TasksConfig,
    "models": ModelsConfig,
    "detect": DetectConfig,
    "ocr": OcrConfig,
    "classify": ClassifyConfig,
    "pipeline": PipelineConfig,
    "updates": UpdatesConfig,
}
_SPECS: dict[str, dict[str, KeySpec]] = {
    name: section_specs(name, cls, typing.get_type_hints(cls))
    for name, cls in _SECTION_TYPES.items()
}
#: Every dotted key with its spec (type, default, rules, ``live``, doc).
KEYS: dict[str, KeySpec] = {
    s.key: s for specs in _SPECS.values() for s in specs.values()
}


@dataclass(frozen=True)
class FirmwareConfig:
    """The whole firmware configuration."""

    device: DeviceConfig = dataclasses.field(default_factory=DeviceConfig)
    camera: CameraConfig = dataclasses.field(default_factory=CameraConfig)
    link: LinkConfig = dataclasses.field(default_factory=LinkConfig)
    runtime: RuntimeConfig = dataclasses.field(default_factory=RuntimeConfig)
    tasks: TasksConfig = dataclasses.field(default_factory=TasksConfig)
    models: ModelsConfig = dataclasses.field(default_factory=ModelsConfig)
    detect: DetectConfig = dataclasses.field(default_factory=DetectConfig)
    ocr: OcrConfig = dataclasses.field(default_factory=OcrConfig)
    classify: ClassifyConfig = dataclasses.field(default_factory=ClassifyConfig)
    pipeline: PipelineConfig = dataclasses.field(default_factory=PipelineConfig)
    updates: UpdatesConfig = dataclasses.field(default_factory=UpdatesConfig)


def _spec(key: str, source: str) -> KeySpec:
    spec = KEYS.get(key)
    if spec is None:
        raise unknown_key_error(key, KEYS if "." in key else _SECTION_TYPES, source)
    return spec


def config_from_dict(data: Mapping[str, Any], source: str = "<dict>") -> FirmwareConfig:
    """Build a config from nested ``{section: {key: value}}`` data (a parsed TOML).

    Missing sections and keys take their defaults.

    Args:
        data: the parsed document.
        source: the file name or origin, used in error messages.

    Raises:
        ConfigError: unknown section/key, wrong type or out-of-range value.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"{source}: the configuration must be a table, got {type(data).__name__}"
        )
    sections: dict[str, Any] = {}
    for section, table in data.items():
        if section not in _SECTION_TYPES:
            raise unknown_key_error(str(section), _SECTION_TYPES, source)
        if not isinstance(table, Mapping):
            raise ConfigError(
                f"{source}: [{section}] must be a table, got {type(table).__name__}"
            )
        values = {}
        for key, value in table.items():
            spec = _spec(f"{section}.{key}", source)
            values[key] = coerce_value(spec, value, source)
        sections[section] = _SECTION_TYPES[section](**values)
    return FirmwareConfig(**sections)


def config_to_dict(cfg: FirmwareConfig) -> dict[str, dict[str, Any]]:
    """Return the config as plain TOML/JSON-compatible nested dicts (tuples become lists)."""
    return {name: _section_dict(getattr(cfg, name)) for name in _SECTION_TYPES}


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _section_dict(section: Any) -> dict[str, Any]:
    return {
        f.name: _plain(getattr(section, f.name)) for f in dataclasses.fields(section)
    }


def config_get(cfg: FirmwareConfig, key: str) -> Any:
    """Read one key, one section (as a dict) or, with ``""``, the whole config.

    Values are plain data as in :func:`config_to_dict` (lists, not tuples).

    Raises:
        ConfigError: unknown key or section.
    """
    if key == "":
        return config_to_dict(cfg)
    if key in _SECTION_TYPES:
        return _section_dict(getattr(cfg, key))
    section, name = _spec(key, "config_get").key.split(".", 1)
    return _plain(getattr(getattr(cfg, section), name))


def config_set(
    cfg: FirmwareConfig, key: str, value: Any, *, source: str = "config_set"
) -> FirmwareConfig:
    """Return a copy of ``cfg`` with one key (or several) changed and validated.

    A string given for a non-string key is parsed as on the command line
    (``"15"`` for ``camera.fps``, ``"lane,ocr"`` for ``tasks.enabled``).
    A section name with a mapping sets several keys of that section at once.
    Check :func:`requires_restart` to learn whether the daemon must restart.

    Args:
        cfg: the current config.
        key: a dotted key, or a section name when ``value`` is a mapping.
        value: the new value.
        source: origin used in error messages.

    Raises:
        ConfigError: unknown key, wrong type or out-of-range value.
    """
    if key in _SECTION_TYPES and isinstance(value, Mapping):
        for sub, sub_value in value.items():
            cfg = config_set(cfg, f"{key}.{sub}", sub_value, source=source)
        return cfg
    if key in _SECTION_TYPES:
        raise ConfigError(f"{source}: {key} is a section; set it from a table of keys")
    spec = _spec(key, source)
    if isinstance(value, str) and spec.type is not str:
        value = parse_text(spec, value, source)
    value = coerce_value(spec, value, source)
    section, name = key.split(".", 1)
    new_section = dataclasses.replace(getattr(cfg, section), **{name: value})
    return dataclasses.replace(cfg, **{section: new_section})


def config_reset(cfg: FirmwareConfig, key: str = "") -> FirmwareConfig:
    """Return a copy of ``cfg`` with a key, a section or (``""``) everything at defaults.

    Raises:
        ConfigError: unknown key or section.
    """
    if key == "":
        return FirmwareConfig()
    if key in _SECTION_TYPES:
        return dataclasses.replace(cfg, **{key: _SECTION_TYPES[key]()})
    spec = _spec(key, "config_reset")
    return config_set(cfg, key, spec.default(), source="config_reset")


def check_host_change(current: FirmwareConfig, new: FirmwareConfig, *, source: str = "host") -> None:
    """Refuse a config change that a host may not make over the link.

    Keys declared ``host_settable=False`` (all of ``updates.*``) must stay as they
    are. While ``updates.public_keys`` are provisioned, ``models.dir`` stays too, and
    a ``models.<task>`` path must lead into the models folder or the update slots
    (so a host cannot point a task at a manifest that never passed the bundle checks).

    Raises:
        ReadOnlyConfigKey: the message names the key.
    """
    for key, spec in KEYS.items():
        if not spec.host_settable and config_get(new, key) != config_get(current, key):
            raise ReadOnlyConfigKey(f"{source}: {key} is read-only over the link; set it in the device's config file")
    if not current.updates.public_keys:
        return
    if new.models.dir != current.models.dir:
        raise ReadOnlyConfigKey(
            f"{source}: models.dir is read-only over the link while updates.public_keys are provisioned"
        )
    roots = [Path(current.models.dir).resolve()]
    if current.updates.dir:
        roots.append((Path(current.updates.dir) / "slots").resolve())
    for task in KNOWN_TASKS:
        if getattr(new.models, task) == getattr(current.models, task):
            continue
        path = new.models.manifest_path(task).resolve()
        if not any(path.is_relative_to(root) for root in roots):
            raise ReadOnlyConfigKey(
                f"{source}: models.{task} may only name a manifest in the models folder or the update slots "
                f"while updates.public_keys are provisioned, got {str(path)!r}"
            )


def host_reset(current: FirmwareConfig, key: str = "") -> FirmwareConfig:
    """:func:`config_reset` as a host over the link may do it.

    Resetting everything or a section keeps the keys a host may not change (the
    device's ``[updates]``; ``models.dir`` while keys are provisioned); resetting
    only such keys is refused.

    Raises:
        ConfigError: unknown key or section.
        ReadOnlyConfigKey: the reset would change a key a host may not change.
    """
    new = config_reset(current, key)
    if key == "" or (key in _SPECS and any(spec.host_settable for spec in _SPECS[key].values())):
        new = dataclasses.replace(new, updates=current.updates)
        if current.updates.public_keys:
            new = dataclasses.replace(new, models=dataclasses.replace(new.models, dir=current.models.dir))
    check_host_change(current, new, source=f"config_reset {key}")
    return new


def requires_restart(key: str) -> bool:
    """Tell whether a change to ``key`` needs a daemon restart to take effect.

    Args:
        key: a dotted key, a section name (True if any key in it needs a
            restart) or ``""`` for the whole config.

    Raises:
        ConfigError: unknown key or section.
    """
    if key == "":
        return True
    if key in _SPECS:
        return any(not s.live for s in _SPECS[key].values())
    return not _spec(key, "requires_restart").live


def to_toml(cfg: FirmwareConfig) -> str:
    """Serialise the whole config as TOML (``load_config`` reads it back equal)."""
    return tomli_w.dumps(config_to_dict(cfg))


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(
            f"cannot read config file {path}: {exc.strerror or exc}"
        ) from None


def _resolve_paths(data: dict[str, Any], base: Path) -> None:
    """Make relative path keys in file data relative to the file's folder."""
    for section, table in data.items():
        if not isinstance(table, dict):
            continue
        for key, value in table.items():
            spec = KEYS.get(f"{section}.{key}")
            if spec and spec.rules.is_path and isinstance(value, str) and value:
                path = Path(os.path.expanduser(value))
                table[key] = os.path.normpath(
                    path if path.is_absolute() else base / path
                )


def _env_items(env: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """Pick the ``SEEDCAM_FW_<SECTION>_<KEY>`` variables: (dotted key, text, var name).

    Variables whose first word is not a section (``SEEDCAM_FW_LOG_LEVEL``) are
    left to other readers; a known section with an unknown key is an error.
    """
    items = []
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX):
            continue
        section, _, key = name[len(ENV_PREFIX) :].lower().partition("_")
        if section not in _SECTION_TYPES:
            _log.debug("ignoring %s: not a config section", name)
            continue
        items.append((f"{section}.{key}", env[name], name))
    return items


def load_config(
    path: Path | str | None,
    overrides: Mapping[str, object] = {},
    *,
    env: Mapping[str, str] | None = None,
) -> FirmwareConfig:
    """Load the configuration: defaults < file < environment < overrides.

    Relative paths in the file (``camera.path``, ``models.dir``,
    ``runtime.delegate``) are taken relative to the file's folder.

    Args:
        path: the TOML file, or None for defaults only.
        overrides: dotted key to value (typed, or text as from ``--set k=v``).
        env: environment to read ``SEEDCAM_FW_*`` from; default ``os.environ``.

    Returns:
        The validated config.

    Raises:
        ConfigError: missing/unreadable/invalid file or any invalid value; the
            message names the key and the file, variable or override.
    """
    if path is not None:
        path = Path(path)
        data = _read_toml(path)
        _resolve_paths(data, path.resolve().parent)
        cfg = config_from_dict(data, source=str(path))
    else:
        cfg = FirmwareConfig()
    for key, text, var in _env_items(os.environ if env is None else env):
        cfg = config_set(cfg, key, text, source=f"environment variable {var}")
    for key, value in overrides.items():
        cfg = config_set(cfg, key, value, source=f"override {key}")
    return cfg

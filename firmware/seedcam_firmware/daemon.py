"""The firmware daemon: camera, tasks, pipeline and link, wired together."""

from __future__ import annotations

import logging
import secrets
import threading
import time
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import tomli_w

from seedcam._proto import seedcam_pb2 as pb
from seedcam.protocol import codec
from seedcam.protocol.framing import PROTOCOL_VERSION, Channel, LinkCounters
from seedcam.transport.url_options import parse_transport_url
from seedcam.types import ConfigValue, DeviceInfo, Health, ModelInfo, Result, Snapshot, TaskList
from seedcam_firmware import __version__
from seedcam_firmware.blackbox import BlackBox
from seedcam_firmware.camera.base import CameraSource, Frame
from seedcam_firmware.camera.factory import open_camera
from seedcam_firmware.canary import Canary
from seedcam_firmware.config import (
    FirmwareConfig,
    check_host_change,
    config_get,
    config_reset,
    config_set,
    host_reset,
    requires_restart,
)
from seedcam_firmware.errors import ConfigError, ModelError
from seedcam_firmware.host_policy import hide_local_paths, is_local_only
from seedcam_firmware.jpeg import JPEG_HEADROOM, encode_jpeg, piece_size
from seedcam_firmware.link_auth import load_verifier
from seedcam_firmware.link_log import LinkLogHandler
from seedcam_firmware.link_native import NativePersonality
from seedcam_firmware.link_personality import Personality
from seedcam_firmware.link_server import LinkServer
from seedcam_firmware.pipeline import Pipeline
from seedcam_firmware.preview import PreviewStream
from seedcam_firmware.rpc import Dispatcher, RequestFailed
from seedcam_firmware.storage.atomic import write_atomically
from seedcam_firmware.tasks.registry import load_tasks, task_factory
from seedcam_firmware.tasks.runner import TaskRunner
from seedcam_firmware.transfer import UpdateService
from seedcam_firmware.visionseed.link import VisionSeedPersonality
from seedcam_firmware.visionseed.rpc import REBOOT_DELAY_S, VisionSeedRpc

__all__ = ["Daemon"]

log = logging.getLogger(__name__)

BOARD = "emulated-linux"
#: a snapshot piece holds the line this long at most, so results keep their pace around it
_SNAPSHOT_PIECE_S = 0.02


class Daemon:
    """One running sensor. :meth:`start` brings it up; :meth:`stop` shuts it down cleanly.

    Args:
        config: the validated configuration.
        config_path: where config changes from the host are persisted, rewriting the
            file atomically (None: changes last until the firmware stops).
        config_fallback: non-empty when this config is the last good one, booted because the
            config file did not boot (see :mod:`seedcam_firmware.safe_boot`): the reason, logged
            (so sent on the LOG channel) at boot and whenever a host asks for the device info,
            and reported in every Health message.
        on_running: called once, from the health thread, when the first frame has been
            processed (safe boot keeps the config file that got this far).

    A task whose model does not load does not stop the sensor: it is logged as
    an error (sent on the LOG channel at boot and again whenever a host asks for
    the device info), left out of ``TaskList.available``, and asking for it
    answers ``UNAVAILABLE`` with the reason; the other enabled tasks run. Only
    when the config enables tasks and not one of them loads does start fail: a
    sensor that could only stream empty results is a setup error to fix first.

    Raises (from start):
        ModelError: tasks are enabled and none of their models loads.
        LinkKeyRequired: the link listens beyond loopback without ``link.key_file``.
        ConfigError: ``link.key_file`` is unreadable or holds no key.
        CameraError: the camera cannot be opened.
        LinkBroken: the link cannot be opened.
    """

    def __init__(
        self,
        config: FirmwareConfig,
        *,
        config_path: Path | None = None,
        config_fallback: str = "",
        on_running: Callable[[], None] | None = None,
    ) -> None:
        self.config = config
        self.config_path = config_path
        self.config_fallback = config_fallback
        self._on_running = on_running
        self.boot_id = secrets.token_hex(8)
        self._started = time.monotonic()
        self._config_lock = threading.Lock()
        self._stop = threading.Event()
        self._restart = False
        self.firmware_version = __version__
        self._updates: UpdateService | None = None
        self._canary: Canary | None = None
        self._tasks: TaskRunner | None = None
        self._missing: dict[str, str] = {}
        self._camera: CameraSource | None = None
        self._link: LinkServer | None = None
        self._pipeline: Pipeline | None = None
        self._preview: PreviewStream | None = None
        self._blackbox: BlackBox | None = None
        self._log_handler: LinkLogHandler | None = None
        self._health_thread = threading.Thread(target=self._health_loop, name="seedcam-health", daemon=True)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        cfg = self.config
        try:
            self._updates = UpdateService(cfg.updates, self, max_frame_size=cfg.link.max_frame_size)
            cfg = self.config = self._updates.effective_config(cfg)  # tasks with an installed slot run its model
            self._canary = Canary(cfg.updates.canary_window_s, self._updates)
            self._camera = open_camera(cfg.camera)
            self._tasks = self._load_tasks(cfg)
            self._blackbox = BlackBox(
                lambda: self.config.blackbox,
                self.device_info,
                self.boot_id,
                max_piece=cfg.link.max_frame_size - JPEG_HEADROOM,
            )
            self._preview = PreviewStream(
                self._send_preview,
                bytes_sent=lambda: self._link.counters.bytes_tx if self._link else 0,
                latest_frame=lambda: self._pipeline.latest_frame if self._pipeline else None,
                line_rate_bps=_line_rate(cfg.link.url, cfg.link.baudrate),
                max_frame_size=cfg.link.max_frame_size,
            )
            link_options: dict[str, Any] = {
                "on_connect": self._send_hello,
                "max_frame_size": cfg.link.max_frame_size,
                "line_rate_bps": _line_rate(cfg.link.url, cfg.link.baudrate),
                "transport_options": _transport_options(cfg.link.url, cfg.link.baudrate),
            }
            self._link = LinkServer(cfg.link.url, self._personality(cfg), **link_options)
        except BaseException:
            self.stop()
            raise
        preview, blackbox = self._preview, self._blackbox

        def on_sent(frame: Frame, result: Result) -> None:
            preview.offer(frame)
            blackbox.add_result(frame, result)

        self._pipeline = Pipeline(
            self._camera,
            self._tasks.process,
            self._send_result,
            queue_depth=cfg.pipeline.queue_depth,
            on_sent=on_sent,
        )
        self._log_handler = LinkLogHandler(self._send_log)
        logging.getLogger("seedcam_firmware").addHandler(self._log_handler)  # before the Hello: it reports too
        blackbox.start()
        self._link.start()
        self._pipeline.start()
        preview.start()
        self._health_thread.start()
        self._updates.start()
        self._report_fallback()
        log.info("sensor up: boot %s, link %s", self.boot_id, self._link.device_path)

    def _personality(self, cfg: FirmwareConfig) -> Personality:
        """The wire protocol the link speaks: the same pipeline and services behind either."""
        verifier = load_verifier(cfg.link.key_file)  # raises ConfigError
        if cfg.link.protocol == "visionseed":
            if verifier is not None:
                raise ConfigError("link.key_file: the visionseed protocol cannot sign requests; use the native one")
            return VisionSeedPersonality(VisionSeedRpc(self))
        assert self._updates is not None and self._preview is not None
        dispatcher = Dispatcher(
            self,
            snapshot_chunk=piece_size(
                cfg.link.max_frame_size, _line_rate(cfg.link.url, cfg.link.baudrate), _SNAPSHOT_PIECE_S
            ),
            preview=self._preview.request,
            blackbox=self._blackbox,
        )
        return NativePersonality(
            dispatcher, transfer_handler=self._updates.handle, verifier=verifier, timings=cfg.pipeline.timings
        )

    def _load_tasks(self, cfg: FirmwareConfig) -> TaskRunner:
        """Load every task; run the enabled ones that loaded (the config then names those).

        Raises:
            ModelError: tasks are enabled and not one of them loaded.
        """
        loaded = load_tasks(cfg)
        self._missing = {n: loaded.unavailable[n] for n in cfg.tasks.enabled if n in loaded.unavailable}
        if cfg.tasks.enabled and len(self._missing) == len(cfg.tasks.enabled):
            for task in loaded.tasks:
                task.close()
            reasons = "; ".join(f"{name}: {reason}" for name, reason in self._missing.items())
            raise ModelError(f"none of the enabled tasks can run: {reasons}")
        running = [n for n in cfg.tasks.enabled if n not in loaded.unavailable]
        on_invalid = self._canary.on_invalid if self._canary else None
        runner = TaskRunner(loaded.tasks, running, unavailable=loaded.unavailable, on_invalid=on_invalid)
        if self._missing:
            self.config = config_set(cfg, "tasks.enabled", running, source="start")
        return runner

    @property
    def tasks(self) -> TaskRunner | None:
        """The task runner (None before :meth:`start`)."""
        return self._tasks

    @property
    def missing_tasks(self) -> dict[str, str]:
        """Tasks the config enabled whose model did not load -> the reason."""
        return dict(self._missing)

    @property
    def unavailable_tasks(self) -> dict[str, str]:
        """Tasks whose model did not load -> the reason."""
        return self._tasks.unavailable if self._tasks else {}

    def load_task(self, task: str, manifest: Path, precision: str) -> Any:
        """Load ``task`` with the model bundle at ``manifest`` (for an update; not running yet).

        Raises:
            SensorError: the model does not load or does not fit the task (ModelError, BundleError...).
        """
        cfg = config_set(self.config, f"models.{task}", str(manifest), source="update")
        cfg = config_set(cfg, f"models.{task}_precision", precision, source="update")
        return task_factory(task)(cfg, dict(self._tasks.tasks) if self._tasks else {})

    def swap_task(self, task: Any) -> None:
        """Make a task from :meth:`load_task` the running one (from the next frame on)."""
        assert self._tasks is not None
        with self._config_lock:
            self._tasks.replace(task)
            self._missing.pop(task.name, None)
            if self._canary is not None:
                self._canary.activated(task.name)
            model = task.manifest.bundle_dir / "manifest.json"
            cfg = config_set(self.config, f"models.{task.name}", str(model), source="update")
            self.config = config_set(cfg, f"models.{task.name}_precision", task.manifest.precision, source="update")

    def _report_fallback(self) -> None:
        """Log (and so send to the host) that the config file did not boot and the last good one runs."""
        if self.config_fallback:
            log.error("%s", self.config_fallback)

    def _report_missing(self) -> None:
        """Log (and so send to the host) each task the config enabled whose model did not load."""
        for name, reason in self._missing.items():
            log.error("task %s is enabled in the config but unavailable (model did not load): %s", name, reason)

    @property
    def link_path(self) -> str:
        """Where the host connects (the pty path for ``--link pty``)."""
        return self._link.device_path if self._link else self.config.link.url

    def wait(self, timeout: float | None = None) -> bool:
        """Block until :meth:`stop` is called; returns True once stopped."""
        return self._stop.wait(timeout)

    def request_stop(self) -> None:
        """Ask :meth:`wait` to return (safe from a signal handler)."""
        self._stop.set()

    def request_restart(self) -> None:
        """Ask for a reboot: :meth:`wait` returns and :attr:`restart_requested` tells the caller to start afresh."""
        self._restart = True
        self._stop.set()

    @property
    def restart_requested(self) -> bool:
        """True once a host asked the firmware to reboot (the CLI then restarts the process)."""
        return self._restart

    def stop(self) -> None:
        """Stop everything in reverse order of start. Idempotent."""
        self._stop.set()
        if self._canary is not None:
            self._canary.close()
        if self._updates is not None:
            self._updates.close()
        if self._log_handler is not None:
            logging.getLogger("seedcam_firmware").removeHandler(self._log_handler)
            self._log_handler = None
        if self._pipeline is not None:
            self._pipeline.request_stop()
            if self._camera is not None:
                self._camera.close()  # wakes a capture blocked in the driver
            self._pipeline.stop()
        if self._health_thread.is_alive():
            self._health_thread.join(timeout=2.0)
        if self._preview is not None:
            self._preview.close()
        if self._blackbox is not None:
            self._blackbox.close()
        if self._link is not None:
            self._link.close()
        if self._camera is not None:
            self._camera.close()
        if self._tasks is not None:
            self._tasks.close()

    # ------------------------------------------------------------------ streaming

    def _send_result(self, result: Result) -> None:
        assert self._link is not None
        self._link.send_result(result)

    def _send_log(self, record: pb.LogRecord) -> bool:
        if self._blackbox is not None:
            self._blackbox.add_log(record)
        link = self._link
        return link is not None and link.send_log(record)

    def _send_preview(self, event: pb.StatusEvent) -> bool:
        link = self._link
        return link is not None and link.send(Channel.STATUS, event)

    def _send_hello(self) -> None:
        assert self._link is not None
        self._link.send_hello(self.device_info())

    def _health_loop(self) -> None:
        next_at = time.monotonic()
        while True:
            next_at = max(next_at + self.config.link.health_interval_s, time.monotonic())  # a fixed grid: no drift
            if self._stop.wait(next_at - time.monotonic()):
                return
            if self._link is None:
                continue
            health = self.health()
            self._link.send_health(health)
            if self._blackbox is not None:
                self._blackbox.add_health(health)
            if self._on_running is not None and health.frames_processed > 0:
                on_running, self._on_running = self._on_running, None
                on_running()

    def health(self) -> Health:
        stats = self._pipeline.stats if self._pipeline else None
        latest = self._pipeline.latest_frame if self._pipeline else None
        link = self._link
        return Health(
            boot_id=self.boot_id,
            uptime_s=time.monotonic() - self._started,
            fps=stats.fps if stats else 0.0,
            frames_captured=stats.frames_captured if stats else 0,
            frames_processed=stats.frames_processed if stats else 0,
            frames_dropped=(stats.frames_dropped if stats else 0) + (link.frames_dropped if link else 0),
            link=codec.link_stats_from_counters(link.counters if link else LinkCounters()),
            active_models=tuple(m.id for m in self.list_models() if m.active),
            timestamp_us=time.monotonic_ns() // 1000,
            undecodable_requests=link.undecodable_requests if link else 0,
            camera_errors=stats.camera_errors if stats else 0,
            invalid_outputs=self._tasks.invalid_outputs if self._tasks else {},
            canary_rollbacks=self._canary.rollbacks if self._canary else 0,
            unauthenticated_requests=link.unauthenticated_requests if link else 0,
            config_fallback=self.config_fallback,
            latest_frame_id=latest.frame_id if latest is not None else 0,
            results_dropped=link.results_dropped if link else 0,
        )

    # ------------------------------------------------------------------ services for the host

    def device_info(self) -> DeviceInfo:
        """Who the sensor is (the Hello, and the answer to a host's info request).

        A host asks for it when it connects, so this is also where the errors of
        enabled tasks whose model did not load are repeated on the LOG channel.
        """
        self._report_fallback()
        self._report_missing()
        cfg = self.config
        return DeviceInfo(
            protocol_version=PROTOCOL_VERSION,
            firmware_version=__version__,
            boot_id=self.boot_id,
            serial_number=cfg.device.serial_number,
            max_frame_size=cfg.link.max_frame_size,
            models=self.list_models(),
            board=BOARD,
            tasks_enabled=self._tasks.enabled if self._tasks else (),
            camera=cfg.camera.source,
            frame_width=self._camera.size[0] if self._camera else cfg.camera.width,
            frame_height=self._camera.size[1] if self._camera else cfg.camera.height,
            uptime_s=time.monotonic() - self._started,
        )

    def config_get(self, key: str) -> ConfigValue:
        return ConfigValue(key, hide_local_paths(key, config_get(self.config, key)), False)

    def config_set(self, key: str, value: object) -> ConfigValue:
        with self._config_lock:
            new = config_set(self.config, key, value)
            check_host_change(self.config, new, source=f"config_set {key}")  # the keys' host policies
            persisted = self._apply(key, new)
        return ConfigValue(key, hide_local_paths(key, config_get(new, key)), requires_restart(key), persisted)

    def config_reset(self, key: str) -> ConfigValue:
        with self._config_lock:
            new = host_reset(self.config, key)  # keeps the local-only keys; refuses to reset them alone
            persisted = self._apply(key, new)
        restart = requires_restart(key) if key else True
        return ConfigValue(key, hide_local_paths(key, config_get(new, key)), restart, persisted)

    def reboot(self) -> None:
        """A host asks for a reboot: the answer goes out first, then the firmware restarts.

        The restart comes :data:`~seedcam_firmware.visionseed.rpc.REBOOT_DELAY_S` later, so the
        answer is read before the link closes (a pty's unread bytes die with it).
        """
        log.warning("a host asked for a reboot")
        timer = threading.Timer(REBOOT_DELAY_S, self.request_restart)
        timer.daemon = True
        timer.start()

    def list_models(self) -> tuple[ModelInfo, ...]:
        return self._tasks.models if self._tasks else ()

    def select_tasks(self, tasks: Sequence[str]) -> TaskList:
        with self._config_lock:
            new = config_set(self.config, "tasks.enabled", list(tasks))
            self._apply("tasks.enabled", new)
        assert self._tasks is not None
        return TaskList(self._tasks.enabled, self._tasks.available)

    def snapshot(self, quality: int) -> Snapshot:
        frame = self._pipeline.latest_frame if self._pipeline else None
        if frame is None:
            raise RequestFailed(pb.STATUS_FAILED_PRECONDITION, "no camera frame captured yet")
        quality = quality or self.config.pipeline.jpeg_quality
        limit = self.config.link.max_frame_size - JPEG_HEADROOM
        while True:
            jpeg, width, height = encode_jpeg(frame.image, quality)
            if len(jpeg) <= limit or quality <= 10:
                break
            quality = max(10, quality - 15)
        if len(jpeg) > limit:
            raise RequestFailed(pb.STATUS_FAILED_PRECONDITION, "frame too large for one link frame even at quality 10")
        return Snapshot(jpeg, frame.frame_id, frame.timestamp_us, width, height)

    def _apply(self, key: str, new: FirmwareConfig) -> bool:
        """Make a config change take effect (live keys) and persist it.

        Returns:
            True when the change was written into the config file (it survives a restart).

        Raises:
            TaskUnavailable: a task to enable has no loaded model.
            ConfigError: an unknown task, or a task refuses a value; nothing changed.
        """
        tasks = self._tasks
        if tasks is not None:
            tasks.configure(new, previous=self.config)  # raises ConfigError, leaving the old values in force
            if new.tasks.enabled != tasks.enabled:
                try:
                    tasks.select(new.tasks.enabled)  # raises TaskUnavailable / ConfigError
                except ConfigError:
                    tasks.configure(self.config)
                    raise
        link = self._link
        if link is not None and isinstance(link.personality, NativePersonality):
            link.personality.set_timings(new.pipeline.timings)
        self.config = new
        persisted = self.config_path is not None and _persist(self.config_path, key, new)
        if requires_restart(key):
            log.info("config %s changed; takes effect after a restart", key)
        return persisted


def _is_uart(url: str) -> bool:
    return url.startswith("/dev/") and not url.startswith("/dev/pts/")


def _line_rate(url: str, baudrate: int) -> int | None:
    """The link's line rate when it has one: a UART's baud rate, or a ``?throttle=BAUD`` URL."""
    throttle = parse_transport_url(url).throttle
    if throttle is not None:
        return throttle
    return baudrate if _is_uart(url) else None


def _transport_options(url: str, baudrate: int) -> dict[str, object]:
    if _is_uart(url):
        return {"baudrate": baudrate}
    return {}


def _persist(path: Path, key: str, config: FirmwareConfig) -> bool:
    """Write one changed key (or section, or everything for ``""``) back into the config file.

    Returns True once it is written (atomically: temp file, fsync, rename); False, with an
    error logged (and so sent on the LOG channel), when the file cannot be read or written.

    Only that key changes in the file: values that came from CLI flags or the
    environment stay out of it. A reset removes the key, so its default applies.
    A host changes no local-only key (see :mod:`seedcam_firmware.host_policy`), so
    resetting everything or a section, or writing a section, leaves the file's
    local-only entries as they are.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        log.error("cannot persist %s: %s unreadable: %s", key or "the config", path, exc)
        return False
    section, _, name = key.partition(".")
    value = config_get(config, key) if key else None
    defaults = config_reset(config, key) if key else None
    is_default = defaults is not None and config_get(defaults, key) == value
    if not key:
        data = {sec: _local_entries(sec, table) for sec, table in data.items()}
    elif not name:
        table = _local_entries(section, data.get(section, {}))
        if not is_default and isinstance(value, dict):
            table.update({k: v for k, v in value.items() if not is_local_only(f"{section}.{k}")})
        data[section] = table
    else:
        table = data.setdefault(section, {})
        if is_default:
            table.pop(name, None)
        else:
            table[name] = list(value) if isinstance(value, tuple) else value
        if not table:
            data.pop(section)
    data = {sec: table for sec, table in data.items() if table}
    try:
        write_atomically(path, tomli_w.dumps(data).encode())
    except OSError as exc:
        log.error("cannot persist %s into %s: %s", key or "the config", path, exc)
        return False
    return True


def _local_entries(section: str, table: object) -> dict[str, Any]:
    """The local-only keys of one table of the config file (what a host's reset keeps)."""
    if not isinstance(table, dict):
        return {}
    return {k: v for k, v in table.items() if is_local_only(f"{section}.{k}")}

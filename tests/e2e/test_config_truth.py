"""Config that tells the truth (issue 16): host changes persist, the CLI says so, reboot, export/apply.

The real firmware process on a pty (the emulated board), driven through the SDK and ``seedcam``.
"""

from __future__ import annotations

import io
import json
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import wait_until

import seedcam
from seedcam.cli import main
from seedcam_firmware.launcher import EmulatedBoard
from seedcam_firmware.safe_boot import last_good_path

pytestmark = pytest.mark.e2e

WAIT_S = 30.0


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "fw.toml"
    path.write_text("[camera]\nwidth = 160\nheight = 120\nfps = 20.0\n[tasks]\nenabled = []\n")
    return path


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main([*argv, "--timeout", "10"], out)
    return code, out.getvalue()


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_host_change_persists_by_default_with_a_config_file_and_survives_a_restart(
    firmware_factory: Callable[..., EmulatedBoard], tmp_path: Path
) -> None:
    config = _config(tmp_path)
    fw = firmware_factory("--config", str(config))  # no --persist-config: the default with --config
    with seedcam.open(fw.link, timeout=10) as sensor:
        stored = sensor.config_set("camera.fps", 15)
        live = sensor.config_set("device.name", "bench")
        wait_until(last_good_path(config).exists, WAIT_S, "the last good config to be kept (safe boot)")
    assert (stored.value, stored.restart_required, stored.persisted) == (15, True, True)
    assert (live.restart_required, live.persisted) == (False, True)
    assert tomllib.loads(config.read_text())["camera"]["fps"] == 15
    assert tomllib.loads(last_good_path(config).read_text())["camera"]["fps"] == 20.0  # the file as it booted
    fw.terminate()
    fw = firmware_factory("--config", str(config))
    with seedcam.open(fw.link, timeout=10) as sensor:
        assert sensor.config_get("camera.fps") == 15
        assert sensor.config_get("device.name") == "bench"


def test_without_a_config_file_or_with_no_persist_config_nothing_is_written(
    firmware_factory: Callable[..., EmulatedBoard], tmp_path: Path
) -> None:
    config = _config(tmp_path)
    for args in ((), ("--config", str(config), "--no-persist-config")):
        before = _files(tmp_path)
        fw = firmware_factory(*args)
        with seedcam.open(fw.link, timeout=10) as sensor:
            stored = sensor.config_set("camera.fps", 15)
            live = sensor.config_set("device.name", "bench")
            wait_until(lambda s=sensor: s.health is not None and s.health.frames_processed > 2, WAIT_S, "frames")
        fw.terminate()
        assert (stored.restart_required, stored.persisted, live.persisted) == (True, False, False)
        after = {name: data for name, data in _files(tmp_path).items() if name != "firmware.log"}
        assert after == {name: data for name, data in before.items() if name != "firmware.log"}, args


def test_config_set_says_whether_it_was_saved_and_when_it_takes_effect(
    firmware_factory: Callable[..., EmulatedBoard], tmp_path: Path
) -> None:
    fw = firmware_factory("--config", str(_config(tmp_path)))
    assert _cli("config", "set", "device.name", "bench", "-p", fw.link) == (
        0,
        'device.name = "bench"  (saved; takes effect now)\n',
    )
    assert _cli("config", "set", "camera.fps", "15", "-p", fw.link) == (
        0,
        "camera.fps = 15.0  (saved; takes effect after a restart (seedcam reboot))\n",
    )
    code, out = _cli("config", "set", "camera.fps", "12", "-p", fw.link, "--json")
    assert code == 0 and json.loads(out) == {
        "key": "camera.fps",
        "value": 12.0,
        "restart_required": True,
        "persisted": True,
        "note": "saved; takes effect after a restart (seedcam reboot)",
    }
    fw.terminate()
    fw = firmware_factory("--fps", "20")  # no config file: nothing is saved
    assert _cli("config", "set", "device.name", "bench", "-p", fw.link) == (
        0,
        'device.name = "bench"  (not saved: lasts until the firmware restarts)\n',
    )


def test_reboot_restarts_the_firmware_and_results_flow_again(
    firmware_factory: Callable[..., EmulatedBoard], tmp_path: Path
) -> None:
    config = _config(tmp_path)
    fw = firmware_factory("--config", str(config))
    events: list[seedcam.ReconnectEvent] = []
    with seedcam.open(fw.link, timeout=10) as sensor:
        sensor.config_set("camera.fps", 15)  # restart-only: in force after the reboot
        assert sensor.recv(timeout=10) is not None
        before = sensor.device_info
        assert before is not None
        sensor.on_reconnect(events.append)
        after = sensor.reboot(timeout=60)
        assert after.boot_id != before.boot_id
        assert sensor.device_info is not None and sensor.device_info.boot_id == after.boot_id
        assert events and events[-1].device_rebooted and events[-1].old_boot_id == before.boot_id
        wait_until(lambda: sensor.recv(timeout=1) is not None, WAIT_S, "a result after the reboot")
        assert sensor.config_get("camera.fps") == 15
        wait_until(
            lambda: sensor.health is not None and sensor.health.boot_id == after.boot_id,
            WAIT_S,
            "health of the new boot",
        )
    assert fw.proc is not None and fw.proc.poll() is None  # the same process, restarted in place
    code, out = _cli("reboot", "-p", fw.link, "--wait", "60", "--json")
    assert code == 0, out
    answer = json.loads(out)
    assert answer["old_boot_id"] == after.boot_id and answer["boot_id"] not in ("", after.boot_id)


def test_an_exported_config_applied_back_restores_the_changed_values(
    firmware_factory: Callable[..., EmulatedBoard], tmp_path: Path
) -> None:
    fw = firmware_factory("--config", str(_config(tmp_path)))
    code, exported = _cli("config", "get", "-p", fw.link)
    assert code == 0
    saved = tmp_path / "export.json"
    saved.write_text(exported)
    assert json.loads(exported)["camera"]["fps"] == 20.0
    assert _cli("config", "apply", str(saved), "-p", fw.link) == (
        0,
        "nothing to change: the device's config is the file's\n",
    )
    with seedcam.open(fw.link, timeout=10) as sensor:
        sensor.config_set("camera.fps", 12)
        sensor.config_set("pipeline.jpeg_quality", 55)
    code, out = _cli("config", "apply", str(saved), "-p", fw.link)
    assert code == 0, out
    assert out.splitlines() == [
        "camera.fps = 20.0  (saved; takes effect after a restart (seedcam reboot))",
        "pipeline.jpeg_quality = 80  (saved; takes effect now)",
    ]
    with seedcam.open(fw.link, timeout=10) as sensor:
        assert (sensor.config_get("camera.fps"), sensor.config_get("pipeline.jpeg_quality")) == (20.0, 80)
    # a local-only key that differs is refused with the device's message; the other keys still go
    wanted = json.loads(exported)
    wanted["camera"]["source"] = "v4l2"
    wanted["pipeline"]["jpeg_quality"] = 70
    saved.write_text(json.dumps({"key": "", "value": wanted}))  # the form of 'config get --json'
    code, out = _cli("config", "apply", str(saved), "-p", fw.link)
    assert code == 2, out
    refused, changed = out.splitlines()
    assert refused.startswith("camera.source: not changed: ") and "config file" in refused
    assert refused.endswith("(FAILED_PRECONDITION)")
    assert changed == "pipeline.jpeg_quality = 70  (saved; takes effect now)"

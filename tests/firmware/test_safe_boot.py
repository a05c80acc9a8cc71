"""Safe boot (issue 14, finding 2): a persisted host change never stops the next boot.

The firmware keeps the configuration that last booted and ran, falls back to it when the
config file does not boot, and says so on the link (a LOG record) and in Health.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import MODELS, wait_until

import seedcam
from seedcam_firmware.launcher import EmulatedBoard
from seedcam_firmware.safe_boot import last_good_path

WAIT_S = 20.0


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "fw.toml"
    path.write_text(
        f'[camera]\nwidth = 160\nheight = 120\nfps = 15.0\n[tasks]\nenabled = ["lane"]\n[models]\ndir = "{MODELS}"\n'
    )
    return path


def test_a_persisted_host_change_that_stops_the_boot_falls_back_to_the_last_good_config(
    firmware_factory: Callable[..., EmulatedBoard], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = _config(tmp_path)
    fw = firmware_factory("--config", str(config), "--persist-config")
    with seedcam.open(fw.link, timeout=WAIT_S) as sensor:
        wait_until(last_good_path(config).exists, WAIT_S, "the last good config to be kept")
        # a value a host may set (inside the models folder), persisted: the lane model no longer loads
        sensor.config_set("models.lane", "nosuch/manifest.json")
    assert "nosuch" in config.read_text()
    fw.terminate()
    caplog.set_level(logging.ERROR, logger="seedcam.sensor")
    fw = firmware_factory("--config", str(config), "--persist-config")  # old firmware: no boot, every time
    with seedcam.open(fw.link, timeout=WAIT_S) as sensor:
        assert sensor.info().tasks_enabled == ("lane",)
        wait_until(lambda: sensor.health is not None and sensor.health.config_fallback, WAIT_S, "health")
        health = sensor.health
        assert health is not None and "nosuch" in health.config_fallback
        wait_until(
            lambda: any("last configuration that booted" in r.getMessage() for r in caplog.records),
            WAIT_S,
            "the fallback LOG record",
        )
        sensor.config_set("models.lane", "lane/manifest.json")  # the host repairs it
    fw.terminate()
    fw = firmware_factory("--config", str(config), "--persist-config")
    with seedcam.open(fw.link, timeout=WAIT_S) as sensor:
        wait_until(lambda: sensor.health is not None, WAIT_S, "health")
        assert sensor.health.config_fallback == ""


def test_a_persisted_config_file_that_does_not_boot_falls_back_to_the_last_good_one(
    firmware_factory: Callable[..., EmulatedBoard], tmp_path: Path
) -> None:
    config = _config(tmp_path)
    fw = firmware_factory("--config", str(config), "--persist-config")
    wait_until(last_good_path(config).exists, WAIT_S, "the last good config to be kept")
    fw.terminate()
    for bad in ('source = "v4l2"\ndevice = "/dev/video99"\n', 'scene = "/etc/passwd"\n'):
        config.write_text(config.read_text().replace("[camera]\n", f"[camera]\n{bad}", 1))
        fw = firmware_factory("--config", str(config), "--persist-config")
        with seedcam.open(fw.link, timeout=WAIT_S) as sensor:
            assert sensor.info().camera == "synthetic"
            wait_until(lambda: sensor.health is not None, WAIT_S, "health")
            reason = sensor.health.config_fallback
            assert "did not boot" in reason and ("camera" in reason or "scene" in reason)
        fw.terminate()
        config.write_text(last_good_path(config).read_text())


def test_with_no_persist_config_nothing_is_kept(firmware_factory: Callable[..., EmulatedBoard], tmp_path: Path) -> None:
    config = _config(tmp_path)
    fw = firmware_factory("--config", str(config), "--no-persist-config")
    with seedcam.open(fw.link, timeout=WAIT_S) as sensor:
        wait_until(lambda: sensor.health is not None and sensor.health.frames_processed > 2, WAIT_S, "frames")
    fw.terminate()
    assert not last_good_path(config).exists()


def test_without_a_last_good_config_a_broken_file_still_fails_the_boot(tmp_path: Path) -> None:
    config = _config(tmp_path)
    config.write_text(config.read_text().replace("[camera]\n", '[camera]\nscene = "/etc/passwd"\n', 1))
    board = EmulatedBoard("--config", str(config), "--persist-config", workdir=tmp_path)
    with pytest.raises(Exception, match="scene|passwd"):
        board.start().wait_ready(30)
    board.kill()
    assert not last_good_path(config).exists()

"""Pushing through the SDK to the real firmware (in process, on a ``pair://``): what is installed is not sent again."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_device import unique_url
from helpers import MODELS

import seedcam
from seedcam import updates
from seedcam.bundle import write_bundle
from seedcam.cli import main as seedcam_main
from seedcam_firmware.config import config_from_dict
from seedcam_firmware.daemon import Daemon
from seedcam_tools.bundles import build_model_bundle

LANE = MODELS / "lane"


class Board:
    """The firmware's daemon with the lane task and update storage, and an SDK sensor on it."""

    def __init__(self, tmp_path: Path) -> None:
        self.url = unique_url("update-push")
        self.daemon = Daemon(
            config_from_dict(
                {
                    "link": {"url": self.url},
                    "camera": {"source": "synthetic", "width": 160, "height": 120, "fps": 10.0},
                    "tasks": {"enabled": ["lane"]},
                    "models": {"dir": str(MODELS)},
                    "updates": {"dir": str(tmp_path / "updates")},
                }
            )
        )
        self.daemon.start()
        self.sensor = seedcam.open(self.url, timeout=10.0, reconnect=False)

    def close(self) -> None:
        self.sensor.close()
        self.daemon.stop()


@pytest.fixture
def board(tmp_path: Path) -> Iterator[Board]:
    b = Board(tmp_path)
    yield b
    b.close()


def lane_file(tmp_path: Path, version: str) -> Path:
    return write_bundle(build_model_bundle(LANE, version=version, security_counter=1), tmp_path / f"lane-{version}.scb")


def slots(sensor: seedcam.Sensor) -> list[tuple[str, str, bool, bool]]:
    (lane,) = [g for g in updates.list_slots(sensor) if g.name == "lane"]
    return [(s.slot, s.version, s.active, s.previous) for s in lane.slots]


def test_pushing_the_installed_bundle_again_sends_nothing_and_keeps_the_rollback_target(
    board: Board, tmp_path: Path
) -> None:
    first, second = lane_file(tmp_path, "1.0.0"), lane_file(tmp_path, "2.0.0")
    assert not updates.push_bundle(board.sensor, first).already_installed
    assert updates.push_bundle(board.sensor, second).install.slot == "b"
    before = slots(board.sensor)
    assert before == [("a", "1.0.0", False, True), ("b", "2.0.0", True, False)]

    again = updates.push_bundle(board.sensor, second)
    assert again.already_installed and again.bytes_sent == 0 and again.attempts == 1
    assert (again.install.slot, again.install.activated, again.install.bundle_id) == ("b", True, "lane-v3@2.0.0")
    assert slots(board.sensor) == before  # no slot changed: 1.0.0 is still the rollback target

    kept = updates.push_bundle(board.sensor, first, activate=False)  # the rollback target, not to be activated
    assert kept.already_installed and kept.bytes_sent == 0 and not kept.activated
    assert slots(board.sensor) == before


def test_pushing_the_rollback_target_with_activate_switches_to_it_without_a_transfer(
    board: Board, tmp_path: Path
) -> None:
    first, second = lane_file(tmp_path, "1.0.0"), lane_file(tmp_path, "2.0.0")
    updates.push_bundle(board.sensor, first)
    updates.push_bundle(board.sensor, second)
    back = updates.push_bundle(board.sensor, first)
    assert back.already_installed and back.bytes_sent == 0
    assert (back.install.slot, back.activated, back.install.previous_slot) == ("a", True, "b")
    assert slots(board.sensor) == [("a", "1.0.0", True, False), ("b", "2.0.0", False, True)]
    (model,) = [m for m in board.sensor.models() if m.task == "lane"]
    assert model.version == "1.0.0"


def test_the_cli_says_already_installed(board: Board, tmp_path: Path) -> None:
    path = lane_file(tmp_path, "1.0.0")
    updates.push_bundle(board.sensor, path)
    board.sensor.close()
    out = io.StringIO()
    assert seedcam_main(["--port", board.url, "models", "push", str(path), "-q"], out) == 0
    assert "lane-v3@1.0.0 is already installed in lane slot a (active); nothing was sent" in out.getvalue()

"""A successful ``ota/set``: the bridge CLI with ``--catalog`` installs a catalog entry on the emulated board.

The board is the real firmware on a pty, with an update store and the catalog's key among
its trusted keys (as in tests/e2e/test_catalog_install.py); the catalog is built in the
test by ``seedcam-tools catalog build`` from a copy of the shipped lane model at its next
minor version; the bridge is ``seedcam bridge mqtt`` as its own process. A signed ``ota/set`` for
that entry goes through the broker; ``ota/state`` reports verified, the push's progress and
installed, and the board's models (asked through the bridge) show the new version active.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from catalog_helpers import LANE_VERSION, NEXT_LANE_VERSION, model_at_version
from mqtt_broker import Mosquitto
from mqtt_watch import Watcher

from seedcam.catalog import load_catalog
from seedcam.fleet import sign_ota_request
from seedcam_firmware.launcher import EmulatedBoard
from seedcam_tools.bundles import generate_keypair, write_keypair
from seedcam_tools.cli import main as tools_main

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


def test_ota_set_installs_the_catalog_entry_and_ota_state_reports_progress_and_success(
    mqtt_broker: Mosquitto,
    firmware_factory: Callable[..., EmulatedBoard],
    bridge_process: Callable[..., subprocess.Popen[str]],
    topic_base: str,
    tmp_path: Path,
) -> None:
    key = generate_keypair()
    private, public = write_keypair(key, tmp_path / "ota")
    catalog = tmp_path / "catalog"
    models = model_at_version(tmp_path / "next", "lane", NEXT_LANE_VERSION)
    argv = [
        "catalog",
        "build",
        "--models",
        str(models),
        "--model",
        "lane",
        "--out",
        str(catalog),
        "--key",
        str(private),
    ]
    assert tools_main(argv) == 0
    entry = load_catalog(catalog.as_uri(), [key.public]).find("lane-v3")
    assert entry.version == NEXT_LANE_VERSION

    board = firmware_factory(
        "--fps", "10", "--tasks", "lane",
        "--set", f"updates.dir={tmp_path / 'storage'}", "--set", f"updates.public_keys={key.public.hex()}",
    )  # fmt: skip
    watcher = Watcher(mqtt_broker.plain_port, f"{topic_base}/#")
    root = f"{topic_base}/board"
    bridge_process(
        "-p", board.link, "--broker", mqtt_broker.url, "--base", topic_base, "--device-id", "board",
        "--no-discovery", "-q", "--catalog", catalog.as_uri(), "--trusted-key", str(public),
    )  # fmt: skip
    watcher.wait_json(f"{root}/status", lambda s: s["state"] == "online", 60)
    before = watcher.request(f"{root}/cmd/models", timeout=30)["result"]
    (lane,) = [m for m in before if m["task"] == "lane"]
    assert lane["version"] == LANE_VERSION
    info = watcher.last(f"{root}/info")
    assert info is not None and info.json()["bridge"]["ota"] is True

    answer = watcher.request(
        f"{root}/ota/set", sign_ota_request("lane-v3", NEXT_LANE_VERSION, entry.sha256, key.private), 120
    )
    assert answer["ok"], answer
    watcher.wait_json(f"{root}/ota/state", lambda s: s["state"] == "installed")  # the answer may overtake it
    install = answer["result"]["install"]
    assert install["name"] == "lane" and install["activated"] and not answer["result"]["already_installed"]
    states = [m.json() for m in watcher.on(f"{root}/ota/state")]
    assert all(s["sha256"] == entry.sha256 for s in states)
    assert [s["state"] for s in states][:2] == ["verified", "installing"]
    assert states[-1]["state"] == "installed" and not states[-1]["already_installed"]
    progress = [s for s in states if s["state"] == "installing"]
    sent = [s["sent"] for s in progress]
    assert sent == sorted(sent) and len(progress) >= 2, progress
    assert progress[-1]["percent"] == 100 and progress[-1]["sent"] == progress[-1]["total"] > 0
    assert len(progress) <= 12  # 0 %, then at most one per 10 %: no message per chunk

    after = watcher.request(f"{root}/cmd/models")["result"]
    (lane,) = [m for m in after if m["task"] == "lane"]
    assert (lane["id"], lane["version"], lane["active"]) == ("lane-v3-int8", NEXT_LANE_VERSION, True)
    watcher.wait(  # the retained info follows: the new model version is there for a late subscriber
        lambda: any(
            m["version"] == NEXT_LANE_VERSION
            for m in json.loads(watcher.on(f"{root}/info")[-1].payload)["device"]["models"]
        ),
        what=f"info with lane {NEXT_LANE_VERSION}",
    )
    watcher.close()

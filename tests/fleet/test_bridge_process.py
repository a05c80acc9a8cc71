"""``seedcam bridge mqtt`` as its own process on the real firmware (a pty): the Will after a SIGKILL, CLI errors."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable

import pytest
from mqtt_broker import USERNAME, Mosquitto
from mqtt_watch import Watcher

from seedcam._proto import seedcam_pb2 as pb
from seedcam_firmware.launcher import EmulatedBoard

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

KEEPALIVE_S = 2


def test_sigkill_of_a_bridge_sends_its_will_within_the_keepalive(
    mqtt_broker: Mosquitto,
    firmware_factory: Callable[..., EmulatedBoard],
    bridge_process: Callable[..., subprocess.Popen[str]],
    topic_base: str,
) -> None:
    board = firmware_factory("--fps", "10", "--tasks", "")
    watcher = Watcher(mqtt_broker.plain_port, f"{topic_base}/#")
    process = bridge_process(
        "-p", board.link, "--broker", mqtt_broker.url, "--base", topic_base, "--device-id", "board",
        "--keepalive", str(KEEPALIVE_S), "--no-discovery", "-q",
    )  # fmt: skip
    online = watcher.wait_json(f"{topic_base}/board/status", lambda s: s["state"] == "online", 60)
    watcher.wait(lambda: len(watcher.on(f"{topic_base}/board/results")) >= 3, 30, "results from the firmware")
    frames = [pb.Result.FromString(m.payload).frame_id for m in watcher.on(f"{topic_base}/board/results")]
    assert frames == sorted(frames)
    info = watcher.last(f"{topic_base}/board/info")
    assert info is not None and info.json()["device"]["boot_id"] == online["boot_id"]
    killed = time.monotonic()
    process.send_signal(signal.SIGKILL)
    offline = watcher.wait_json(f"{topic_base}/board/status", lambda s: s["state"] == "offline", 3 * KEEPALIVE_S)
    arrived = watcher.on(f"{topic_base}/board/status")[-1].received - killed
    assert offline["reason"] == "connection lost" and offline["boot_id"] == online["boot_id"]
    assert arrived <= 1.5 * KEEPALIVE_S + 1.0  # the broker's keepalive check, plus its one-second tick
    # SIGTERM is a clean stop: offline with reason "stopped"
    second = bridge_process(
        "-p", board.link, "--broker", mqtt_broker.url, "--base", topic_base, "--device-id", "board2", "--no-discovery",
    )  # fmt: skip
    assert second.stdout is not None
    assert second.stdout.readline().startswith(f"bridging {board.link} as {topic_base}/board2 on mqtt://")
    second.send_signal(signal.SIGTERM)
    out, err = second.communicate(timeout=20)
    assert second.returncode == 130, err  # the CLI's code for an interrupt
    assert out.startswith("stopped: ") and "1 connections" in out
    assert watcher.wait_json(f"{topic_base}/board2/status", lambda s: s["state"] == "offline")["reason"] == "stopped"
    watcher.close()


def test_cli_errors_are_one_line(
    mqtt_broker: Mosquitto,
    firmware_factory: Callable[..., EmulatedBoard],
    bridge_process: Callable[..., subprocess.Popen[str]],
) -> None:
    board = firmware_factory("--fps", "5", "--tasks", "")
    cases = [
        (["--broker", "http://x"], 1, "scheme must be mqtt:// or mqtts://"),
        (["--broker", f"mqtt://{USERNAME}:wrong@127.0.0.1:{mqtt_broker.auth_port}"], 1, "refused the connection"),
        (["--broker", f"mqtts://127.0.0.1:{mqtt_broker.tls_port}"], 2, "certificate verify failed"),
        (["--broker", mqtt_broker.url, "--snapshot-interval", "0.5"], 1, "at least the rate limit"),
    ]
    for args, code, text in cases:
        process = bridge_process("-p", board.link, *args)
        _, err = process.communicate(timeout=60)
        assert process.returncode == code, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("seedcam: error:") and text in lines[0], err


def test_after_a_device_reboot_the_will_carries_the_new_boot_id(
    mqtt_broker: Mosquitto,
    firmware_factory: Callable[..., EmulatedBoard],
    bridge_process: Callable[..., subprocess.Popen[str]],
    topic_base: str,
) -> None:
    board = firmware_factory("--fps", "10", "--tasks", "")
    watcher = Watcher(mqtt_broker.plain_port, f"{topic_base}/#")
    root = f"{topic_base}/board"
    process = bridge_process(
        "-p", board.link, "--broker", mqtt_broker.url, "--base", topic_base, "--device-id", "board",
        "--keepalive", str(KEEPALIVE_S), "--health-interval", "0.5", "--no-discovery", "-q",
    )  # fmt: skip
    first = watcher.wait_json(f"{root}/status", lambda s: s["state"] == "online", 60)
    answer = watcher.request(f"{root}/cmd/reboot", timeout=60)  # the firmware's reboot RPC, through the bridge
    assert answer["ok"], answer
    boot = answer["result"]["boot_id"]
    assert boot and boot != first["boot_id"]
    # the new status first, then a clean reconnection whose CONNECT carries the Will with the new boot id
    rebooted = watcher.wait_json(f"{root}/status", lambda s: s.get("reason") == "device rebooted", 30)
    assert rebooted["state"] == "online" and rebooted["boot_id"] == boot and rebooted["connection"] == 1
    renewed = watcher.wait_json(f"{root}/status", lambda s: s["connection"] == 2, 30)
    assert renewed["state"] == "online" and renewed["boot_id"] == boot
    health = watcher.wait_json(f"{root}/health", lambda h: h["bridge"]["will_renewals"] == 1, 30)
    assert health["bridge"]["connections"] == 2
    assert [m.json()["state"] for m in watcher.on(f"{root}/status")] == ["online"] * 3  # the old Will was not sent
    watcher.wait_json(f"{root}/info", lambda i: i["device"]["boot_id"] == boot)  # republished on the new connection
    process.send_signal(signal.SIGKILL)
    offline = watcher.wait_json(f"{root}/status", lambda s: s["state"] == "offline", 3 * KEEPALIVE_S)
    assert offline["reason"] == "connection lost" and offline["boot_id"] == boot
    watcher.close()

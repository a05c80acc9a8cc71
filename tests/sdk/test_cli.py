"""The ``seedcam`` CLI against the real firmware link end on a pair:// (see fake_device.py)."""

# ruff: noqa: F811  (tests take the fixtures imported from fake_device as parameters)

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from fake_device import (
    FAKE_JPEG,
    FakeDevice,
    make_device,  # noqa: F401 - fixture
    unique_url,
)

import seedcam.ports
from seedcam.cli import main
from seedcam.ports import SEEDCAM_PID, SEEDCAM_VID, PortInfo
from seedcam.transport import open_transport

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def served(make_device: Any) -> FakeDevice:
    """A fake device waiting for a host; every CLI run connects to it anew."""
    return make_device(connect=False)


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def run_on(dev: FakeDevice, *argv: str) -> tuple[int, str]:
    return run("--port", dev.url, "--timeout", "5", *argv)


def assert_one_error_line(capsys: pytest.CaptureFixture[str], *fragments: str) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("seedcam: error:")
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


# ---------------------------------------------------------------- info / monitor


def test_info_text(served: FakeDevice) -> None:
    code, out = run_on(served, "info")
    assert code == 0
    assert "SC-TEST-0001" in out
    assert served.services.boot_id in out
    assert "0.1.0-test" in out and "320x240" in out
    assert "lane-int8@1.0.0" in out and "det-int8@0.3.0" in out


def test_info_json(served: FakeDevice) -> None:
    code, out = run_on(served, "info", "--json")
    assert code == 0
    info = json.loads(out)
    assert info["boot_id"] == served.services.boot_id
    assert info["serial_number"] == "SC-TEST-0001"
    assert [m["id"] for m in info["models"]] == ["lane-int8@1.0.0", "det-int8@0.3.0"]


def test_port_from_environment(served: FakeDevice, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEEDCAM_PORT", served.url)
    code, out = run("info", "--json")
    assert code == 0 and json.loads(out)["boot_id"] == served.services.boot_id


def test_monitor_json_count(served: FakeDevice) -> None:
    served.start_streaming()
    code, out = run_on(served, "monitor", "--json", "-n", "3")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 3
    results = [json.loads(line) for line in lines]
    ids = [r["frame_id"] for r in results]
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert results[0]["model_ids"] == ["lane-int8@1.0.0"]
    assert results[0]["timings_us"]["capture_to_send"] >= 0  # the default summary figure


def test_monitor_text_and_duration(served: FakeDevice) -> None:
    served.start_streaming()
    code, out = run_on(served, "monitor", "--duration", "0.3")
    assert code == 0
    lines = out.splitlines()
    assert lines and all(line.startswith("frame") for line in lines)


# ---------------------------------------------------------------- config / models / snapshot


def test_config_get_and_set(served: FakeDevice) -> None:
    assert run_on(served, "config", "get", "camera.fps") == (0, "30\n")
    code, out = run_on(served, "config", "set", "camera.fps", "15")
    assert (code, out) == (
        0,
        "camera.fps = 15  (not saved: lasts until the firmware restarts)\n",
    )  # the fake persists nothing
    assert served.services.config["camera.fps"] == 15
    code, out = run_on(served, "config", "set", "camera.width", "640")
    assert code == 0 and "camera.width = 640" in out and "not saved: takes effect after a restart" in out
    code, out = run_on(served, "config", "get")
    assert code == 0 and json.loads(out)["camera.fps"] == 15


def test_config_unknown_key_is_a_user_error(served: FakeDevice, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    code, out = run_on(served, "config", "get", "camera.nosuch")
    assert code == 1 and out == ""
    assert_one_error_line(capsys, "NOT_FOUND", "camera.nosuch")
    code, _ = run_on(served, "config", "set", "camera.nosuch", "1")
    assert code == 1
    assert_one_error_line(capsys, "NOT_FOUND")


def test_config_bad_value_is_a_user_error(served: FakeDevice, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    code, _ = run_on(served, "config", "set", "camera.fps", "fast")
    assert code == 1
    assert_one_error_line(capsys, "INVALID_ARGUMENT")
    code, _ = run_on(served, "config", "set", "camera.fps")  # value missing
    assert code == 1
    assert_one_error_line(capsys)


def test_device_failure_is_exit_2(served: FakeDevice, capsys: pytest.CaptureFixture[str]) -> None:
    served.services.failures["list_models"] = RuntimeError("flash read failed")
    capsys.readouterr()
    code, _ = run_on(served, "models")
    assert code == 2
    assert_one_error_line(capsys, "INTERNAL", "flash read failed")


def test_models(served: FakeDevice) -> None:
    code, out = run_on(served, "models", "--json")
    assert code == 0
    models = [json.loads(line) for line in out.splitlines()]
    assert [m["task"] for m in models] == ["lane", "detection"]


def test_snapshot_writes_the_jpeg(served: FakeDevice, tmp_path: Path) -> None:
    target = tmp_path / "file.jpg"
    code, out = run_on(served, "snapshot", "-o", str(target))
    assert code == 0
    assert target.read_bytes() == FAKE_JPEG
    assert "320x240" in out and "frame 42" in out


# ---------------------------------------------------------------- no device / no answer


def test_device_that_never_answers_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    url = unique_url("silent")
    with open_transport(url):  # the other end exists but never answers
        capsys.readouterr()
        code, out = run("--port", url, "--timeout", "0.5", "info")
    assert code == 2 and out == ""
    assert_one_error_line(capsys, url)


def test_no_sensor_found_is_exit_1(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("SEEDCAM_PORT", raising=False)
    monkeypatch.setattr(seedcam.ports, "list_ports", list)
    capsys.readouterr()
    code, out = run("--timeout", "0.5", "info")
    assert code == 1 and out == ""
    assert_one_error_line(capsys, "no seedcam sensor found", "SEEDCAM_PORT")


def test_bad_arguments_are_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("config", "frobnicate")[0] == 1
    assert "usage" in capsys.readouterr().err
    assert run("monitor", "-n", "many")[0] == 1
    assert run("--version")[0] == 0


# ---------------------------------------------------------------- ports


def test_ports_lists_sensors_with_vid_pid_and_serial(monkeypatch: pytest.MonkeyPatch) -> None:
    ports = [
        PortInfo("/dev/ttyACM0", SEEDCAM_VID, SEEDCAM_PID, "SC-AAA", "seedcam sensor"),
        PortInfo("/dev/ttyACM1", SEEDCAM_VID, SEEDCAM_PID, "SC-BBB", "seedcam sensor"),
        PortInfo("/dev/ttyUSB0", 0x0403, 0x6001, "FT123", "FT232R USB UART"),
        PortInfo("/dev/ttyS0"),
    ]
    monkeypatch.setattr(seedcam.ports, "list_ports", lambda: ports)

    code, out = run("ports")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("/dev/ttyACM0") and "1209:5eed" in lines[0] and "SC-AAA" in lines[0]
    assert lines[1].startswith("/dev/ttyACM1") and "SC-BBB" in lines[1]

    code, out = run("ports", "--all")
    assert code == 0
    assert "0403:6001" in out and "FT123" in out and "----:----" in out
    assert len(out.splitlines()) == 4

    code, out = run("ports", "--json")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["device"], r["vid"], r["pid"], r["serial_number"]) for r in rows] == [
        ("/dev/ttyACM0", SEEDCAM_VID, SEEDCAM_PID, "SC-AAA"),
        ("/dev/ttyACM1", SEEDCAM_VID, SEEDCAM_PID, "SC-BBB"),
    ]

    monkeypatch.setattr(seedcam.ports, "list_ports", lambda: ports[2:])
    code, out = run("ports")
    assert code == 0 and "no seedcam sensors found" in out


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_sigterm_unwinds_like_ctrl_c(signame: str) -> None:
    """``kill`` (SIGTERM) ends a command through its cleanup, like Ctrl-C (SIGINT): exit 130, not death by signal."""
    import os
    import pty
    import select
    import signal
    import subprocess
    import sys

    from seedcam.cli import EXIT_INTERRUPTED

    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "seedcam.cli", "--port", os.ttyname(slave), "info"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            # an ignored SIGINT (a job started with '&' by a non-interactive shell) is inherited: Python would
            # then keep ignoring it instead of raising KeyboardInterrupt
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            ready, _, _ = select.select([master], [], [], 20)  # its first request: the command is running
            assert ready, "the CLI never wrote to the port"
            os.read(master, 4096)
            proc.send_signal(getattr(signal, signame))
            assert proc.wait(10) == EXIT_INTERRUPTED
            assert b"Traceback" not in proc.stderr.read()
        finally:
            proc.kill()
            proc.wait(5)
            proc.stderr.close()
    finally:
        os.close(master)
        os.close(slave)

"""The ``seedcam`` CLI behaves like esptool / pyserial's tools: baud rates, options anywhere, exit codes, --json.

Against the real firmware link end on a ``pair://`` or a pty (see fake_device.py), and the firmware's
daemon with update storage for the ``models`` update commands.
"""

# ruff: noqa: F811  (tests take the fixtures imported from fake_device as parameters)

from __future__ import annotations

import io
import json
import logging
import os
import termios
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_device import (
    FakeDevice,
    make_device,  # noqa: F401 - fixture
    unique_url,
)
from helpers import MODELS

import seedcam
import seedcam.ports
from seedcam.bundle import write_bundle
from seedcam.cli import _logging, _parser, main
from seedcam.ports import SEEDCAM_PID, SEEDCAM_VID, PortInfo
from seedcam.sensor import Sensor
from seedcam.transport import open_transport
from seedcam.transport.serial_port import SerialTransport
from seedcam.transport.trace import TRACE_LOGGER
from seedcam_firmware.config import config_from_dict
from seedcam_firmware.daemon import Daemon
from seedcam_tools.bundles import build_model_bundle

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEEDCAM_PORT", raising=False)
    monkeypatch.delenv("SEEDCAM_BAUD", raising=False)


@pytest.fixture
def served(make_device: Any) -> FakeDevice:
    """A fake device on a pair:// waiting for a host; every CLI run connects to it anew."""
    return make_device(connect=False)


@pytest.fixture
def on_pty(tmp_path: Path) -> Iterator[tuple[FakeDevice, str]]:
    """A fake device on a pty master, and the path of the slave a host opens as a serial port."""
    link = str(tmp_path / "ttyFAKE")
    dev = FakeDevice(url=f"pty://{link}")
    yield dev, link
    dev.close()


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def one_error_line(capsys: pytest.CaptureFixture[str], *fragments: str) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if not line.startswith("usage:") and line.strip()]
    assert len(lines) == 1, err
    for fragment in fragments:
        assert fragment in lines[0], err
    return lines[0]


def line_speed(path: str) -> int:
    """The output speed the serial port at ``path`` is set to (a termios ``B...`` constant)."""
    fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    try:
        return termios.tcgetattr(fd)[5]
    finally:
        os.close(fd)


# ---------------------------------------------------------------- 1. baud rate


@pytest.mark.parametrize(
    ("argv", "env", "query", "speed"),
    [
        ((), None, "", termios.B921600),  # the default
        ((), "38400", "", termios.B38400),  # $SEEDCAM_BAUD
        (("-b", "19200"), "38400", "", termios.B19200),  # --baud beats the environment
        (("--baud", "19200"), None, "?baud=57600", termios.B57600),  # the URL's option beats --baud
        (("info", "-b", "115200"), None, "", termios.B115200),  # after the command's name too
    ],
    ids=["default", "env", "option-over-env", "url-over-option", "after-command"],
)
def test_baud_rate_precedence(
    on_pty: tuple[FakeDevice, str],
    monkeypatch: pytest.MonkeyPatch,
    argv: tuple[str, ...],
    env: str | None,
    query: str,
    speed: int,
) -> None:
    dev, path = on_pty
    if env is not None:
        monkeypatch.setenv("SEEDCAM_BAUD", env)
    args = [*argv] if argv[:1] == ("info",) else [*argv, "info"]
    code, out = run("-p", path + query, "--json", *args)
    assert code == 0
    assert json.loads(out)["serial_number"] == dev.services.serial_number
    assert line_speed(path) == speed


@pytest.mark.parametrize(
    ("argv", "env", "fragments"),
    [
        (("-b", "fast"), None, ("'fast'", "-b/--baud")),
        (("-b", "0"), None, ("'0'", "-b/--baud")),
        ((), "9600x", ("'9600x'", "$SEEDCAM_BAUD")),
        (("--port-query", "?baud=fast"), None, ("bad baud", "whole number")),
        (("--port-query", "?baudrate=115200"), None, ("baudrate", "did you mean 'baud'")),
        (("--port-query", "?baud=0"), None, ("bad baud",)),
    ],
    ids=["word", "zero", "env", "url-word", "pyserial-spelling", "url-zero"],
)
def test_a_bad_baud_rate_is_one_line_and_a_usage_error(
    on_pty: tuple[FakeDevice, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: tuple[str, ...],
    env: str | None,
    fragments: tuple[str, ...],
) -> None:
    dev, path = on_pty
    if env is not None:
        monkeypatch.setenv("SEEDCAM_BAUD", env)
    if argv[:1] == ("--port-query",):
        path, argv = path + argv[1], ()
    capsys.readouterr()
    calls = list(dev.services.calls)
    code, out = run("-p", path, *argv, "info")
    assert (code, out) == (1, "")
    assert one_error_line(capsys, *fragments).startswith("seedcam: error:")
    assert dev.services.calls == calls  # refused before anything was asked


def test_baud_is_not_used_on_a_url_that_is_no_serial_port(
    served: FakeDevice, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert run("-v", "-b", "9600", "-p", served.url, "info")[0] == 0
    assert "9600 not used" in capsys.readouterr().err  # -v shows why
    code, _ = run("-p", served.url + "?baud=9600", "info")  # an explicit ?baud= there is a mistake
    assert code == 1
    one_error_line(capsys, "for serial ports")


# ---------------------------------------------------------------- 2. options before or after the command


@pytest.mark.parametrize(
    "argv",
    [
        ("-p", "URL", "--json", "info"),
        ("info", "-p", "URL", "--json"),
        ("--json", "info", "--port", "URL"),
        ("-p", "URL", "info", "--json", "--timeout", "5"),
        ("models", "-p", "URL", "--json"),
        ("models", "list", "-p", "URL", "--json"),
        ("-p", "URL", "models", "--json", "list"),
    ],
)
def test_shared_options_work_before_and_after_the_command(served: FakeDevice, argv: tuple[str, ...]) -> None:
    code, out = run(*(served.url if a == "URL" else a for a in argv))
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows and all(isinstance(row, dict) for row in rows)


def test_a_value_before_the_command_is_not_reset_by_the_commands_defaults() -> None:
    parser = _parser()
    before = parser.parse_args(["-p", "X", "-b", "115200", "--timeout", "2", "--json", "-q", "models", "push", "f"])
    assert (before.port, before.baud, before.timeout, before.json, before.quiet) == ("X", "115200", 2.0, True, True)
    after = parser.parse_args(["models", "push", "f", "-p", "X", "-q", "--trace", "-v"])
    assert (after.port, after.quiet, after.trace, after.verbose, after.timeout) == ("X", True, True, 1, 5.0)
    neither = parser.parse_args(["snapshot", "-o", "x.jpg"])
    assert (neither.port, neither.baud, neither.json, neither.quiet, neither.verbose, neither.trace) == (
        None,
        None,
        False,
        False,
        0,
        False,
    )


# ---------------------------------------------------------------- 3. models sub-commands


def test_models_and_models_list_both_list_the_models_on_the_device(served: FakeDevice) -> None:
    code, bare = run("-p", served.url, "models")
    assert code == 0
    assert run("-p", served.url, "models", "list") == (0, bare)
    assert [line.split()[1] for line in bare.splitlines()] == ["lane", "detection"]


@pytest.mark.parametrize(
    "argv",
    [("models", "frobnicate"), ("models", "push"), ("models", "activate", "lane"), ("models", "delete", "lane", "c")],
)
def test_models_sub_commands_check_their_arguments(argv: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert run("-p", "pair://nobody-listens", *argv)[0] == 1
    err = capsys.readouterr().err
    assert "usage: seedcam models" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["list", "slots", "push", "activate", "rollback", "delete"])
def test_every_models_sub_command_has_its_own_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("models", command, "--help")[0] == 0
    assert f"usage: seedcam models {command}" in capsys.readouterr().out


class Board:
    """The firmware's daemon with the lane task and update storage, on a pair://."""

    def __init__(self, tmp_path: Path) -> None:
        self.url = unique_url("cli-board")
        updates_dir = str(tmp_path / "updates")
        self.daemon = Daemon(
            config_from_dict(
                {
                    "link": {"url": self.url},
                    "camera": {"source": "synthetic", "width": 160, "height": 120, "fps": 10.0},
                    "tasks": {"enabled": ["lane"]},
                    "models": {"dir": str(MODELS)},
                    "updates": {"dir": updates_dir},
                }
            )
        )
        self.daemon.start()
        self.bundles = [
            write_bundle(build_model_bundle(MODELS / "lane", version=v, security_counter=1), tmp_path / f"lane-{v}.scb")
            for v in ("1.0.0", "2.0.0")
        ]


@pytest.fixture
def board(tmp_path: Path) -> Iterator[Board]:
    b = Board(tmp_path)
    yield b
    b.daemon.stop()


def test_update_commands_through_models_sub_commands_with_json(board: Board) -> None:
    """push, slots, rollback, activate and delete, each printing JSON Lines."""
    first, second = (str(b) for b in board.bundles)

    def json_rows(*argv: str) -> list[dict[str, Any]]:
        code, out = run("-p", board.url, "--timeout", "10", "--json", "-q", *argv)
        assert code == 0, argv
        rows = [json.loads(line) for line in out.splitlines()]
        assert rows and all(isinstance(row, dict) for row in rows), out
        return rows

    (pushed,) = json_rows("models", "push", first)
    assert pushed["install"]["slot"] == "a" and not pushed["already_installed"]
    json_rows("models", "push", second)
    (lane,) = [g for g in json_rows("models", "slots") if g["name"] == "lane"]
    assert [(s["slot"], s["version"], s["active"]) for s in lane["slots"]] == [
        ("a", "1.0.0", False),
        ("b", "2.0.0", True),
    ]
    (back,) = json_rows("models", "rollback", "lane")
    assert (back["slot"], back["activated"]) == ("a", True)
    (again,) = json_rows("models", "activate", "lane", "b")
    assert again["slot"] == "b"
    groups = json_rows("models", "delete", "lane", "a")
    (lane,) = [g for g in groups if g["name"] == "lane"]
    assert [s["bundle_id"] for s in lane["slots"]][0] == ""  # slot a emptied

    code, out = run("-p", board.url, "--timeout", "10", "models", "slots")  # and as text
    assert code == 0 and "lane: security counter" in out and "(empty)" in out


# ---------------------------------------------------------------- 4. a port that cannot be opened


def test_a_missing_port_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "ttyNOPE")
    capsys.readouterr()
    assert run("-p", missing, "info") == (2, "")
    line = one_error_line(capsys)
    assert line == f"seedcam: error: port {missing} busy or missing: No such file or directory"


def test_a_missing_port_from_the_environment_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "ttyNOPE")
    monkeypatch.setenv("SEEDCAM_PORT", missing + "?baud=115200")
    capsys.readouterr()
    assert run("info")[0] == 2
    one_error_line(capsys, f"port {missing} (from $SEEDCAM_PORT) busy or missing:", "No such file")


def test_a_path_that_is_no_serial_port_is_one_line_with_pyserials_reason(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert run("-p", "/dev/null", "info") == (2, "")
    line = one_error_line(capsys, "seedcam: error: port /dev/null busy or missing: Could not configure port")
    assert "Errno" not in line


def test_a_busy_port_is_one_line_naming_it(on_pty: tuple[FakeDevice, str], capsys: pytest.CaptureFixture[str]) -> None:
    _, path = on_pty
    with SerialTransport(path):  # another program holds the port (exclusive lock)
        capsys.readouterr()
        assert run("-p", path, "info") == (2, "")
    one_error_line(capsys, f"port {path} busy or missing: in use by another program")


# ---------------------------------------------------------------- 5 and 7. exit codes, --json everywhere


def _interrupt(*args: object, **kwargs: object) -> None:
    raise KeyboardInterrupt


def _silent_port(stack: list[Any]) -> str:
    url = unique_url("silent")
    stack.append(open_transport(url))  # the other end exists but never answers
    return url


EXIT_CASES = [
    ("success", ("-p", "URL", "info"), 0),
    ("usage: unknown command", ("-p", "URL", "frobnicate"), 1),
    ("usage: bad choice", ("-p", "URL", "config", "frobnicate"), 1),
    ("usage: bad number", ("-p", "URL", "monitor", "-n", "many"), 1),
    ("usage: bad baud", ("-p", "URL", "-b", "fast", "info"), 1),
    ("usage: config set without value", ("-p", "URL", "config", "set", "camera.fps"), 1),
    ("user: unknown key (RPC NOT_FOUND)", ("-p", "URL", "config", "get", "camera.nosuch"), 1),
    ("user: bad value (RPC INVALID_ARGUMENT)", ("-p", "URL", "config", "set", "camera.fps", "fast"), 1),
    ("user: bad URL option", ("-p", "URL?speed=1", "info"), 1),
    ("device: the device failed (RPC INTERNAL)", ("-p", "URL", "models"), 2),
    ("device: timeout", ("-p", "SILENT", "--timeout", "0.3", "info"), 2),
    ("user: no sensor found", ("--timeout", "0.3", "info"), 1),
    ("interrupted: Ctrl-C", ("-p", "URL", "monitor"), 130),
]


@pytest.mark.parametrize(("case", "argv", "code"), EXIT_CASES, ids=[case for case, _, _ in EXIT_CASES])
def test_exit_codes(
    served: FakeDevice,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    case: str,
    argv: tuple[str, ...],
    code: int,
) -> None:
    opened: list[Any] = []
    if "RPC INTERNAL" in case:
        served.services.failures["list_models"] = RuntimeError("flash read failed")
    if "no sensor" in case:
        monkeypatch.setattr(seedcam.ports, "list_ports", list)
    if "Ctrl-C" in case:
        monkeypatch.setattr(Sensor, "recv", _interrupt)
    silent = _silent_port(opened) if "SILENT" in argv else ""
    try:
        capsys.readouterr()
        got, out = run(*(a.replace("URL", served.url).replace("SILENT", silent) for a in argv))
    finally:
        for transport in opened:
            transport.close()
    err = capsys.readouterr().err
    assert got == code, err
    assert "Traceback" not in err
    if code in (1, 2):
        assert out == "" and "error:" in err  # "seedcam: error: ..." or argparse's "seedcam info: error: ..."


def _ports(monkeypatch: pytest.MonkeyPatch) -> None:
    found = [PortInfo("/dev/ttyACM0", SEEDCAM_VID, SEEDCAM_PID, "SC-AAA", "seedcam sensor")]
    monkeypatch.setattr(seedcam.ports, "list_ports", lambda: found)


@pytest.mark.parametrize(
    ("argv", "check"),
    [
        (("ports",), lambda rows: rows[0]["serial_number"] == "SC-AAA"),
        (("info",), lambda rows: rows[0]["serial_number"] == "SC-TEST-0001"),
        (("monitor", "-n", "2"), lambda rows: len(rows) == 2 and "frame_id" in rows[0]),
        (("config", "get"), lambda rows: rows == [{"key": "", "value": rows[0]["value"]}] and rows[0]["value"]),
        (("config", "get", "camera.fps"), lambda rows: rows == [{"key": "camera.fps", "value": 30}]),
        (("config", "set", "camera.fps", "15"), lambda rows: rows[0]["value"] == 15),
        (("config", "reset", "camera.fps"), lambda rows: rows[0]["key"] == "camera.fps"),
        (("models",), lambda rows: [r["task"] for r in rows] == ["lane", "detection"]),
        (("models", "list"), lambda rows: [r["task"] for r in rows] == ["lane", "detection"]),
        (("snapshot", "-o", "SNAP"), lambda rows: rows[0]["width"] == 320 and rows[0]["bytes"] > 0),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, tuple) else "",
)
def test_json_on_every_data_command(
    served: FakeDevice,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    argv: tuple[str, ...],
    check: Callable[[list[Any]], bool],
) -> None:
    _ports(monkeypatch)
    served.start_streaming()
    snap = str(tmp_path / "snap.jpg")
    code, out = run("-p", served.url, *(snap if a == "SNAP" else a for a in argv), "--json")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows and check(rows), out


# ---------------------------------------------------------------- 6. -v, -q, --trace


def _unhex(record: logging.LogRecord) -> bytes:
    lines = record.getMessage().splitlines()[1:]
    return bytes.fromhex(" ".join(line.split(None, 1)[1] for line in lines))


def test_trace_logs_every_byte_sent_and_received(served: FakeDevice, caplog: pytest.LogCaptureFixture) -> None:
    assert run("--trace", "-p", served.url, "info")[0] == 0
    records = [r for r in caplog.records if r.name == TRACE_LOGGER]
    sent = b"".join(_unhex(r) for r in records if r.getMessage().startswith("TX"))
    received = b"".join(_unhex(r) for r in records if r.getMessage().startswith("RX"))
    assert sent.startswith(b"\x00") and sent.endswith(b"\x00")  # the delimiter first, then whole frames
    assert b"SC-TEST-0001" in received  # the device info, byte for byte
    for record in records:
        head = record.getMessage().splitlines()[0]
        assert head.endswith(f"{len(_unhex(record))} bytes")  # the count matches the dump


def test_without_trace_nothing_is_traced(served: FakeDevice, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    assert run("-p", served.url, "info")[0] == 0
    assert not [r for r in caplog.records if r.name == TRACE_LOGGER]


@pytest.mark.parametrize(
    ("argv", "level"),
    [((), logging.WARNING), (("-v",), logging.INFO), (("-vv",), logging.DEBUG), (("-q",), logging.ERROR)],
)
def test_verbosity_sets_the_sdk_log_level_while_the_command_runs(argv: tuple[str, ...], level: int) -> None:
    args = _parser().parse_args([*argv, "info"])
    sdk = logging.getLogger("seedcam")
    before = sdk.level
    with _logging(args):
        assert logging.getLogger("seedcam.session").getEffectiveLevel() == level
    assert sdk.level == before


@pytest.mark.parametrize(
    ("n", "text"),
    [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"), (5 << 20, "5.0 MiB"), (3 << 30, "3.0 GiB")],
)
def test_byte_sizes_read_the_same_in_every_command(n: int, text: str) -> None:
    from seedcam._cli_common import byte_size

    assert byte_size(n) == text

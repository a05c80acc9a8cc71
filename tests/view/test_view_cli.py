"""``seedcam view`` as a user runs it: against the emulated board, its URL, its token, Ctrl-C, bad options."""

from __future__ import annotations

import io
import queue
import signal
import subprocess
import sys
import threading
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")

from seedcam.cli import main as seedcam_main  # noqa: E402

pytestmark = pytest.mark.e2e


def _start_view(link: str, *options: str) -> tuple[subprocess.Popen[str], str]:
    """Run ``seedcam -p LINK view OPTIONS`` and return it with the URL it printed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "seedcam.cli", "-p", link, "view", "--http-port", "0", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a Ctrl-C as in a terminal, even under CI
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        line = lines.get(timeout=30)
    except queue.Empty:
        proc.kill()
        pytest.fail("seedcam view printed no URL within 30 s")
    assert " on http://" in line, line
    return proc, line.rsplit(" on ", 1)[1].split()[0]


def _interrupt(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_view_serves_its_page_and_ctrl_c_ends_it(firmware_factory: Any) -> None:
    board = firmware_factory("--fps", "10", "--tasks", "lane")
    proc, url = _start_view(board.link, "--read-only")
    try:
        assert url.startswith("http://127.0.0.1:") and "token" not in url
        page = httpx.get(url, timeout=10)
        assert page.status_code == 200 and '<canvas id="view"' in page.text
        assert httpx.get(url + "static/view.js", timeout=10).status_code == 200
    finally:
        code = _interrupt(proc)
    assert code == 130

    proc, url = _start_view(board.link, "--bind", "0.0.0.0", "--token", "t0ken")
    try:
        port = url.split(":")[2].split("/")[0]
        assert url.endswith("/?token=t0ken")
        assert httpx.get(f"http://127.0.0.1:{port}/", timeout=10).status_code == 403
        assert httpx.get(f"http://127.0.0.1:{port}/?token=t0ken", timeout=10).status_code == 200
    finally:
        _interrupt(proc)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["view", "--preview-fps", "0"], "--preview-fps must be more than 0"),
        (["view", "--http-port", "70000"], "--http-port must be 0..65535"),
        (["view", "--catalog", "file:///nonexistent/catalog", "--trust", "00" * 32], "catalog"),
    ],
)
def test_bad_view_options_are_one_line_and_exit_1(argv: list[str], message: str, capsys: Any) -> None:
    assert seedcam_main(argv, io.StringIO()) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err

"""The README's ten-line example, verbatim, against the emulated board the demo starts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from seedcam_firmware.launcher import READY_MARK

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "ten_lines.py"

pytestmark = pytest.mark.e2e


def test_readme_shows_the_example_verbatim() -> None:
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert blocks and blocks[0] == EXAMPLE.read_text()
    assert len(EXAMPLE.read_text().strip().splitlines()) <= 10


def test_ten_line_example_prints_live_lane_state(firmware_factory) -> None:  # noqa: ANN001
    fw = firmware_factory("--config", str(REPO / "firmware" / "config" / "default.toml"))
    env = {**os.environ, "SEEDCAM_PORT": fw.link}
    proc = subprocess.Popen([sys.executable, str(EXAMPLE)], stdout=subprocess.PIPE, text=True, env=env)
    lines: list[str] = []
    three = threading.Event()

    def collect() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if sum(line.startswith("frame ") for line in lines) >= 3:
                three.set()
                return

    threading.Thread(target=collect, daemon=True).start()
    try:
        assert three.wait(30), lines
    finally:
        proc.kill()
        proc.wait(10)
    assert lines[0].startswith("connected to sensor ")
    frames = [line for line in lines if line.startswith("frame ")]
    assert all(re.match(r"frame \d+: (ok|one_line|lost), offset [+-]\d+\.\d cm, heading", f) for f in frames), frames


def test_readme_command_one_shows_live_lane_results(tmp_path: Path) -> None:
    """``scripts/demo.sh``, as the README's first line runs it (set-up is a no-op when installed)."""
    import signal

    proc = subprocess.Popen(
        ["bash", str(REPO / "scripts" / "demo.sh")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
        start_new_session=True,
    )
    lines: list[str] = []
    seen = threading.Event()

    def collect() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if sum(line.startswith("frame ") for line in lines) >= 3:
                seen.set()

    threading.Thread(target=collect, daemon=True).start()
    try:
        assert seen.wait(240), "".join(lines[-20:])
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
    assert any(READY_MARK in line for line in lines)
    assert any(line.startswith("connected to sensor") for line in lines)

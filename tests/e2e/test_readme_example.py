"""The README's ten-line example, verbatim, against the emulated board the demo starts."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from seedcam_firmware.launcher import READY_MARK

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "ten_lines.py"

pytestmark = pytest.mark.e2e

#: what the example prints: a frame's lane state, then a line for each detection, a plate's with its text
FRAME = re.compile(
    r"frame \d+: (ok|one_line|lost), offset [+-]\d+\.\d cm, heading [+-]\d+\.\d deg, curvature [+-]\d+\.\d\d 1/m"
)
DETECTION = re.compile(r"  [a-z_]+ \(\d+%\)")
SIGN = re.compile(r"  (stop|speed_limit|turn_left|turn_right|crossing|parking) \(\d+%\)")
TEXT = re.compile(r'  plate \(\d+%\) reads "AGV-\d{3}"')
#: seconds of the synthetic drive until the example has shown a sign and a plate's text (a few in fact)
FIRST_MINUTE_S = 60.0


class Output:
    """The lines a process prints, collected by a thread; ``wait_for`` waits until they show lane, signs and text."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._collect, args=(proc,), daemon=True).start()

    def _collect(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    def frames(self) -> list[str]:
        return [line for line in self.lines if line.startswith("frame ")]

    def shows_everything(self) -> bool:
        return (
            len(self.frames()) >= 3
            and any(SIGN.fullmatch(line) for line in self.lines)
            and any(TEXT.fullmatch(line) for line in self.lines)
        )

    def wait_for(self, condition: Callable[[], bool], timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(condition, timeout)


def test_readme_shows_the_example_verbatim() -> None:
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert blocks and blocks[0] == EXAMPLE.read_text()
    assert len(EXAMPLE.read_text().strip().splitlines()) <= 10


def test_ten_line_example_prints_live_lane_state_signs_and_plate_text(firmware_factory) -> None:  # noqa: ANN001
    # the repository's file: nothing persisted into it, no .last-good beside it
    fw = firmware_factory("--config", str(REPO / "firmware" / "config" / "default.toml"), "--no-persist-config")
    env = {**os.environ, "SEEDCAM_PORT": fw.link}
    proc = subprocess.Popen([sys.executable, str(EXAMPLE)], stdout=subprocess.PIPE, text=True, env=env)
    out = Output(proc)
    try:
        assert out.wait_for(out.shows_everything, FIRST_MINUTE_S), out.lines[-20:]
    finally:
        proc.kill()
        proc.wait(10)
    lines = list(out.lines)
    assert lines[0].startswith("connected to sensor ")
    assert all(FRAME.fullmatch(f) for f in out.frames()), out.frames()
    rest = [line for line in lines[1:] if not line.startswith("frame ")]
    assert all(DETECTION.fullmatch(line) or TEXT.fullmatch(line) for line in rest), [
        line for line in rest if not (DETECTION.fullmatch(line) or TEXT.fullmatch(line))
    ]
    assert not lines[1].startswith("  ")  # a frame's lane state comes before what it saw


def test_readme_shows_what_the_demo_prints() -> None:
    """The README's excerpt of the demo's output is in the formats the example prints."""
    readme = (REPO / "README.md").read_text()
    (excerpt,) = re.findall(r"the demo prints.*?```text\n(.*?)```", readme, flags=re.S)
    lines = excerpt.splitlines()
    assert lines[0].startswith("seedcam-firmware ") and f"{READY_MARK}/tmp/" in lines[0]  # the firmware's ready line
    assert "(camera synthetic, tasks lane,detect,ocr)" in lines[0]
    assert lines[1].startswith("connected to sensor ")
    for line in lines[2:]:
        assert line == "..." or FRAME.fullmatch(line) or DETECTION.fullmatch(line) or TEXT.fullmatch(line), line
    assert any(SIGN.fullmatch(line) for line in lines) and any(TEXT.fullmatch(line) for line in lines)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_readme_command_one_shows_lane_signs_and_plate_text_and_ctrl_c_cleans_up(tmp_path: Path) -> None:
    """``scripts/demo.sh``, as the README's first line runs it (set-up is a no-op when installed), then Ctrl-C."""
    import signal

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen(
        ["bash", str(REPO / "scripts" / "demo.sh")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(tmp)},  # where the demo makes its temporary folder
        start_new_session=True,  # its own process group, as a terminal's foreground job
        # Ctrl-C as a terminal delivers it, also when this test runs where SIGINT is ignored (a job started with
        # '&' by a non-interactive shell): an ignored SIGINT is inherited, and bash cannot trap it then
        preexec_fn=_default_sigint,
    )
    out = Output(proc)
    try:
        assert out.wait_for(lambda: bool(out.frames()), 240), "\n".join(out.lines[-20:])  # set-up, then the board
        assert out.wait_for(out.shows_everything, FIRST_MINUTE_S), "\n".join(out.lines[-20:])
        ready = next(line for line in out.lines if READY_MARK in line)
        workdir = Path(ready.split(READY_MARK, 1)[1].split()[0]).parent  # the demo's folder: the link, the log
        assert workdir.parent == tmp and workdir.is_dir()
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole foreground process group
        assert proc.wait(15) == 130
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
    lines = list(out.lines)
    assert any(line.startswith("connected to sensor") for line in lines)
    assert not any("Traceback" in line for line in lines), lines[-20:]  # the example is stopped quietly
    assert not workdir.exists()  # the trap removed the demo's folder
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)  # and nothing it started is left running

"""The sensor from a plain ``pip install``: the wheels built, installed into a fresh venv, run from an empty folder.

No checkout is around the installed firmware, so it must find its models and
config among the factory defaults inside the package (``seedcam_firmware/_factory``,
put there by ``firmware/setup.py``), and the SDK from the same venv must see lane
and detection results stream.

How the fresh venv gets its heavy dependencies (numpy, OpenCV, ai-edge-litert,
protobuf...): installing them would need the network and minutes on the 2-core CI
box, and is pip's business, not ours. The venv is created without pip and without
system site-packages; the two wheels are installed into it with ``--no-deps``, and a
``.pth`` file appends the dev environment's site-packages to its ``sys.path``. Entries
of a ``.pth`` come after the venv's own site-packages, and the dev environment holds
seedcam and seedcam_firmware only as editable finders, which a plain path entry does
not activate — so the venv imports the installed wheels, and the test checks that it
does. The wheels are built offline (``--no-build-isolation --no-index``, the dev
environment's setuptools) from a copy of ``firmware/``, ``host_sdk/`` and ``models/``,
so a stale ``build/`` in the checkout cannot leak into them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import REPO

from seedcam_firmware.launcher import parse_ready_line

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

_BUNDLES = ("lane", "detect", "ocr", "road_scene")
_CLIENT = """
import json, sys
import seedcam
lanes = detections = frames = 0
with seedcam.open(sys.argv[1], timeout=10) as sensor:
    for result in sensor.results(timeout=10):
        frames += 1
        lanes += result.lane is not None
        detections += len(result.detections)
        if (lanes >= 5 and detections >= 1) or frames >= 600:
            break
print(json.dumps({"sdk": seedcam.__file__, "frames": frames, "lanes": lanes, "detections": detections}))
"""


def _run(*args: str | Path, cwd: Path | None = None, timeout: float = 120) -> str:
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd, timeout=timeout)
    assert proc.returncode == 0, f"{args}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _clean_env(venv: Path) -> dict[str, str]:
    """The environment of a board's shell: no PYTHONPATH, no SEEDCAM_FW_* overrides, the venv first on PATH."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("SEEDCAM_")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The firmware and SDK wheels, built offline from a copy of the checkout."""
    src = tmp_path_factory.mktemp("src")
    junk = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", "_factory")
    for folder in ("firmware", "host_sdk"):
        shutil.copytree(REPO / folder, src / folder, ignore=junk)
    for bundle in _BUNDLES:
        shutil.copytree(REPO / "models" / bundle, src / "models" / bundle)
    out = tmp_path_factory.mktemp("wheels")
    pip_wheel = (sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index")
    _run(*pip_wheel, "-w", out, src / "firmware", src / "host_sdk", cwd=src)
    return {w.name.split("-")[0]: w for w in out.glob("*.whl")}


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, wheels: dict[str, Path]) -> Path:
    """A fresh venv with the two wheels installed (see the module docstring for its dependencies)."""
    root = tmp_path_factory.mktemp("venv")
    _run(sys.executable, "-m", "venv", "--without-pip", root)
    python = root / "bin" / "python"
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    dev = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (site / "zz_dev_dependencies.pth").write_text("".join(f"{p}\n" for p in dev))
    _run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index", *wheels.values())
    return root


def test_the_firmware_wheel_carries_the_factory_defaults(wheels: dict[str, Path]) -> None:
    with zipfile.ZipFile(wheels["seedcam_firmware"]) as zf:
        names = set(zf.namelist())
    factory = "seedcam_firmware/_factory"
    assert {f"{factory}/config/default.toml", f"{factory}/config/board.toml"} <= names
    for bundle in _BUNDLES:
        manifest = json.loads((REPO / "models" / bundle / "manifest.json").read_text())
        files = {v["file"] for v in manifest["files"].values()} | {manifest["golden_input"]}
        assert {"int8", "float32"} <= set(manifest["files"])
        for name in files | {"manifest.json"}:
            assert f"{factory}/models/{bundle}/{name}" in names, (bundle, name)
    assert not any(n.startswith("models/") or "/build/" in n for n in names)


@pytest.fixture
def installed_board(venv: Path, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """``seedcam-firmware run --link pty`` of the venv, started in an empty folder: (ready line, pty path)."""
    empty = tmp_path / "anywhere"
    empty.mkdir()
    proc = subprocess.Popen(
        [str(venv / "bin" / "seedcam-firmware"), "run", "--link", "pty"],
        cwd=empty,
        env=_clean_env(venv),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    ready = threading.Event()

    def collect() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if parse_ready_line(line):
                ready.set()

    threading.Thread(target=collect, daemon=True).start()
    try:
        if not ready.wait(45):
            pytest.fail("no ready line from the installed firmware:\n" + "".join(lines[-30:]))
        line = next(x for x in lines if parse_ready_line(x))
        yield line, str(parse_ready_line(line))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
    assert not list(empty.iterdir()), "the firmware wrote into the folder it was started from"


def test_installed_firmware_streams_lane_and_detections(venv: Path, installed_board: tuple[str, str]) -> None:
    python = venv / "bin" / "python"
    where = _run(python, "-c", "import seedcam_firmware.factory as f; print(f.models_dir()); print(f.checkout_root())")
    models, checkout = where.split()
    assert checkout == "None" and Path(models).is_relative_to(venv), where
    line, link = installed_board
    assert "tasks lane,detect,ocr" in line and "not loaded" not in line, line
    proc = subprocess.run(
        [str(python), "-c", _CLIENT, link], capture_output=True, text=True, env=_clean_env(venv), timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert Path(seen["sdk"]).is_relative_to(venv), seen  # the installed SDK, not the checkout's
    assert seen["lanes"] >= 5 and seen["detections"] >= 1, seen


def test_the_release_wheel_unpacks_into_a_firmware_slot_that_finds_its_own_models(
    venv: Path, wheels: dict[str, Path], tmp_path: Path
) -> None:
    """``seedcam flash`` of a release wheel: the slot the update unpacks it into runs on the models it carries."""
    from seedcam_firmware.wheel import unpack_wheel

    slot = tmp_path / "updates" / "slots" / "firmware" / "a"
    slot.mkdir(parents=True)
    unpack_wheel(wheels["seedcam_firmware"], slot, max_bytes=64 * 2**20)
    env = {**_clean_env(venv), "PYTHONPATH": str(slot)}  # as the supervisor boots a slot
    code = "import seedcam_firmware.config as c; print(c.__file__, c.DEFAULT_MODELS_DIR)"
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    module, models = proc.stdout.split()
    assert Path(module).is_relative_to(slot) and Path(models) == slot / "seedcam_firmware" / "_factory" / "models"
    assert (Path(models) / "lane" / "manifest.json").is_file()

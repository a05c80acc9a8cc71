"""The pipeline benchmark's run: the emulated board (the default tasks on a scripted scene) streaming to the SDK."""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import seedcam
from seedcam_firmware.launcher import BoardStartError, EmulatedBoard
from seedcam_tools.bench_errors import BenchmarkError
from seedcam_tools.bench_link import SIGNS_AND_PLATE

__all__ = ["RunData", "run_firmware"]

log = logging.getLogger(__name__)

_START_TIMEOUT_S = 60.0  # firmware start (imports TFLite, loads the model) on a loaded machine
_STOP_TIMEOUT_S = 5.0
_CONNECT_TIMEOUT_S = 10.0
_WARMUP_RESULTS = 5  # dropped from the statistics: start-up transients
_LOG_CHARS = 800  # of the firmware's log, in an error message


@dataclass(frozen=True)
class RunData:
    """What the run collected."""

    results: list[Any]  # seedcam.Result
    health: Any  # seedcam.Health | None
    elapsed_s: float
    firmware_returncode: int | None
    firmware_ready_line: str


def _note(progress: bool, message: str, *args: object) -> None:
    log.log(logging.INFO if progress else logging.DEBUG, message, *args)


def _stream(board: EmulatedBoard, seconds: float) -> tuple[list[Any], Any, float]:
    """Connect with the public SDK and collect results for ``seconds`` (plus warm-up)."""
    results: list[Any] = []
    lock = threading.Lock()

    def collect(result: Any) -> None:
        with lock:
            results.append(result)

    with seedcam.open(board.link, timeout=_CONNECT_TIMEOUT_S, reconnect=False) as sensor:
        unregister = sensor.on_result(collect)
        # warm-up: wait (bounded) for the first results before the clock starts
        deadline = time.monotonic() + _CONNECT_TIMEOUT_S
        while time.monotonic() < deadline:
            with lock:
                if len(results) >= _WARMUP_RESULTS:
                    break
            time.sleep(0.05)
        with lock:
            if len(results) < _WARMUP_RESULTS:
                raise BenchmarkError(
                    f"only {len(results)} results within {_CONNECT_TIMEOUT_S:.0f} s of connecting: "
                    f"{board.log_tail(_LOG_CHARS, one_line=True)}"
                )
            del results[:]
        start = time.monotonic()
        time.sleep(seconds)
        elapsed = time.monotonic() - start
        unregister()
        health = sensor.health
        with lock:
            collected = list(results)
    return collected, health, elapsed


def run_firmware(
    workdir: Path,
    seconds: float,
    fps: float,
    models_dir: Path,
    num_threads: int,
    progress: bool,
    tasks: tuple[str, ...],
) -> RunData:
    """Start the board in ``workdir``, stream for ``seconds``, stop it; every result carries each task's timing.

    The board runs ``tasks`` on the scene of :data:`seedcam_tools.bench_link.SIGNS_AND_PLATE`
    (three signs and a plate), with ``pipeline.timings = "full"``.

    Raises:
        BenchmarkError: the firmware did not start, or delivered no usable results.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEEDCAM_FW_")}  # only what is asked for
    env["PYTHONUNBUFFERED"] = "1"
    scene = workdir / "scene.toml"
    scene.write_text(SIGNS_AND_PLATE)
    board = EmulatedBoard(
        "--camera", "synthetic", "--fps", f"{fps:g}", "--tasks", ",".join(tasks),
        workdir=workdir,
        overrides={
            "models.dir": models_dir.resolve(), "runtime.num_threads": num_threads, "camera.scene": scene,
            "pipeline.timings": "full",  # the per-stage figures travel only in full mode
        },
        env=env,
    )  # fmt: skip
    try:
        _note(progress, "starting seedcam-firmware (pty, scripted scene, %g fps, %s)", fps, ",".join(tasks))
        board.start().wait_ready(_START_TIMEOUT_S)
        _note(progress, "firmware ready: %s; streaming for %.1f s", board.ready_line, seconds)
        results, health, elapsed = _stream(board, seconds)
    except BoardStartError as exc:
        raise BenchmarkError(str(exc)) from exc
    except BenchmarkError:
        raise
    except Exception as exc:
        raise BenchmarkError(
            f"streaming from the firmware failed: {exc}; firmware log: {board.log_tail(_LOG_CHARS, one_line=True)}"
        ) from exc
    finally:
        returncode = board.terminate(_STOP_TIMEOUT_S)
    if not results:
        raise BenchmarkError(f"no results in {seconds:.1f} s of streaming: {board.log_tail(_LOG_CHARS, one_line=True)}")
    for task in tasks:
        missing = sum(1 for r in results if f"task:{task}" not in r.timings_us)
        if missing:
            raise BenchmarkError(
                f"{missing} of {len(results)} results carry no task:{task} timing ({task} task not running?)"
            )
    return RunData(results, health, elapsed, returncode, board.ready_line)

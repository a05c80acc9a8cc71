"""Capture → train → bundle → push → classify, all against the emulated board (the real firmware on ptys).

VisionSeed's client tool trained a classifier from images the sensor itself captured. Here:
``seedcam capture --label`` saves frames of each class from a board whose folder camera shows
that class, ``seedcam-tools train-classifier --data`` trains a tiny classifier on them, ``bundle
model`` signs it, ``seedcam models push`` puts it on a third board, which then names the class of
each new frame (frames that were not captured) as its ``classify`` task.
"""

from __future__ import annotations

import io
from pathlib import Path

import cv2
import numpy as np
import pytest

import seedcam
from seedcam.cli import main as seedcam_main
from seedcam_firmware.launcher import EmulatedBoard
from seedcam_tools.bundles import generate_keypair
from seedcam_tools.cli import main as tools_main

pytestmark = pytest.mark.e2e

#: two classes a tiny model separates at once: a red disc and a blue bar, anywhere on grey
CLASSES = ("blue_bar", "red_disc")
FRAME = (240, 320)


def scene(label: str, rng: np.random.Generator) -> np.ndarray:
    """One frame of a class: noise on grey, the shape at a random place and size (BGR)."""
    image = rng.normal(110, 18, (*FRAME, 3)).clip(0, 255).astype(np.uint8)
    y, x = int(rng.integers(60, FRAME[0] - 60)), int(rng.integers(60, FRAME[1] - 60))
    size = int(rng.integers(30, 55))
    if label == "red_disc":
        cv2.circle(image, (x, y), size, (40, 40, 220), -1)
    else:
        cv2.rectangle(image, (x - size, y - size // 3), (x + size, y + size // 3), (220, 60, 40), -1)
    return image


def frames(folder: Path, labels: list[str], seed: int) -> Path:
    """A folder camera's frames, played in name order: ``labels[i]`` is frame ``i`` (mod the count)."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    for i, label in enumerate(labels):
        cv2.imwrite(str(folder / f"{i:03d}-{label}.png"), scene(label, rng))
    return folder


def board(workdir: Path, camera: Path, *args: str) -> EmulatedBoard:
    """An emulated board on its own pty in ``workdir`` whose camera plays ``camera``'s frames."""
    return EmulatedBoard(
        "--camera", "folder", "--camera-path", str(camera), "--fps", "20", *args, workdir=workdir
    )  # fmt: skip


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return seedcam_main(list(argv), out), out.getvalue()


@pytest.mark.timeout(240)
def test_capture_train_bundle_push_then_the_board_names_new_frames(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for k, label in enumerate(CLASSES):  # one board per class: its camera shows only that class
        camera = frames(tmp_path / f"camera-{label}", [label] * 10, seed=k)
        with board(tmp_path / f"board-{label}", camera, "--tasks", "").start().wait_ready(60) as capture_board:
            code, text = cli(
                "--port", capture_board.link, "capture", "--label", label, "-n", "10", "-o", str(data), "-q"
            )
            assert (code, text) == (0, f"wrote 10 frames to {data / label} (classes layout)\n")

    bundle = tmp_path / "bundle"
    assert tools_main(
        ["train-classifier", "--data", str(data), "--out", str(bundle), "--epochs", "60", "--input-size", "32x32",
         "--name", "shapes", "-q"]
    ) == 0  # fmt: skip
    key = generate_keypair()
    (tmp_path / "release.key").write_text(key.private.hex() + "\n")
    scb = tmp_path / "shapes.scb"
    assert tools_main(["bundle", "model", str(bundle), "-o", str(scb), "--key", str(tmp_path / "release.key")]) == 0

    new = [CLASSES[i % 2] for i in range(8)]  # frames no capture saw, the classes taking turns
    camera = frames(tmp_path / "camera-new", new, seed=100)
    with board(
        tmp_path / "board-classify", camera, "--tasks", "classify",
        "--set", f"updates.dir={tmp_path / 'storage'}", "--set", f"updates.public_keys={key.public.hex()}",
    ).start().wait_ready(60) as target:  # fmt: skip
        code, text = cli("--port", target.link, "models", "push", str(scb), "-q")
        assert code == 0, text
        assert "shapes-v1" in text
        with seedcam.open(target.link, timeout=30) as sensor:
            assert sensor.class_labels("classify") == CLASSES  # the pushed model's classes, by class id
            seen: list[tuple[int, str, float]] = []
            for result in sensor.results(timeout=30):
                if not result.classifications or "shapes-v1" not in " ".join(result.model_ids):
                    continue  # a frame of the model that ran before the push
                top = result.classifications[0]
                seen.append((result.frame_id, top.label, top.score))
                if len(seen) == 16:
                    break
    # new frames, each named by a model trained a minute ago on 20 captures (it scores them about 0.99)
    assert [label for _, label, _ in seen] == [new[frame_id % len(new)] for frame_id, _, _ in seen], seen
    assert min(score for *_, score in seen) > 0.8, seen

"""End to end: the published VisionSeed client (PyPI ``visionseed`` 1.2.1) against the firmware in VisionSeed mode.

The client runs in a subprocess (tests/e2e/visionseed_client.py) with
``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python``, which its generated code
needs on protobuf >= 4, so the rest of the test process keeps the fast backend.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import MODELS, wait_until
from scripted_scenes import STOP_AND_PLATE

from seedcam_firmware import __version__ as FIRMWARE_VERSION

pytestmark = pytest.mark.e2e

CLIENT = Path(__file__).with_name("visionseed_client.py")
LANE = MODELS / "lane"
DETECT, OCR = MODELS / "detect" / "manifest.json", MODELS / "ocr" / "manifest.json"
CLASSIFY = MODELS / "road_scene" / "manifest.json"
MODEL_DETECTION, MODEL_PLATE_OCR, MODEL_LANE, MODEL_CLASSIFICATION = 20, 21, 30, 40  # docs/visionseed.md

SCENE = STOP_AND_PLATE


def visionseed_client(port: str, plan: list[list[Any]], workdir: Path, timeout: float = 90.0) -> list[Any]:
    """Run the published client through ``plan`` (see visionseed_client.py); returns one output per step."""
    plan_file, out_file = workdir / "plan.json", workdir / "out.json"
    plan_file.write_text(json.dumps(plan))
    out_file.unlink(missing_ok=True)
    env = dict(os.environ, PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="python")
    done = subprocess.run(
        [sys.executable, str(CLIENT), port, str(plan_file), str(out_file)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out_file.read_text())


def link_identity(path: str) -> tuple[int, int] | None:
    """Which symlink is at ``path`` (inode and creation time: an inode number alone may be reused)."""
    try:
        stat = os.lstat(path)
    except FileNotFoundError:
        return None
    return stat.st_ino, stat.st_mtime_ns


def lane_descriptor() -> str:
    manifest = json.loads((LANE / "manifest.json").read_text())
    descriptor = {key: manifest[key] for key in ("task", "input", "outputs", "decoder", "camera")}
    descriptor.update(name="my lane model", version="2.0.0")
    return json.dumps(descriptor)


PARSE_WITH_CLIENT = """
import json, sys
from visionseed import YtDataLink
tree = YtDataLink.DataV2(bytes.fromhex(sys.argv[1]))
out = {}
for path, node in tree.data.items():
    out[path] = node if isinstance(node, int) else {k: v for k, v in vars(node).items() if k != "type"}
print(json.dumps(out))
"""


def test_published_client_parses_every_node_kind_we_send() -> None:
    from seedcam.types import Box, Classification, Detection, LaneState, LaneStatus, Result, TextLine
    from seedcam_firmware.visionseed.results import result_message

    plate = Detection(6, "plate", 0.8, Box(0.6, 0.55, 0.85, 0.7))
    result = Result(
        frame_id=1,
        capture_timestamp_us=2,
        timings_us={"task:lane": 1, "task:detect": 1, "task:ocr": 1, "task:classify": 1},
        lane=LaneState(LaneStatus.OK, 0.05, -0.06, 0.2, 0.9, 0.8, 0.7, 0.45),
        detections=(Detection(0, "stop", 0.9, Box(0.1, 0.2, 0.3, 0.5)), plate),
        text_lines=(TextLine("AGV-042", 0.75, (), plate.box),),
        classifications=(Classification(3, "straight", 0.6),),
        frame_width=320,
        frame_height=240,
    )
    data = result_message(result).result.dataV2
    env = dict(os.environ, PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="python")
    done = subprocess.run(
        [sys.executable, "-c", PARSE_WITH_CLIENT, data.hex()], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    tree = json.loads(done.stdout)
    assert tree["20"] == 2 and tree["40"] == 1
    assert tree["20,0"] == {"conf": pytest.approx(0.9, abs=1e-4), "cls": 0, "x": 32, "y": 48, "w": 64, "h": 72}
    assert tree["20,1"]["cls"] == 6 and (tree["20,1"]["x"], tree["20,1"]["w"]) == (192, 80)
    assert tree["20,1,21"] == {"conf": pytest.approx(0.75, abs=1e-4), "str": "AGV-042"}
    assert tree["30"]["array"] == pytest.approx([0.05, -0.06, 0.2, 0.8], abs=1e-6)
    assert tree["40,0"] == {"conf": pytest.approx(0.6, abs=1e-4), "cls": 3}


def test_published_client_reads_lane_uses_rpcs_and_installs_a_model(firmware_factory, tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    config = tmp_path / "fw.toml"
    config.write_text(
        f'[camera]\nsource = "synthetic"\nfps = 15\n\n[models]\ndir = "{models}"\nlane = "{LANE / "manifest.json"}"\n'
    )
    upload = tmp_path / "upload"
    upload.mkdir()
    (upload / "mylane.json").write_text(lane_descriptor())
    (upload / "mylane.tflite").write_bytes((LANE / "lane_int8.tflite").read_bytes())
    fw = firmware_factory("--config", str(config), "--protocol", "visionseed", "--persist-config")
    first_link = link_identity(fw.link)  # a reboot makes a new pty and a new symlink to it

    out = visionseed_client(
        fw.link,
        [
            ["info"],
            ["results", 3, [[MODEL_LANE], [MODEL_DETECTION]]],
            ["list", "/models"],
            ["get_config", "detect"],
            ["set_config", "detect", "score_threshold = 0.6\n"],
            ["get_config", "detect.score_threshold"],
            ["upload", str(upload / "mylane.tflite"), "/models/mylane.tflite"],
            ["upload", str(upload / "mylane.json"), "/models/mylane.json"],
            ["list", "/models"],
            ["list", "/models/mylane"],
            ["set_config", "models", 'lane = "mylane/manifest.json"\n'],
            ["call", "setFlasher"],
            ["call", "reboot"],
        ],
        tmp_path,
    )
    info, results, empty, detect_text, _, threshold, _, _, listing, bundle, _, unsupported, reboot = out
    assert info[:2] == [FIRMWARE_VERSION, "seedcam"] and "tasks=lane" in info and "models=lane-v3-int8" in info
    for result in results:
        offset, heading, curvature, confidence = result[str(MODEL_LANE)]["array"]
        assert -0.3 < offset < 0.3 and -0.6 < heading < 0.6 and 0.0 <= confidence <= 1.0
        assert result[str(MODEL_DETECTION)] is None  # no detector running: no detection node at all
    assert [r["frameId"] for r in results] == sorted({r["frameId"] for r in results})
    assert empty == []
    assert "[detect]" in detect_text and "score_threshold = 0.5" in detect_text
    assert threshold.strip() == "[detect]\nscore_threshold = 0.6"
    assert listing == [["mylane", True, 0]]
    assert sorted(name for name, _, _ in bundle) == ["manifest.json", "mylane.tflite", "visionseed.json"]
    assert unsupported["error"].endswith("(6)")  # the client's message for ERROR_NOT_EXIST: a code, not silence
    assert reboot["code"] == 0
    assert 'lane = "mylane/manifest.json"' in config.read_text()  # persisted for the next boot

    wait_until(lambda: link_identity(fw.link) not in (None, first_link), 60, "the firmware to reboot")
    after = visionseed_client(fw.link, [["info"], ["results", 2, [[MODEL_LANE]]]], tmp_path)
    info_after, results_after = after
    assert "models=mylane-int8" in info_after  # the uploaded model is the one running now
    assert next(t for t in info_after if t.startswith("boot=")) != next(t for t in info if t.startswith("boot="))
    assert all(len(r[str(MODEL_LANE)]["array"]) == 4 for r in results_after)


@pytest.mark.skipif(
    not (DETECT.exists() and OCR.exists()), reason="needs the trained models/detect and models/ocr bundles"
)
def test_published_client_reads_detections_rects_and_plate_text(firmware_factory, tmp_path: Path) -> None:
    labels = json.loads(DETECT.read_text())["decoder"]["labels"]
    scene = tmp_path / "scene.toml"
    scene.write_text(SCENE)
    config = tmp_path / "fw.toml"
    config.write_text(
        f'[camera]\nsource = "synthetic"\nscene = "{scene}"\nfps = 10\n\n[tasks]\nenabled = ["lane", "detect", "ocr"]\n'
    )
    fw = firmware_factory("--config", str(config), "--protocol", "visionseed")
    paths = [[MODEL_DETECTION], [MODEL_DETECTION, "i"], [MODEL_DETECTION, "i", MODEL_PLATE_OCR], [MODEL_LANE]]
    (results,) = visionseed_client(fw.link, [["results", 4, paths]], tmp_path)
    for result in results:
        assert result[str(MODEL_DETECTION)] == 2, result
        rects = [result[f"{MODEL_DETECTION},{i}"] for i in range(2)]
        by_label = {labels[r["cls"]]: (i, r) for i, r in enumerate(rects)}
        assert set(by_label) == {"stop", "plate"}, rects
        (stop_i, stop), (plate_i, plate) = by_label["stop"], by_label["plate"]
        # pixels of the 320x240 frame: the stop sign left of the lane, the plate right of it and nearer
        assert 0 <= stop["x"] and stop["x"] + stop["w"] < 160 < plate["x"] <= 320 and plate["w"] > stop["w"]
        assert all(r["conf"] >= 0.5 and r["h"] > 0 for r in rects)
        assert result[f"{MODEL_DETECTION},{plate_i},{MODEL_PLATE_OCR}"]["str"] == "AGV-042"
        assert result[f"{MODEL_DETECTION},{stop_i},{MODEL_PLATE_OCR}"] is None
        assert len(result[str(MODEL_LANE)]["array"]) == 4


@pytest.mark.skipif(not CLASSIFY.exists(), reason="needs the trained models/road_scene bundle")
def test_published_client_reads_classifications_best_first(firmware_factory, tmp_path: Path) -> None:
    labels = json.loads(CLASSIFY.read_text())["decoder"]["labels"]
    fw = firmware_factory("--fps", "10", "--tasks", "lane,classify", "--protocol", "visionseed")
    paths = [[MODEL_CLASSIFICATION], [MODEL_CLASSIFICATION, "i"], [MODEL_LANE]]
    (results,) = visionseed_client(fw.link, [["results", 3, paths]], tmp_path)
    for result in results:
        count = result[str(MODEL_CLASSIFICATION)]
        assert count == min(3, len(labels)), result  # classify.top_k
        classes = [result[f"{MODEL_CLASSIFICATION},{i}"] for i in range(count)]
        assert all(0 <= c["cls"] < len(labels) for c in classes) and len({c["cls"] for c in classes}) == count
        confs = [c["conf"] for c in classes]
        # INT8 softmax scores are multiples of 1/256, so the top-k may sum to a little over 1
        assert confs == sorted(confs, reverse=True) and 0.0 < sum(confs) <= 1.0 + len(confs) / 256 + 1e-6
        assert len(result[str(MODEL_LANE)]["array"]) == 4

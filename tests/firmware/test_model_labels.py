"""What a ModelInfo tells the host of a model's classes (announced_labels): the decoder's labels, within a bound."""

from __future__ import annotations

import json
from dataclasses import replace

from helpers import MODELS

from seedcam_firmware.inference.manifest import load_manifest
from seedcam_firmware.tasks.base import MAX_LABEL_BYTES, announced_labels, model_info


def test_the_shipped_models_announce_their_labels_by_class_id() -> None:
    detect = load_manifest(MODELS / "detect", verify=False)
    expected = tuple(json.loads((MODELS / "detect" / "manifest.json").read_text())["decoder"]["labels"])
    assert len(expected) > 2 and model_info(detect).labels == expected
    scene = load_manifest(MODELS / "road_scene", verify=False)
    assert model_info(scene).labels == tuple(scene.decoder["labels"])
    assert model_info(load_manifest(MODELS / "lane", verify=False)).labels == ()  # no classes
    assert model_info(load_manifest(MODELS / "ocr", verify=False)).labels == ()  # an alphabet is no class list


def test_labels_too_long_for_the_link_are_not_announced() -> None:
    detect = load_manifest(MODELS / "detect", verify=False)
    many = [f"class-{i:05d}-" + "x" * 20 for i in range(MAX_LABEL_BYTES // 20)]
    assert announced_labels(replace(detect, decoder={**detect.decoder, "labels": many})) == ()
    assert announced_labels(replace(detect, decoder={**detect.decoder, "labels": "stop"})) == ()  # not a list

"""The task catalog: config, registry and defaults read it; a task added through it alone reaches the host."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import logging
import os
import time
import typing
from collections.abc import Callable
from pathlib import Path

import pytest

import seedcam
from seedcam.types import Result
from seedcam_firmware import task_catalog as catalog
from seedcam_firmware.config import KEYS, SECTIONS, FirmwareConfig
from seedcam_firmware.task_catalog import (
    BUILTIN_TASKS,
    ENTRY_POINT_GROUP,
    KNOWN_TASKS,
    RESERVED_NAMES,
    TASKS,
    TaskSpec,
    find_plugin_tasks,
    resolve,
)
from seedcam_firmware.task_sections import DetectConfig
from seedcam_firmware.tasks.base import FINDINGS, TaskOutput
from seedcam_firmware.tasks.lane import load_lane_task
from seedcam_firmware.tasks.registry import task_factory

TOY_PLUGIN = Path(__file__).resolve().parent / "toy_plugin"
#: All it takes to add the toy task (tests/firmware/toy_plugin/toy_task.py) to the catalog.
TOY_CATALOG_LINE = "toy = toy_task:TASK"
WAIT_S = 15.0


# ---- the catalog is what config, registry and defaults read -----------------------------------


def test_the_catalog_lists_the_built_in_tasks_in_load_order() -> None:
    assert KNOWN_TASKS == tuple(TASKS) == ("lane", "detect", "ocr", "classify")
    assert tuple(TASKS.values()) == BUILTIN_TASKS  # no plugin installed here


def test_the_config_has_the_keys_sections_and_defaults_the_catalog_names() -> None:
    cfg = FirmwareConfig()
    assert cfg.tasks.enabled == tuple(name for name, spec in TASKS.items() if spec.enabled)
    for name, spec in TASKS.items():
        assert KEYS[f"models.{name}"].default() == spec.bundle
        assert KEYS[f"models.{name}_precision"].default() == spec.precision
        assert cfg.models.manifest_path(name) == Path(cfg.models.dir) / spec.bundle
        if spec.section is not None:
            assert SECTIONS[name] is spec.section
            assert cfg.section(spec.section) == getattr(cfg, name) == spec.section()
    assert list(SECTIONS) == [
        "device", "camera", "link", "runtime", "tasks", "models", "detect", "ocr", "classify", "pipeline", "updates",
        "blackbox",
    ]  # fmt: skip


def test_a_task_cannot_take_a_name_the_config_uses_itself() -> None:
    own = {f.name for f in dataclasses.fields(FirmwareConfig)} - set(TASKS)
    assert own | {"dir", "section"} <= RESERVED_NAMES
    for name in ("models", "dir", "section", "two_words", "Lane", ""):
        with pytest.raises(ValueError, match="task name"):
            TaskSpec(name, "pkg.mod:load", "x/manifest.json", "x")
    with pytest.raises(ValueError, match="loader"):
        TaskSpec("good", "pkg.mod.load", "x/manifest.json", "x")
    with pytest.raises(ValueError, match="section"):
        TaskSpec("good", "pkg.mod:load", "x/manifest.json", "x", DetectConfig)  # the [detect] section


def test_one_resolver_turns_a_loader_string_into_the_function() -> None:
    assert resolve("seedcam_firmware.tasks.lane:load_lane_task") is load_lane_task
    assert task_factory("lane") is load_lane_task
    with pytest.raises(ValueError):
        resolve("seedcam_firmware.tasks.lane")
    with pytest.raises(ImportError, match="nope"):
        resolve("seedcam_firmware.tasks.lane:nope")
    with pytest.raises(ImportError):
        resolve("seedcam_firmware.no_such_module:load")


def test_every_finding_of_a_task_output_is_a_result_field_of_the_same_type() -> None:
    outputs = typing.get_type_hints(TaskOutput)
    results = typing.get_type_hints(Result)
    assert FINDINGS == ("lane", "detections", "text_lines", "classifications")
    for name in FINDINGS:
        assert results[name] == outputs[name], name


# ---- plugins: the entry point group -----------------------------------------------------------


def _entry_points(*lines: str) -> list[importlib.metadata.EntryPoint]:
    points = []
    for line in lines:
        name, _, value = line.partition(" = ")
        points.append(importlib.metadata.EntryPoint(name, value, ENTRY_POINT_GROUP))
    return points


def test_plugins_join_through_entry_points_and_broken_ones_are_left_out(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.syspath_prepend(str(TOY_PLUGIN))
    points = _entry_points(
        TOY_CATALOG_LINE,
        "lane = toy_task:TASK",  # named unlike its TaskSpec
        "broken = no_such_plugin:TASK",  # does not import
        "thing = toy_task:ToyTask",  # not a TaskSpec
    )
    monkeypatch.setattr(catalog.importlib.metadata, "entry_points", lambda group: points)
    with caplog.at_level(logging.ERROR, logger=catalog.__name__):
        found = find_plugin_tasks(TASKS)
    toy = resolve("toy_task:TASK")  # the line the entry point names
    assert isinstance(toy, TaskSpec)
    assert found == {"toy": toy}
    assert "no_such_plugin" in caplog.text and "not a TaskSpec" in caplog.text and "named 'toy'" in caplog.text
    monkeypatch.setattr(catalog.importlib.metadata, "entry_points", lambda group: _entry_points(TOY_CATALOG_LINE))
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger=catalog.__name__):
        assert find_plugin_tasks({**TASKS, "toy": toy}) == {}
    assert "already has a task 'toy'" in caplog.text


# ---- end to end: the toy task through the catalog alone, on the emulated board -----------------


def install_toy_plugin(site: Path) -> None:
    """What installing a distribution with the toy's entry point leaves: a dist-info folder."""
    dist_info = site / "seedcam_toy_task-0.1.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: seedcam-toy-task\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{TOY_CATALOG_LINE}\n")


def next_result(sensor: seedcam.Sensor, condition: Callable[[Result], bool], what: str) -> Result:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        result = sensor.recv(timeout=max(0.0, deadline - time.monotonic()))
        if result is not None and condition(result):
            return result
    raise AssertionError(f"no result with {what} within {WAIT_S} s")


@pytest.mark.e2e
def test_a_toy_task_added_through_the_catalog_reaches_the_host(
    firmware_factory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    site = tmp_path / "site"
    install_toy_plugin(site)
    path = [str(site), str(TOY_PLUGIN), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(path))  # the board's process finds the plugin
    fw = firmware_factory("--tasks", "toy", "--set", "toy.label=hello", "--fps", "15")
    assert "tasks toy)" in fw.ready_line
    with seedcam.open(fw.link, timeout=WAIT_S) as sensor:
        result = next_result(sensor, lambda r: bool(r.classifications), "the toy's class")
        assert [c.label for c in result.classifications] == ["hello"]
        assert 0.0 <= result.classifications[0].score <= 1.0
        assert result.model_ids == ("toy-1.0",)
        assert sensor.info().tasks_enabled == ("toy",)
        assert {m.id: m.active for m in sensor.models()}["toy-1.0"]
        change = sensor.config_set("toy.label", "world")  # its own config section, live over the link
        assert not change.restart_required
        next_result(sensor, lambda r: [c.label for c in r.classifications] == ["world"], "the new label")

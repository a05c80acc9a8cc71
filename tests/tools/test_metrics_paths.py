"""A bundle's metrics.json names its bundle without the paths of the machine that wrote it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from seedcam_tools.export import bundle_reference

MODELS = Path(__file__).resolve().parents[2] / "models"
ABSOLUTE_PATH = re.compile(r"(^|[\s=:'\"])/[A-Za-z]")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def test_a_bundle_within_the_working_folder_is_named_by_its_relative_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    (work / "runs" / "cand").mkdir(parents=True)
    monkeypatch.chdir(work)
    assert bundle_reference(work / "runs" / "cand") == "runs/cand"
    assert bundle_reference(Path("runs/cand")) == "runs/cand"
    assert bundle_reference(tmp_path / "elsewhere") == "<bundle folder>"


@pytest.mark.parametrize("name", ["metrics.json", "manifest.json"])
def test_no_shipped_bundle_names_an_absolute_path(name: str) -> None:
    files = sorted(MODELS.glob(f"*/{name}"))
    assert len(files) >= 4
    for path in files:
        found = [text for text in _strings(json.loads(path.read_text())) if ABSOLUTE_PATH.search(text)]
        assert not found, f"{path.parent.name}/{name}: {found}"

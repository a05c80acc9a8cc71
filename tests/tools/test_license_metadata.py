"""The licence and package metadata of the three distributions."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROJECTS = ("firmware", "host_sdk", "tools")


def test_the_repository_is_apache_2_0() -> None:
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert "Copyright 2026 the seedcam authors" in text


@pytest.mark.parametrize("project", PROJECTS)
def test_each_distribution_ships_the_license_and_full_metadata(project: str) -> None:
    folder = REPO / project
    # license-files may not reach outside the project folder, so each one carries a copy
    assert (folder / "LICENSE").read_bytes() == (REPO / "LICENSE").read_bytes()
    meta = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert meta["license"] == "Apache-2.0" and meta["license-files"] == ["LICENSE"]
    assert (folder / meta["readme"]).is_file()
    assert meta["authors"] and meta["keywords"] and meta["requires-python"].startswith(">=3.")
    assert "Programming Language :: Python :: 3" in meta["classifiers"]
    # a licence classifier next to a licence expression is an error since PEP 639
    assert not any(c.startswith("License ::") for c in meta["classifiers"])

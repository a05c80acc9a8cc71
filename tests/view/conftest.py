"""Fixtures of the viewer tests: ONE browser for the session; tests/sdk and tests/e2e on the path.

tests/sdk holds fake_device.py (for tests/preview_device.py), tests/e2e the scripted scenes.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sdk"))  # fake_device.py, shared with the SDK tests
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))  # scripted_scenes.py


import os  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """ONE headless Debian Chromium for the whole session, driven by Playwright (never a downloaded browser)."""
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is in requirements-dev.txt")
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} missing: run scripts/browser-deps.sh (apt-get install chromium)")
    manager = playwright_api.sync_playwright().start()
    chromium = manager.chromium.launch(
        executable_path=str(CHROMIUM),
        headless=True,
        args=["--no-sandbox"] if os.geteuid() == 0 else [],  # Chromium refuses to run as root without it
    )
    yield chromium
    chromium.close()
    manager.stop()

"""The viewer in a real browser (Debian's Chromium under Playwright) against the emulated board.

One board (the real firmware on a pty, a scripted scene with a stop sign), one sensor
connection and one viewer serve every test of this module; one browser serves the session.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_until
from scripted_scenes import STOP_AND_PLATE

import seedcam
from seedcam_firmware.launcher import EmulatedBoard

pytest.importorskip("starlette")
from seedcam.view import ViewOptions, ViewServer  # noqa: E402

pytestmark = pytest.mark.e2e

#: the page's class colours (view.js PALETTE)
PALETTE = ["#ff00ff", "#00ff40", "#00c8ff", "#ffd000", "#ff5000", "#8040ff", "#00ffd0", "#ff0080"]
#: set to a path to keep the screenshot (docs/img/view.png is made this way)
SCREENSHOT_ENV = "SEEDCAM_VIEW_SCREENSHOT"


class LiveView:
    def __init__(self, sensor: seedcam.Sensor, server: ViewServer, config: Path) -> None:
        self.sensor, self.server, self.config = sensor, server, config


@pytest.fixture(scope="module")
def live_view(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveView]:
    work = tmp_path_factory.mktemp("view-board")
    scene = work / "scene.toml"
    scene.write_text(STOP_AND_PLATE)
    config = work / "fw.toml"
    config.write_text(
        f'[camera]\nsource = "synthetic"\nscene = "{scene}"\nfps = 10\n\n[tasks]\nenabled = ["lane", "detect", "ocr"]\n'
    )
    board = EmulatedBoard("--config", str(config), workdir=work)
    try:
        board.start().wait_ready(60)
        with seedcam.open(board.link, timeout=15) as sensor:
            server = ViewServer(sensor, "127.0.0.1", 0, ViewOptions(preview=(10.0, 80, 320))).start()
            try:
                yield LiveView(sensor, server, config)
            finally:
                server.stop()
    finally:
        board.kill()


@pytest.fixture
def page(browser: Any, live_view: LiveView) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    tab = context.new_page()
    tab.goto(live_view.server.url)
    yield tab
    context.close()


def _rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


_SHOWN_STOP = """() => {
  const v = window.seedcamView, s = v.shown;
  return !!s && v.framesShown >= 12 && (s.header.result.detections || []).some((d) => d.label === "stop");
}"""

#: where in the box (fractions of its width and height) the sign's face is sampled
_INNER = (0.3, 0.4, 0.5, 0.6, 0.7)

_PIXELS = """([points]) => {
  const ctx = document.getElementById("view").getContext("2d");
  return points.map(([x, y]) => Array.from(ctx.getImageData(x, y, 1, 1).data.slice(0, 3)));
}"""


def test_the_canvas_shows_a_box_drawn_on_the_stop_sign(page: Any, tmp_path: Path) -> None:
    page.wait_for_function(_SHOWN_STOP, timeout=20_000)
    page.click("#pause")  # the canvas now keeps the frame whose result we read
    shown = page.evaluate("() => window.seedcamView.shown.header")
    stop = next(d for d in shown["result"]["detections"] if d["label"] == "stop")
    zoom = page.evaluate("() => window.seedcamView.zoom")
    w, h = shown["width"] * zoom, shown["height"] * zoom
    box = stop["box"]
    x0, y0, x1, y1 = box["x_min"] * w, box["y_min"] * h, box["x_max"] * w, box["y_max"] * h
    mid_x, mid_y = (x0 + x1) / 2, (y0 + y1) / 2
    edges = [(round(x0), round(mid_y)), (round(x1), round(mid_y)), (round(mid_x), round(y1))]
    colour = _rgb(PALETTE[stop["class_id"] % len(PALETTE)])
    for pixel in page.evaluate(_PIXELS, [edges]):
        assert all(abs(a - b) <= 40 for a, b in zip(pixel, colour, strict=True)), (pixel, colour)
    # a 5 x 5 grid over the middle of the box: mostly the sign's red face (its white letters and rim are the rest)
    grid = [(round(x0 + (x1 - x0) * fx), round(y0 + (y1 - y0) * fy)) for fx in _INNER for fy in _INNER]
    inside = page.evaluate(_PIXELS, [grid])
    red = [p for p in inside if p[0] > p[1] + 40 and p[0] > p[2] + 40]
    assert len(red) >= len(inside) // 2, f"the box is not on the red sign: {inside}"
    assert box["x_max"] < 0.5, "the stop sign stands left of the lane"
    page.screenshot(path=str(tmp_path / "view.png"))
    keep = os.environ.get(SCREENSHOT_ENV)
    if keep:
        shutil.copy(tmp_path / "view.png", keep)
    where = page.locator("#view").bounding_box()
    page.mouse.move(where["x"] + 101, where["y"] + 51)  # zoom 2: preview pixel (50, 25)
    assert page.inner_text("#cursor") == "50, 25"
    page.select_option("#zoom", "1")
    assert page.evaluate("() => document.getElementById('view').width") == shown["width"]


def test_moving_the_threshold_slider_changes_the_device_threshold(page: Any, live_view: LiveView) -> None:
    sensor = live_view.sensor
    before = sensor.config_get("detect.score_threshold")
    page.wait_for_function("() => document.getElementById('threshold-applied').textContent.startsWith('device')")
    try:
        page.focus("#threshold")
        page.keyboard.press("ArrowLeft")  # one step (0.05) down, as a user drags it
        page.keyboard.press("ArrowLeft")
        expected = round(float(before) - 0.10, 2)  # type: ignore[arg-type]
        page.wait_for_function(
            "(want) => document.getElementById('threshold-applied').textContent.startsWith('device: ' + want)",
            arg=f"{expected:.2f}",
            timeout=10_000,
        )
        assert sensor.config_get("detect.score_threshold") == pytest.approx(expected)
        page.click("#save")  # the board runs with --config FILE: it can save
        page.wait_for_function("() => document.getElementById('save-applied').textContent === 'saved on the device'")
        assert f"score_threshold = {expected}" in live_view.config.read_text()
    finally:
        sensor.config_set("detect.score_threshold", before)


def test_eight_tabs_at_once_all_go_live(browser: Any, live_view: LiveView) -> None:
    context = browser.new_context()
    try:
        tabs = [context.new_page() for _ in range(8)]
        for tab in tabs:
            tab.goto(live_view.server.url)
        for tab in tabs:
            tab.wait_for_function(
                "() => window.seedcamView.connection === 'live' && window.seedcamView.framesShown >= 2",
                timeout=20_000,
            )
        hub = live_view.server.app.state.hub
        wait_until(lambda: hub.clients == 8, what="eight tabs on the hub")
        frames = [tab.evaluate("() => window.seedcamView.shown.header.frame_id") for tab in tabs]
        assert all(isinstance(f, int) for f in frames)
        assert live_view.sensor.connected  # the one sensor connection carried them all
    finally:
        context.close()


def test_one_click_installs_a_model_from_a_local_catalog_with_a_progress_bar(
    browser: Any, tmp_path: Path, firmware_factory: Any
) -> None:
    pytest.importorskip("cryptography")
    from catalog_helpers import NEXT_LANE_VERSION, model_at_version

    from seedcam import catalog
    from seedcam_tools.bundles import generate_keypair
    from seedcam_tools.catalog_build import build_catalog

    key = generate_keypair()
    cat = tmp_path / "catalog"
    build_catalog(model_at_version(tmp_path / "next", "lane", NEXT_LANE_VERSION), cat, key.private)
    board = firmware_factory(
        "--fps", "10", "--tasks", "lane",
        "--set", f"updates.dir={tmp_path / 'storage'}",
        "--set", f"updates.public_keys={key.public.hex()}",
    )  # fmt: skip
    loaded = catalog.load_catalog(cat.as_uri(), [key.public])
    with seedcam.open(board.link, timeout=15) as sensor:
        server = ViewServer(sensor, "127.0.0.1", 0, ViewOptions(preview=None, catalog=loaded)).start()
        context = browser.new_context()
        try:
            tab = context.new_page()
            tab.goto(server.url)
            button = tab.locator(f'button[data-model="lane-v3@{NEXT_LANE_VERSION}"]')
            button.wait_for(timeout=20_000)
            assert tab.locator(f'#models li[data-version="{NEXT_LANE_VERSION}"]').count() == 0
            button.click()
            tab.locator(f'#models li[data-version="{NEXT_LANE_VERSION}"]').wait_for(timeout=60_000)
            assert tab.evaluate("() => window.seedcamView.progressSeen") >= 1
            bar = tab.evaluate("() => [document.getElementById('install-progress').value, "
                               "document.getElementById('install-progress').max]")  # fmt: skip
            assert bar[0] == bar[1] > 0
            assert f"installed lane-v3@{NEXT_LANE_VERSION}" in tab.inner_text("#install-applied")
        finally:
            context.close()
            server.stop()
        (lane,) = [m for m in sensor.models() if m.task == "lane"]
        assert (lane.version, lane.active) == (NEXT_LANE_VERSION, True)

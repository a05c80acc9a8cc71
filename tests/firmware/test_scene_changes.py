"""Scripted scenes that change over time (``[[changes]]``, for the black-box test's lane that disappears)."""

from __future__ import annotations

from pathlib import Path

import pytest

from seedcam_firmware.camera.synthetic import SyntheticCamera
from seedcam_firmware.errors import ConfigError
from seedcam_firmware.scene.scripted import load_scene_file, load_scene_script

SCRIPT = """
offset_m = 0.05

[[changes]]
at_frame = 2
left_style = "none"

[[changes]]
at_frame = 4
right_style = "none"
offset_m = 0.0
"""


def test_each_change_applies_from_its_frame_on_over_the_scene_before_it(tmp_path: Path) -> None:
    path = tmp_path / "scene.toml"
    path.write_text(SCRIPT)
    script = load_scene_script(path)
    statuses = [(s.left_visible, s.right_visible, s.offset_m) for s in map(script.at, range(6))]
    assert statuses == [(True, True, 0.05)] * 2 + [(False, True, 0.05)] * 2 + [(False, False, 0.0)] * 2
    with SyntheticCamera(fps=1000.0, scripted=script, size=(64, 48)) as cam:
        truths = [cam.read(1.0).truth for _ in range(5)]
    assert [t.lane.status for t in truths if t is not None] == ["ok", "ok", "one_line", "one_line", "lost"]
    with pytest.raises(ConfigError, match="unknown scene key 'changes'"):
        load_scene_file(path)  # a still scene's reader does not silently drop the changes


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[changes]]\nleft_style = 'none'\n", r"changes\[0\].at_frame must be"),
        ("[[changes]]\nat_frame = 3\n[[changes]]\nat_frame = 3\n", r"changes\[1\].at_frame must be"),
        ("[[changes]]\nat_frame = 3\nleft_style = 'wavy'\n", r"changes\[0\]: bad scene"),
        ("[[changes]]\nat_frame = 3\ncolour = 1\n", r"changes\[0\]: unknown scene key 'colour'"),
        ("changes = 3\n", "changes must be an array of tables"),
    ],
)
def test_a_bad_change_is_a_config_error_naming_it(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "scene.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_scene_script(path)

"""The agv commands' own options do not undo the ``seedcam`` CLI's global ones."""

from __future__ import annotations

import pytest

from seedcam import cli


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--json", "agv-sim"], True),
        (["agv-sim", "--json"], True),
        (["agv-sim"], False),
        (["--json", "agv-bench"], True),
        (["agv-bench"], False),
    ],
)
def test_json_before_or_after_the_agv_command_is_kept(argv: list[str], expected: bool) -> None:
    args = cli._parser().parse_args(argv)
    assert args.json is expected

"""The randomized training world (domain randomization) shared by the model families.

Only for training, calibration and our-world evaluation; the independent
evaluation world is :mod:`seedcam_tools.otherworld` and shares nothing with it.
"""

from .assets import WorldAssetsMissing, font_families, font_paths, world_assets_id
from .scene import (
    IN_VIEW_PIXELS,
    LABELS,
    WORLD_FACTORS,
    WorldLane,
    WorldObject,
    WorldScene,
    lines_in_view,
    plate_text,
    render_world_scene,
)

__all__ = [
    "IN_VIEW_PIXELS",
    "LABELS",
    "WORLD_FACTORS",
    "WorldAssetsMissing",
    "WorldLane",
    "WorldObject",
    "WorldScene",
    "font_families",
    "font_paths",
    "lines_in_view",
    "plate_text",
    "render_world_scene",
    "world_assets_id",
]

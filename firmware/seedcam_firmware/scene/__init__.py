"""Synthetic road scenes: a small car's view of a lane on the floor, with ground truth.

Conventions (REP-103): +x forward, +y LEFT. The lane reference point is the floor
point directly below the camera; offset > 0 means the car is left of the lane
centre, heading > 0 means the car is yawed left of the lane tangent, curvature
> 0 means the lane bends left. Constant-curvature (circular) lanes are exact.
"""

from __future__ import annotations

from .camera_model import DEFAULT_CAMERA, CameraModel
from .drive import SyntheticDrive
from .random_scene import RANGES, random_objects, random_scene
from .render import CleanRender, expose, object_corners, render, render_clean, render_with_mask
from .types import (
    OBJECT_KINDS,
    LaneTruth,
    ObjectTruth,
    SceneObject,
    SceneSpec,
    SceneTruth,
)

__all__ = [
    "DEFAULT_CAMERA",
    "OBJECT_KINDS",
    "RANGES",
    "CameraModel",
    "CleanRender",
    "LaneTruth",
    "ObjectTruth",
    "SceneObject",
    "SceneSpec",
    "SceneTruth",
    "SyntheticDrive",
    "expose",
    "object_corners",
    "random_objects",
    "random_scene",
    "render",
    "render_clean",
    "render_with_mask",
]

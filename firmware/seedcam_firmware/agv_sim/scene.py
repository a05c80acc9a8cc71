"""What the camera sees from the car's pose: the scene message the ``sim`` camera source renders."""

from __future__ import annotations

import math
from typing import Any

from seedcam_firmware.agv_sim.track import Track

__all__ = ["scene_message", "wrap_angle"]

#: the renderer draws a lane of constant curvature: the mean over this stretch ahead stands for it
LOOK_AHEAD_M = 0.5
#: objects nearer or farther than this (forward, car frame) are not sent
_NEAR_M, _FAR_M = 0.12, 4.0
_MAX_YAW = 1.3


def wrap_angle(a: float) -> float:
    """``a`` wrapped to ``[-pi, pi)``."""
    return (a + math.pi) % (2 * math.pi) - math.pi


def scene_message(
    track: Track, x: float, y: float, yaw: float, s: float, *, noise_sigma: float | None = None
) -> dict[str, Any]:
    """The scene at the camera's floor point (x, y) with car heading ``yaw``; ``s`` is its track position.

    Returns:
        ``{"scene": {...}}`` with SceneSpec keys (see :mod:`seedcam_firmware.camera.sim`).
    """
    _, lateral = track.project(x, y, s)
    _, _, tangent = track.pose(s)
    scene: dict[str, Any] = {
        "offset_m": lateral,
        "heading_rad": wrap_angle(yaw - tangent),
        "curvature_per_m": track.mean_curvature(s, LOOK_AHEAD_M),
        "lane_width_m": track.lane_width_m,
        "dash_phase_m": s,
    }
    if not track.line_painted(s, +1):
        scene["left_style"] = "none"
    if not track.line_painted(s, -1):
        scene["right_style"] = "none"
    if noise_sigma is not None:
        scene["noise_sigma"] = noise_sigma
    objects = []
    c, sn = math.cos(yaw), math.sin(yaw)
    for sign in track.signs:
        sx, sy, facing = track.sign_position(sign)
        dx, dy = sx - x, sy - y
        forward, left = dx * c + dy * sn, -dx * sn + dy * c
        face_yaw = wrap_angle(facing - math.pi - yaw)
        if _NEAR_M < forward < _FAR_M and abs(face_yaw) < _MAX_YAW:
            obj: dict[str, Any] = {"kind": sign.kind, "forward_m": forward, "left_m": left, "yaw_rad": face_yaw}
            if sign.text:
                obj["text"] = sign.text
            objects.append(obj)
    scene["objects"] = objects
    return {"scene": scene}

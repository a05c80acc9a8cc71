"""Scripted scenes shared by the end-to-end tests (camera.scene TOML text)."""

#: a stop sign left of the lane and a near plate reading AGV-042 on the right
STOP_AND_PLATE = """
offset_m = 0.02
heading_rad = 0.04
curvature_per_m = 0.1
noise_sigma = 0.01

[[objects]]
kind = "stop"
forward_m = 0.9
left_m = 0.32

[[objects]]
kind = "plate"
forward_m = 0.42
left_m = -0.24
text = "AGV-042"
yaw_rad = 0.2
"""

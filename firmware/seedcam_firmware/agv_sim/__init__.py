"""Closed-loop simulator for the AGV controller, through the real firmware and a real (pty) link.

A kinematic bicycle drives a track (:mod:`.track`); what its camera would see is
sent to the firmware's ``sim`` camera source, rendered by the firmware's scene
generator, run through the real models and framing, relayed over a pty with
latency, drops and corruption (:mod:`.link`), read with the real SDK and fed to
:class:`seedcam.agv.AgvController`, whose commands move the car. The firmware
runs as an emulated board (:mod:`seedcam_firmware.launcher`), so the simulator
ships with the firmware package, not with the SDK it tests; the plot needs
``seedcam-firmware[sim]`` (matplotlib). Run it with ``seedcam agv-sim``.
"""

from __future__ import annotations

from seedcam_firmware.agv_sim.link import ImpairedLink, LinkImpairment
from seedcam_firmware.agv_sim.metrics import RunMetrics, Sample, StopEvent, format_table, summarise
from seedcam_firmware.agv_sim.runner import SimOptions, SimRun, detector_available, run_simulation
from seedcam_firmware.agv_sim.track import Track, TrackSign, default_track
from seedcam_firmware.agv_sim.vehicle import BicycleModel, SimulatedMotor, VehicleParams, VehicleState

__all__ = [
    "BicycleModel",
    "ImpairedLink",
    "LinkImpairment",
    "RunMetrics",
    "Sample",
    "SimOptions",
    "SimRun",
    "SimulatedMotor",
    "StopEvent",
    "Track",
    "TrackSign",
    "VehicleParams",
    "VehicleState",
    "default_track",
    "detector_available",
    "format_table",
    "run_simulation",
    "summarise",
]

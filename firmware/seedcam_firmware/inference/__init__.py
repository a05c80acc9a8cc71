"""Model inference: the interpreter runtime, bundle manifests, preprocessing and adapters."""

from __future__ import annotations

from .lane import LaneEstimate, decode_lane
from .manifest import ModelManifest, load_manifest
from .preprocess import InputSpec, preprocess
from .runtime import Model, load_interpreter

__all__ = [
    "InputSpec",
    "LaneEstimate",
    "Model",
    "ModelManifest",
    "decode_lane",
    "load_interpreter",
    "load_manifest",
    "preprocess",
]

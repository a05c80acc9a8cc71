"""Evaluate a lane TFLite bundle on freshly rendered held-out scenes.

Held-out scenes use seeds from :data:`~seedcam_tools.lane.data.HELDOUT_SEED_BASE`
(10_000_000) upwards; ``seed`` picks an offset into that range. The whole
firmware path is exercised: render -> :func:`preprocess` -> :class:`Model` ->
:func:`decode_lane`.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from seedcam_firmware.inference.lane import decode_lane
from seedcam_firmware.inference.preprocess import preprocess
from seedcam_firmware.inference.runtime import Model
from seedcam_firmware.scene import random_scene, render_with_mask

from ..export import manifest_for_file
from ..world import lines_in_view
from .data import HELDOUT_SEED_BASE

__all__ = ["evaluate_lane"]


def evaluate_lane(
    model_path: str | Path, *, seed: int = 0, samples: int = 1000, num_threads: int = 1
) -> dict[str, Any]:
    """Accuracy of one ``.tflite`` of a bundle (its ``manifest.json`` must sit beside it).

    Args:
        model_path: ``lane_int8.tflite`` or ``lane_f32.tflite`` in a bundle folder.
        seed: offset into the held-out seed range (scene k uses seed
            ``HELDOUT_SEED_BASE + seed * 1_000_000 + k``).
        samples: number of scenes.

    Returns:
        Dict with offset/heading/curvature/width MAE on scenes with both lines
        in view (``ok_*``), status accuracy on all scenes (the true status is what
        is in view, :func:`~seedcam_tools.world.lines_in_view`), p95 errors, offset and
        heading errors on scenes with one line in view (``one_line_*``), and the
        median invoke time in ms.
    """
    manifest = manifest_for_file(Path(model_path))
    model = Model(manifest.file, input_shape=manifest.input_shape, outputs=manifest.outputs, num_threads=num_threads)
    base = HELDOUT_SEED_BASE + seed * 1_000_000
    errs, one_line_errs, status_ok, times = [], [], 0, []
    for k in range(samples):
        spec = random_scene(np.random.default_rng(base + k))
        image, truth, mask = render_with_mask(spec)
        x = preprocess(image, manifest)
        t0 = time.perf_counter()
        out = model.invoke(x)
        times.append(time.perf_counter() - t0)
        est = decode_lane(out, manifest)
        lane = truth.lane
        status = ("lost", "one_line", "ok")[sum(lines_in_view(mask))]  # from what is in view
        status_ok += int(est.status == status)
        error = [
            est.offset_m - lane.offset_m,
            est.heading_rad - lane.heading_rad,
            est.curvature_per_m - lane.curvature_per_m,
            est.lane_width_m - lane.lane_width_m,
        ]
        if status == "ok":
            errs.append(error)
        elif status == "one_line":
            one_line_errs.append(error)
    e = np.abs(np.asarray(errs))
    one = np.abs(np.asarray(one_line_errs)).reshape(-1, 4)
    return {
        "model": manifest.file.name,
        "precision": manifest.precision,
        "samples": samples,
        "ok_samples": len(e),
        "seed": seed,
        "offset_mae_m": float(e[:, 0].mean()),
        "heading_mae_rad": float(e[:, 1].mean()),
        "heading_mae_deg": float(math.degrees(e[:, 1].mean())),
        "curvature_mae_per_m": float(e[:, 2].mean()),
        "width_mae_m": float(e[:, 3].mean()),
        "offset_p95_m": float(np.percentile(e[:, 0], 95)),
        "heading_p95_deg": float(math.degrees(np.percentile(e[:, 1], 95))),
        "status_accuracy": status_ok / samples,
        "one_line_samples": len(one),
        "one_line_offset_mae_m": float(one[:, 0].mean()) if len(one) else None,
        "one_line_offset_p95_m": float(np.percentile(one[:, 0], 95)) if len(one) else None,
        "one_line_heading_mae_deg": float(math.degrees(one[:, 1].mean())) if len(one) else None,
        "invoke_ms_median": 1000.0 * float(np.median(times)),
    }

"""Background training runner for the shipped lane model (developer use, not the CLI).

Usage: python -m seedcam_tools._lane_bg_train TRAIN.npz VAL.npz OUT_DIR EPOCHS MAX_SECONDS
(datasets written by :meth:`seedcam_tools.lanedata.LaneData.save`).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

from .lanedata import LaneData
from .train_lane import train_on_data, validation_metrics


def main(argv: list[str]) -> int:
    """Train and save ``lane.keras`` and ``train_metrics.json``."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    train = LaneData.load(Path(argv[0]))
    val = LaneData.load(Path(argv[1]))
    out = Path(argv[2])
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    model, hist = train_on_data(train, val, seed=0, epochs=int(argv[3]), progress=True, max_seconds=float(argv[4]))
    model.save(out / "lane.keras")
    m = validation_metrics(model, val)
    m.update(
        samples=len(train.x),
        epochs_planned=int(argv[3]),
        epochs_run=len(hist["loss"]),
        train_seconds=time.monotonic() - t0,
    )
    (out / "train_metrics.json").write_text(json.dumps(m, indent=2))
    logging.getLogger(__name__).info("done: %s", m)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""seedcam *other world*: an independently written renderer for EVALUATION ONLY.

Scenes from this package are used only to evaluate the perception models
(lane state, sign/plate detection, plate OCR). They are never used for
training, calibration, threshold tuning or model selection. The renderer
was written apart from the training renderer, with its own drawing code,
sign designs, plate styles, fonts, textures and camera effects, so that
scores on it say how the models do on scenes they were not fitted to.
"""

from __future__ import annotations

from .scene import render_scene
from .truth import OTHERWORLD_LABELS, PLATE_ALPHABET, OtherLane, OtherObject, OtherScene

__all__ = ["OTHERWORLD_LABELS", "PLATE_ALPHABET", "OtherLane", "OtherObject", "OtherScene", "render_scene"]

"""``seedcam view``: a live view of a sensor in the browser (extra ``seedcam[view]``).

One sensor connection, fanned out to every open tab: each tab's WebSocket carries every Result
and the preview JPEG of the same frame, paired here by frame id, with the HUD and the controls
(docs/view.md). Plain HTML, JS and a ``<canvas>`` served from the package; no build step.

This package needs Starlette and uvicorn; ``import seedcam`` never imports it.
"""

from __future__ import annotations

from seedcam.view.app import ViewOptions, create_app
from seedcam.view.server import ViewServer, serve

__all__ = ["ViewOptions", "ViewServer", "create_app", "serve"]

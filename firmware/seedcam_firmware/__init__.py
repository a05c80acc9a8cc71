"""seedcam sensor firmware: capture, inference and the link daemon."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]

"""The SDK must install and import on a small board: no numpy, OpenCV, LiteRT or TensorFlow."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("numpy", "cv2", "ai_edge_litert", "tflite_runtime", "tensorflow", "keras")

PROBE = f"""
import importlib, pkgutil, sys
HEAVY = {HEAVY!r}

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HEAVY:
            raise ImportError(f"{{name}} is not installed on this board")
        return None

sys.meta_path.insert(0, Blocker())
import seedcam
for info in pkgutil.walk_packages(seedcam.__path__, "seedcam."):
    importlib.import_module(info.name)
loaded = sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)
assert not loaded, loaded
print("ok", len([m for m in sys.modules if m.startswith("seedcam")]))
"""


def test_every_sdk_module_imports_without_heavy_dependencies() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok")

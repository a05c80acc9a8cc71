"""Training stays reproducible when its steps are XLA-compiled (seedcam_tools.reproducible)."""

from __future__ import annotations

import subprocess
import sys

# Each run in a fresh interpreter: TensorFlow's op determinism, once switched on by another
# test's short training in this process, would stay on and hide what XLA alone does.
_RUN = """
import hashlib
import numpy as np
import seedcam_tools.detect.train as train
from seedcam_tools.detect.data import generate

train.XLA_MIN_STEPS = 1  # this short run compiles its steps as a long one does
data = generate(0, 8, workers=1)
model = train.train_on_data(data, seed=3, epochs=1, batch_size=8, lr=1e-3, width=0.5, blocks=0)
from tensorflow.python.framework import config
digest = hashlib.sha256(b"".join(np.asarray(w).tobytes() for w in model.weights)).hexdigest()
print(model.jit_compile, config.is_op_determinism_enabled(), digest)
"""


def test_xla_compiled_detector_training_gives_the_same_weights_twice() -> None:
    runs = [subprocess.Popen([sys.executable, "-c", _RUN], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [run.communicate(timeout=600)[0].split() for run in runs]
    assert all(run.returncode == 0 for run in runs)
    (jit_a, determinism_a, weights_a), (jit_b, _, weights_b) = outputs
    assert (jit_a, jit_b, determinism_a) == ("True", "True", "False")  # XLA, not TensorFlow's op determinism
    assert weights_a == weights_b

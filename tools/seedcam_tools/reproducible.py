"""Seeded, reproducible training: how the trainers of seedcam-tools start Keras.

On the TensorFlow backend a training run can be made deterministic in two ways:

* TensorFlow's op determinism (``tf.config.experimental.enable_op_determinism``): the same
  weights for the same seed and data on any device, but no XLA;
* XLA-compiled training steps (``jit_compile=True``) on a CPU: XLA's CPU kernels accumulate in
  a fixed order, so the same seed and data give the same weights too
  (``tests/tools/test_reproducible.py`` trains twice in fresh processes and compares).

XLA pays where the step is made of many small convolutions: the detector trains at about twice
the speed (18.7 -> 37-47 samples/s on the 2-core AVX2 development machine), while the lane
network (24 ms per sample either way) and the OCR reader (its CTC loss also needs dense labels to
compile) gained nothing, and a short run does not earn back the compile time (10-30 s per model).
A trainer asks for XLA where it pays: today the detector's.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["XLA_MIN_STEPS", "start_training"]

#: a run of fewer optimizer steps than this does not earn back XLA's compile time
XLA_MIN_STEPS = 300


def start_training(seed: int, *, xla: bool = False) -> bool | Literal["auto"]:
    """Seed Keras and make the run reproducible; returns ``jit_compile`` for ``model.compile``.

    Args:
        seed: the run's seed.
        xla: compile the training step with XLA where that stays deterministic (TensorFlow on
            a CPU: no GPU visible); otherwise TensorFlow's op determinism is switched on.
            Backends other than TensorFlow (JAX on a GPU machine) are seeded and compile as they
            choose (``"auto"``).
    """
    import keras

    keras.utils.set_random_seed(seed)
    if keras.backend.backend() != "tensorflow":
        return "auto"
    import tensorflow as tf

    if xla and not tf.config.list_physical_devices("GPU"):
        return True
    tf.config.experimental.enable_op_determinism()
    return False

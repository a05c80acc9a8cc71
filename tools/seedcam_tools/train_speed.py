"""Training a Keras model faster on a CPU: fused batch norms, and bfloat16 compute where the CPU has it.

Keras 3 computes a BatchNormalization in training as separate operations (the
batch moments, then the normalisation, each a pass over the activations, with
casts around them under mixed precision). On a 2-core CPU that is as costly as
the convolutions themselves: the lane, detector and OCR networks are
convolution, batch norm and ReLU throughout. TensorFlow's ``FusedBatchNormV3``
does the same arithmetic in one oneDNN kernel, for float32 and bfloat16 alike.
With it, bfloat16 compute (Keras' ``mixed_bfloat16`` policy: float32 weights,
bfloat16 activations) pays on a CPU with AMX, whose oneDNN convolutions then
run on its matrix tiles; without AMX bfloat16 is emulated or runs on vector
units, where it was not measured to pay, so ``auto`` (:func:`resolve_compute`)
picks it only with AMX.

The models the tools build, save, load, widen and export stay plain Keras
models with ``BatchNormalization`` layers in float32. A trainer calls
:func:`training_model` on one before ``compile`` and :func:`inference_model` on
the result of ``fit``: the first copies the weights into the same network with
:func:`fused_batch_norm_class` layers (and the bfloat16 policy on every layer
but those giving the model's outputs, which stay float32 for the losses), the
second copies them back. Both copies compute the same function at inference (a
fused layer infers with the parent's code; only its training step differs).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from seedcam_tools.cpu import cpu_flags

__all__ = [
    "BFLOAT16_FLAGS",
    "COMPUTE_CHOICES",
    "bfloat16_pays",
    "checkpoint_callback",
    "fused_batch_norm_class",
    "inference_model",
    "resolve_compute",
    "training_model",
]

log = logging.getLogger(__name__)

#: CPU flags under which bfloat16 training was measured to pay (oneDNN's convolutions on AMX tiles)
BFLOAT16_FLAGS = frozenset({"amx_bf16"})


def bfloat16_pays(flags: frozenset[str] | None = None) -> bool:
    """Whether this CPU (or one with ``flags``) has AMX for bfloat16: then it trains faster in it."""
    return bool((cpu_flags() if flags is None else flags) & BFLOAT16_FLAGS)


#: the ``--compute`` choices of the trainers: ``auto`` is ``bfloat16`` where :func:`bfloat16_pays`, else ``float32``
COMPUTE_CHOICES = ("auto", "float32", "bfloat16")


def resolve_compute(compute: str, flags: frozenset[str] | None = None) -> str:
    """``"float32"`` or ``"bfloat16"``: the compute a trainer asked for ``compute`` uses on this CPU.

    Raises:
        ValueError: ``compute`` is not one of :data:`COMPUTE_CHOICES`.
    """
    if compute not in COMPUTE_CHOICES:
        raise ValueError(f"compute must be one of {', '.join(COMPUTE_CHOICES)}, got {compute!r}")
    if compute == "auto":
        return "bfloat16" if bfloat16_pays(flags) else "float32"
    return compute


@functools.cache
def fused_batch_norm_class() -> Any:
    """The ``FusedBatchNormalization`` layer class (made on first use: importing this module imports no Keras)."""
    import keras

    @keras.saving.register_keras_serializable(package="seedcam")
    class FusedBatchNormalization(keras.layers.BatchNormalization):
        """A BatchNormalization whose training step is TensorFlow's fused kernel.

        The same layer as its parent (weights, configuration, inference); in training,
        on the TensorFlow backend, for a 4-D input normalised over its last axis
        without mask or renormalisation, the batch moments and the normalisation are
        one ``FusedBatchNormV3`` and the moving statistics are updated as the parent
        updates them (the kernel's Bessel-corrected variance is turned back into the
        biased one the parent tracks). Anything else runs the parent's code.
        """

        def _fusable(self, inputs: Any, training: Any, mask: Any) -> bool:
            return bool(
                training
                and self.trainable
                and mask is None
                and not self.renorm
                and keras.backend.backend() == "tensorflow"
                and len(inputs.shape) == 4
                and self.axis in (-1, 3)
            )

        def call(self, inputs: Any, training: Any = None, mask: Any = None) -> Any:
            if not self._fusable(inputs, training, mask):
                return super().call(inputs, training=training, mask=mask)
            import tensorflow as tf

            channels = int(inputs.shape[-1])
            gamma = tf.cast(self.gamma, tf.float32) if self.scale else tf.ones((channels,), tf.float32)
            beta = tf.cast(self.beta, tf.float32) if self.center else tf.zeros((channels,), tf.float32)
            x = inputs if inputs.dtype in (tf.float32, tf.bfloat16, tf.float16) else tf.cast(inputs, tf.float32)
            y, batch_mean, batch_var, *_ = tf.raw_ops.FusedBatchNormV3(
                x=x,
                scale=gamma,
                offset=beta,
                mean=tf.constant([], tf.float32),
                variance=tf.constant([], tf.float32),
                epsilon=self.epsilon,
                data_format="NHWC",
                is_training=True,
            )
            count = tf.cast(tf.size(x) // channels, tf.float32)
            biased_var = batch_var * tf.maximum(count - 1.0, 0.0) / tf.maximum(count, 1.0)
            momentum = self.momentum
            self.moving_mean.assign(self.moving_mean * momentum + batch_mean * (1.0 - momentum))
            self.moving_variance.assign(self.moving_variance * momentum + biased_var * (1.0 - momentum))
            return tf.cast(y, self.compute_dtype)

    return FusedBatchNormalization


def _output_layers(model: Any) -> set[str]:
    return {tensor._keras_history.operation.name for tensor in model.outputs}  # noqa: SLF001


def _copy(model: Any, make_layer: Any) -> Any:
    import keras

    # cloned through an uncompiled view of the same layers: cloning a compiled model compiles the copy
    # from its config, which names the trainer's loss functions
    view = keras.Model(model.input, model.output, name=model.name)
    copy = keras.models.clone_model(view, clone_function=make_layer)
    for layer in model.layers:
        weights = layer.get_weights()
        if weights:
            copy.get_layer(layer.name).set_weights(weights)
    return copy


def training_model(model: Any, *, bfloat16: bool = False) -> Any:
    """A copy of ``model`` (same weights) with fused batch norms, in bfloat16 compute if asked.

    The layers giving the model's outputs stay float32, so that the losses and the
    output precision are those of the float32 model.
    """
    import keras

    fused = fused_batch_norm_class()
    outputs = _output_layers(model)

    def make(layer: Any) -> Any:
        config = layer.get_config()
        if bfloat16 and layer.name not in outputs and not isinstance(layer, keras.layers.InputLayer):
            config["dtype"] = "mixed_bfloat16"
        if type(layer) is keras.layers.BatchNormalization:
            return fused.from_config(config)
        return type(layer).from_config(config)

    copy = _copy(model, make)
    log.info(
        "training %s with fused batch norms%s", model.name, ", bfloat16 compute" if bfloat16 else ", float32 compute"
    )
    return copy


def inference_model(model: Any) -> Any:
    """``model`` (a :func:`training_model` copy, or any model) as a plain float32 Keras model, same weights."""
    import keras

    fused = fused_batch_norm_class()

    def make(layer: Any) -> Any:
        config = layer.get_config()
        if not isinstance(layer, keras.layers.InputLayer):
            config["dtype"] = "float32"
        if isinstance(layer, fused):
            return keras.layers.BatchNormalization.from_config(config)
        return type(layer).from_config(config)

    return _copy(model, make)


def checkpoint_callback(path: Any) -> Any:
    """A Keras callback saving the model being trained, as :func:`inference_model` makes it, after every epoch.

    What it saves loads anywhere as the builders' own models do (no fused layers, no bfloat16 policy).
    """
    import keras

    class _InferenceCheckpoint(keras.callbacks.Callback):
        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            inference_model(self.model).save(str(path))

    return _InferenceCheckpoint()

"""Widen a trained network without starting over: Net2WiderNet (Chen, Goodfellow and Shlens, 2016).

A wider copy of a convolution / batch-norm / dense network (the same builder called with a
larger channel multiplier: lane, detector and OCR alike) takes the narrower network's weights
so that it computes the same function before training. Each layer whose channel count grows
keeps its channels and adds copies of some of them; the layers that read those channels split
each old channel's weights between its copies (fractions that sum to one), so the sum they
compute is unchanged. Batch norms and biases follow their channels.

Copies that stay exact copies get gradients that Adam scales to the same step, and would stay
copies for ever: ``noise`` perturbs each added copy's incoming weights (by that fraction of the
kernel's spread) and the split fractions differ between copies, so the copies can diverge. With
``noise=0`` the wide network computes the narrow one's function to float rounding.

Channel copies are chosen per (narrow count, wide count) from ``seed`` alone, so two tensors of
the same widths that a residual ``Add`` sums hold the same copies, as the sum requires.

This is how a shipped bundle's network grows in capacity on a machine that cannot afford to
train a wider one from scratch (``train-ocr --init-width-mult``).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from seedcam.errors import SensorError

__all__ = ["WidenError", "widen"]

log = logging.getLogger(__name__)

#: layers that pass each channel through unchanged (or with weights per channel, the batch norm)
_PER_CHANNEL = {"ReLU", "Activation", "Dropout", "UpSampling2D", "Softmax", "BatchNormalization"}


class WidenError(SensorError, ValueError):
    """The wide network is not a wider copy of the narrow one."""


def _copies(narrow: int, wide: int, seed: int) -> np.ndarray:
    """Which narrow channel each of ``wide`` channels holds: the narrow ones, then copies."""
    if wide < narrow:
        raise WidenError(f"a layer narrows from {narrow} to {wide} channels")
    rng = np.random.default_rng([seed, narrow, wide])
    return np.concatenate([np.arange(narrow), rng.integers(0, narrow, wide - narrow)])


def _split_fractions(mapping: np.ndarray, rng: np.random.Generator, spread: float) -> np.ndarray:
    """Per wide input channel, its share of its narrow channel's weights: the shares of each narrow channel sum to 1."""
    counts = np.bincount(mapping)
    shares = (1.0 + spread * rng.uniform(-1.0, 1.0, mapping.size)) / counts[mapping]
    totals = np.bincount(mapping, weights=shares)
    return shares / totals[mapping]


def _inbound(layer: Any) -> list[Any]:
    return list(layer._inbound_nodes[0].input_tensors)  # noqa: SLF001 - Keras's functional graph


def widen(narrow: Any, wide: Any, *, seed: int = 0, noise: float = 0.01) -> None:
    """Set ``wide``'s weights (in place) from ``narrow``'s so that it computes the same function.

    Args:
        narrow: a trained Keras functional model.
        wide: the same architecture with as many or more channels in each layer (the same
            builder with a larger channel multiplier); its layers are matched with
            ``narrow``'s by their order.
        seed: chooses the copied channels, the split fractions and the noise.
        noise: each added copy's incoming weights are perturbed by this fraction of the
            standard deviation of its narrow kernel (0: the same function to float rounding).

    Raises:
        WidenError: the two networks differ in anything but channel counts, a layer narrows,
            or a layer of a kind this does not know holds weights or mixes channels.
    """
    if len(narrow.layers) != len(wide.layers):
        raise WidenError(
            f"{len(narrow.layers)} layers in the narrow network against {len(wide.layers)} in the wide one"
        )
    rng = np.random.default_rng(seed)
    position = {id(layer): i for i, layer in enumerate(wide.layers)}
    mappings: dict[int, np.ndarray] = {}  # wide layer position -> narrow channel of each of its output channels
    for i, (old, new) in enumerate(zip(narrow.layers, wide.layers, strict=True)):
        kind = type(new).__name__
        if type(old).__name__ != kind:
            raise WidenError(f"layer {i}: {type(old).__name__} in the narrow network against {kind} in the wide one")
        if kind == "InputLayer":
            mappings[i] = np.arange(int(new.output.shape[-1]))
            continue
        sources = [mappings[position[id(t._keras_history.operation)]] for t in _inbound(new)]  # noqa: SLF001
        mappings[i] = _widen_layer(old, new, kind, sources, rng, seed, noise)
    log.info("widened %s: %d to %d parameters", wide.name, narrow.count_params(), wide.count_params())


def _widen_layer(
    old: Any, new: Any, kind: str, sources: list[np.ndarray], rng: np.random.Generator, seed: int, noise: float
) -> np.ndarray:
    """Set one wide layer's weights; returns the narrow channel of each of its output channels."""
    if kind in ("Conv2D", "Dense"):
        return _widen_weighted(old, new, sources[0], rng, seed, noise)
    if kind in _PER_CHANNEL:
        (mapping,) = sources
        softmax = kind == "Softmax" or getattr(getattr(new, "activation", None), "__name__", "") == "softmax"
        if softmax and not np.array_equal(mapping, np.arange(mapping.size)):
            raise WidenError(f"{new.name}: a softmax over widened channels (the copies would change it)")
        if kind == "BatchNormalization":
            new.set_weights([w[mapping] for w in old.get_weights()])
        return mapping
    if kind == "Add":
        if any(not np.array_equal(sources[0], m) for m in sources[1:]):
            raise WidenError(f"{new.name}: the tensors it adds hold different channel copies")
        return sources[0]
    if kind == "Concatenate":
        if new.axis in (-1, len(new.output.shape) - 1):
            offsets = np.cumsum([0] + [int(t.shape[-1]) for t in _inbound(old)])
            return np.concatenate([m + offset for m, offset in zip(sources, offsets[:-1], strict=True)])
        if any(not np.array_equal(sources[0], m) for m in sources[1:]):
            raise WidenError(f"{new.name}: the tensors it joins hold different channel copies")
        return sources[0]
    if kind == "Flatten":
        (mapping,) = sources
        in_shape = _inbound(old)[0].shape
        cells = int(np.prod(in_shape[1:-1]))
        channels = int(in_shape[-1])
        return (np.arange(cells)[:, None] * channels + mapping[None, :]).reshape(-1)
    if kind == "Reshape":
        (mapping,) = sources
        if not np.array_equal(mapping, np.arange(mapping.size)):
            raise WidenError(f"{new.name}: reshapes widened channels")
        return np.arange(int(new.output.shape[-1]))
    raise WidenError(f"{new.name}: a {kind} layer, which widening does not know")


def _widen_weighted(
    old: Any, new: Any, inputs: np.ndarray, rng: np.random.Generator, seed: int, noise: float
) -> np.ndarray:
    """A convolution or dense layer: read the copied input channels at split weights, write copies."""
    weights = old.get_weights()
    kernel = weights[0]
    new_shape = tuple(int(v) for v in new.kernel.shape)
    if kernel.shape[:-2] != new_shape[:-2] or inputs.size != new_shape[-2] or int(inputs.max()) >= kernel.shape[-2]:
        raise WidenError(f"{new.name}: kernel {kernel.shape} does not widen to {new_shape}")
    outputs = _copies(kernel.shape[-1], new_shape[-1], seed)
    fractions = _split_fractions(inputs, rng, spread=0.5)
    wide = kernel[..., inputs, :] * fractions[:, None]
    wide = wide[..., outputs]
    added = outputs.size - kernel.shape[-1]
    if noise > 0 and added:
        spread = float(np.std(kernel)) * noise
        wide[..., kernel.shape[-1] :] += rng.normal(0.0, spread, wide[..., kernel.shape[-1] :].shape)
    new_weights = [wide.astype(kernel.dtype)] + [w[outputs] for w in weights[1:]]
    new.set_weights(new_weights)
    return outputs

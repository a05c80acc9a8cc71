"""Classifier post-processing: score activations and the top-k classes.

Pure functions from an output tensor to small records, in the manner of
pycoral's ``classify`` adapter. The activation helper is shared with the
detection decoders.

Example::

    top_k(np.array([0.1, 0.7, 0.2]), ["cat", "dog", "bird"], 2)
    # [(1, "dog", 0.7), (2, "bird", 0.2)]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["ACTIVATIONS", "activate", "top_k"]

#: score activations a manifest may name: ``"none"`` means the values already are scores.
ACTIVATIONS = ("none", "sigmoid", "softmax")


def activate(values: np.ndarray, activation: str, axis: int = -1) -> np.ndarray:
    """Turn raw model outputs into scores, as float32.

    Args:
        values: the raw outputs (logits, or scores already).
        activation: ``"none"`` (returned unchanged), ``"sigmoid"`` (elementwise) or
            ``"softmax"`` (along ``axis``).
        axis: the class axis for ``"softmax"``.

    Raises:
        ValueError: unknown activation.
    """
    x = np.asarray(values, dtype=np.float32)
    if activation == "none":
        return x
    if activation == "sigmoid":
        # the tanh form never overflows, unlike 1 / (1 + exp(-x)) for large negative x
        return (0.5 * (1.0 + np.tanh(0.5 * x))).astype(np.float32)
    if activation == "softmax":
        if x.size == 0:
            return x
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return (e / e.sum(axis=axis, keepdims=True)).astype(np.float32)
    raise ValueError(f"unknown activation {activation!r}; expected one of {ACTIVATIONS}")


def top_k(
    probs: np.ndarray, labels: Sequence[str], k: int, *, activation: str = "none"
) -> list[tuple[int, str, float]]:
    """The ``k`` best classes of a classifier output.

    Args:
        probs: scores or logits of shape ``[C]`` or ``[1, C]``.
        labels: the ``C`` class names.
        k: how many classes to return (at most ``C`` come back).
        activation: applied to ``probs`` first: ``"none"``, ``"softmax"`` or ``"sigmoid"``.

    Returns:
        ``(class index, label, score)`` tuples, best first; equal scores keep
        class-index order.

    Raises:
        ValueError: ``k < 1``, ``probs`` is not one row of ``len(labels)`` scores,
            or the activation is unknown.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    p = np.asarray(probs)
    if p.ndim == 2 and p.shape[0] == 1:
        p = p[0]
    if p.ndim != 1:
        raise ValueError(f"expected scores of shape [C] or [1, C], got {list(np.shape(probs))}")
    if p.shape[0] != len(labels):
        raise ValueError(f"{p.shape[0]} scores but {len(labels)} labels")
    scores = activate(p, activation)
    order = np.argsort(-scores, kind="stable")[:k]
    return [(int(i), str(labels[i]), float(scores[i])) for i in order]

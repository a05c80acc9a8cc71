"""Rebuild a trainable Keras model from a shipped float32 TFLite file.

The converter folds every BatchNormalization into the convolution before it, so
a ``.tflite`` holds, per convolution, one kernel and one bias. Given a Keras
model of the same architecture (e.g. :func:`~seedcam_tools.detect.model.build_detector`),
:func:`load_tflite_weights` matches each Keras ``Conv2D`` or ``Dense`` with its TFLite
``CONV_2D`` or ``FULLY_CONNECTED`` by graph structure (its kernel shape and the weighted
layers it reads from, recursively), copies the folded kernel, and sets each following
BatchNormalization so that the model computes exactly the TFLite function:
``gamma = sqrt(var + eps)``, ``beta = mean + bias``. The mean and variance are
measured on calibration images, so that the first training steps (which use
batch statistics) start from the same function as inference.

This is how a bundle shipped without its Keras file (detect-v2 was trained on
another machine) is fine-tuned: ``train-detector --init-from models/detect/detect_f32.tflite``,
``train-ocr --init-from models/ocr/ocr_f32.tflite``, ``train-lane --init-from models/lane/lane_f32.tflite``:
a fresh machine continues any shipped model without the Keras file of its training run.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from seedcam.errors import SensorError

__all__ = ["TfliteWeightsError", "load_tflite_weights"]

log = logging.getLogger(__name__)

#: ops that pass a tensor through on the way from one weighted layer to the next
_PASS_THROUGH_TFLITE = {"RESHAPE", "TILE", "LOGISTIC", "SOFTMAX", "RELU", "RESIZE_NEAREST_NEIGHBOR", "CONCATENATION"}
_PASS_THROUGH_KERAS = {
    "BatchNormalization",
    "ReLU",
    "Reshape",
    "UpSampling2D",
    "Activation",
    "Concatenate",
    "Dropout",
    "Softmax",
    "Flatten",
}


class TfliteWeightsError(SensorError, ValueError):
    """The TFLite file does not fit the Keras architecture."""


def _tflite_signatures(path: Path) -> dict[Any, tuple[np.ndarray, np.ndarray]]:
    """Structural signature -> (Keras-layout kernel, bias) of every CONV_2D and FULLY_CONNECTED in the file."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interp = Interpreter(
        model_path=str(path), experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    )
    interp.allocate_tensors()
    ops = interp._get_ops_details()  # noqa: SLF001 - the interpreter's only view of the graph
    producer = {int(out): op for op in ops for out in op["outputs"]}
    shapes = {t["index"]: tuple(int(v) for v in t["shape"]) for t in interp.get_tensor_details()}
    memo: dict[int, Any] = {}

    def signature(tensor: int) -> Any:
        if tensor in memo:
            return memo[tensor]
        op = producer.get(tensor)
        if op is None:
            sig: Any = "input"
        elif op["op_name"] == "CONV_2D":
            out_c, kh, kw, in_c = shapes[int(op["inputs"][1])]
            sig = ("conv", (kh, kw, in_c, out_c), signature(int(op["inputs"][0])))
        elif op["op_name"] == "FULLY_CONNECTED":
            out_n, in_n = shapes[int(op["inputs"][1])]
            sig = ("dense", (in_n, out_n), signature(int(op["inputs"][0])))
        elif op["op_name"] == "ADD":
            sig = ("add", frozenset(signature(int(t)) for t in op["inputs"][:2]))
        elif op["op_name"] in _PASS_THROUGH_TFLITE:
            sig = signature(int(op["inputs"][0]))
        else:
            raise TfliteWeightsError(f"{path.name}: op {op['op_name']} is not part of a conv/BN network")
        memo[tensor] = sig
        return sig

    convs: dict[Any, tuple[np.ndarray, np.ndarray]] = {}
    for op in ops:
        if op["op_name"] not in ("CONV_2D", "FULLY_CONNECTED"):
            continue
        sig = signature(int(op["outputs"][0]))
        weights = interp.get_tensor(int(op["inputs"][1]))
        kernel = weights.transpose(1, 2, 3, 0) if op["op_name"] == "CONV_2D" else weights.T
        bias = interp.get_tensor(int(op["inputs"][2])) if len(op["inputs"]) > 2 and op["inputs"][2] >= 0 else None
        if sig in convs:
            raise TfliteWeightsError(f"{path.name}: two weighted layers with the same place in the graph")
        convs[sig] = (kernel, bias if bias is not None else np.zeros(kernel.shape[-1], np.float32))
    return convs


def _keras_signatures(model: Any) -> dict[Any, Any]:
    """Structural signature -> Keras Conv2D or Dense layer, in the same terms as :func:`_tflite_signatures`."""
    memo: dict[int, Any] = {}

    def signature(tensor: Any) -> Any:
        key = id(tensor)
        if key in memo:
            return memo[key]
        layer = tensor._keras_history.operation  # noqa: SLF001 - Keras's functional graph
        kind = type(layer).__name__
        inputs = layer._inbound_nodes[0].input_tensors  # noqa: SLF001
        if kind == "InputLayer":
            sig: Any = "input"
        elif kind == "Conv2D":
            sig = ("conv", tuple(int(v) for v in layer.kernel.shape), signature(inputs[0]))
        elif kind == "Dense":
            sig = ("dense", tuple(int(v) for v in layer.kernel.shape), signature(inputs[0]))
        elif kind == "Add":
            sig = ("add", frozenset(signature(t) for t in inputs))
        elif kind in _PASS_THROUGH_KERAS:
            sig = signature(inputs[0])
        else:
            raise TfliteWeightsError(f"layer {layer.name} ({kind}) is not part of a conv/BN network")
        memo[key] = sig
        return sig

    convs = {}
    for layer in model.layers:
        if type(layer).__name__ in ("Conv2D", "Dense"):
            convs[signature(layer.output)] = layer
    return convs


def _batch_norm_after(model: Any, conv: Any) -> Any | None:
    """The BatchNormalization that reads ``conv``'s output, if any."""
    for layer in model.layers:
        if type(layer).__name__ != "BatchNormalization":
            continue
        if layer._inbound_nodes[0].input_tensors[0] is conv.output:  # noqa: SLF001
            return layer
    return None


def _identity_plus_bias(bn: Any, bias: np.ndarray, mean: np.ndarray, var: np.ndarray) -> None:
    """Set ``bn`` to compute ``z + bias`` at inference, holding ``mean`` / ``var`` as its statistics."""
    bn.set_weights([np.sqrt(var + bn.epsilon), mean + bias, mean, var])


def load_tflite_weights(model: Any, tflite_path: str | Path, calibration: np.ndarray) -> None:
    """Set ``model``'s weights (in place) from the float32 TFLite file at ``tflite_path``.

    Args:
        model: a Keras model of the same conv / BN / ReLU architecture.
        tflite_path: the float32 ``.tflite`` exported from such a model.
        calibration: N x H x W x C model inputs (already normalised) used to measure
            the BatchNormalization statistics.

    Raises:
        TfliteWeightsError: a convolution or dense layer of one has no counterpart in the other.
    """
    import keras

    path = Path(tflite_path)
    tflite = _tflite_signatures(path)
    layers = _keras_signatures(model)
    if set(tflite) != set(layers):
        raise TfliteWeightsError(
            f"{path.name} has {len(tflite)} weighted layers, the model {len(layers)}, "
            f"{len(set(tflite) ^ set(layers))} without a counterpart: not the same architecture"
        )
    norms = []
    for sig, layer in layers.items():
        kernel, bias = tflite[sig]
        bn = _batch_norm_after(model, layer)
        if bn is None:
            layer.set_weights([kernel, bias] if layer.use_bias else [kernel])
            continue
        if layer.use_bias:
            raise TfliteWeightsError(f"{layer.name}: a convolution with a bias before a BatchNormalization")
        layer.set_weights([kernel])
        norms.append((layer, bn, bias))
    # Every BN first becomes "z + bias" with neutral statistics, so that each convolution's input is
    # what the TFLite function gives it: statistics measured with the upstream BNs still fresh would
    # be those of another network, and a training step (batch statistics) would start from that
    # network's function instead of this one.
    for _, bn, bias in norms:
        _identity_plus_bias(bn, bias, np.zeros_like(bias), np.ones_like(bias))
    # then each BN is "z + bias" with its input's measured statistics
    probe = keras.Model(model.input, [layer.output for layer, _, _ in norms])
    outs = probe.predict(calibration, batch_size=32, verbose=0)
    for (_, bn, bias), z in zip(norms, outs, strict=True):
        _identity_plus_bias(bn, bias, z.mean(axis=(0, 1, 2)), z.var(axis=(0, 1, 2)))
    log.info("loaded %d weighted layers from %s", len(layers), path.name)

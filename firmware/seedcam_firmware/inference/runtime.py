"""The one place that creates TFLite interpreters, and a small model wrapper.

``load_interpreter`` prefers ``ai_edge_litert`` (the maintained LiteRT runtime)
and falls back to ``tflite_runtime``. :class:`Model` quantizes inputs and
dequantizes outputs with the tensors' own parameters, so adapters always see
float arrays keyed by output name.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelError
from .preprocess import PixelEncoding, pixel_encoding, quantize

__all__ = ["Model", "load_interpreter"]

log = logging.getLogger(__name__)

_TFLITE_MAGIC = b"TFL3"


def _interpreter_module() -> Any:
    try:
        from ai_edge_litert import interpreter as mod  # type: ignore[import-not-found]
    except ImportError:
        try:
            from tflite_runtime import interpreter as mod  # type: ignore[import-not-found]
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ModelError("no TFLite runtime: install ai-edge-litert (or tflite-runtime)") from exc
    return mod


def load_interpreter(model_path: str | Path, *, num_threads: int = 2, delegate: str | None = None) -> Any:
    """Create and allocate an interpreter for ``model_path``.

    Args:
        model_path: a ``.tflite`` file.
        num_threads: CPU threads for the kernels.
        delegate: path of an external delegate shared library (e.g. an NPU's), or None.

    Raises:
        ModelError: the file is missing, is not a TFLite flatbuffer, the delegate
            cannot be loaded, or the runtime rejects the model.
    """
    path = Path(model_path)
    if not path.is_file():
        raise ModelError(f"model file missing: {path}")
    with path.open("rb") as fh:
        head = fh.read(8)
    if len(head) < 8 or head[4:8] != _TFLITE_MAGIC:
        raise ModelError(f"not a TFLite file (no TFL3 identifier): {path}", reason="not_tflite")
    mod = _interpreter_module()
    delegates = []
    if delegate is not None:
        if "/" in delegate and not Path(delegate).is_file():
            raise ModelError(f"cannot load delegate {delegate!r}: no such file")
        try:
            delegates.append(mod.load_delegate(delegate))
        except (ValueError, OSError, RuntimeError) as exc:
            raise ModelError(f"cannot load delegate {delegate!r}: {exc}") from exc
    try:
        interp = mod.Interpreter(
            model_path=str(path), num_threads=num_threads, experimental_delegates=delegates or None
        )
        interp.allocate_tensors()
    except (ValueError, RuntimeError) as exc:
        raise ModelError(f"TFLite runtime rejected {path}: {exc}") from exc
    log.debug("loaded %s (threads=%d, delegate=%s)", path, num_threads, delegate)
    return interp


class Model:
    """A loaded model with float-in / float-out :meth:`invoke`.

    The tensors are found through the model's SignatureDef when it has one (our
    own exports). A model without a SignatureDef (many public ``.tflite`` files)
    is read through the interpreter's plain input/output tensors: the manifest's
    output names are matched to the tensor names, and when the names do not all
    match (tensors called ``StatefulPartitionedCall:1`` ...) they are taken in
    order, the manifest's first output being the interpreter's first. Shapes are
    checked either way, so a wrong order is caught whenever it changes a shape.

    Args:
        model_path: the ``.tflite`` file.
        input_shape: the shape the manifest promises (checked), or None.
        outputs: expected output name -> shape (checked, in this order), or None.
        num_threads, delegate: as for :func:`load_interpreter`.

    Raises:
        ModelError: see :func:`load_interpreter`; also when the model has several
            signatures or inputs, an input type other than float32/uint8/int8, or
            when the input shape or the output names/shapes do not match the manifest.
    """

    def __init__(
        self,
        model_path: str | Path,
        *,
        input_shape: tuple[int, ...] | None = None,
        outputs: Mapping[str, tuple[int, ...]] | None = None,
        num_threads: int = 2,
        delegate: str | None = None,
    ) -> None:
        self.path = Path(model_path)
        self.interpreter = load_interpreter(self.path, num_threads=num_threads, delegate=delegate)
        sigs = self.interpreter.get_signature_list()
        if len(sigs) > 1:
            raise ModelError(f"{self.path}: expected at most one signature, found {sorted(sigs)}")
        if sigs:
            self.signature: str | None = next(iter(sigs))
            runner = self.interpreter.get_signature_runner(self.signature)  # only for the tensors' names
            in_details = runner.get_input_details()
            out_details = runner.get_output_details()
            by_order = False
            del runner  # it keeps views into the interpreter, which would block invoke()
            self.interpreter.allocate_tensors()
        else:
            self.signature = None
            in_details = {d["name"]: d for d in self.interpreter.get_input_details()}
            out_details, by_order = _map_plain_outputs(self.path, self.interpreter.get_output_details(), outputs)
        if len(in_details) != 1:
            raise ModelError(f"{self.path}: expected one input tensor, found {len(in_details)}")
        self._input_name, self._input = next(iter(in_details.items()))
        if np.dtype(self._input["dtype"]) not in (np.float32, np.uint8, np.int8):
            raise ModelError(
                f"{self.path}: input tensor type {np.dtype(self._input['dtype']).name} is not float32, uint8 or int8"
            )
        got_shape = tuple(int(v) for v in self._input["shape"])
        if input_shape is not None and got_shape != tuple(input_shape):
            raise ModelError(
                f"{self.path}: input shape {got_shape} does not match the manifest's {tuple(input_shape)}",
                reason="input_shape",
            )
        if outputs is not None:
            _check_outputs(self.path, out_details, outputs, by_order=by_order)
            out_details = {name: out_details[name] for name in outputs}
        self._outputs: dict[str, dict[str, Any]] = dict(out_details)

    @property
    def output_names(self) -> tuple[str, ...]:
        """The output names, in the manifest's order when one was given."""
        return tuple(self._outputs)

    def takes_raw_pixels(self, mean: float, std: float) -> bool:
        """True when quantizing ``(pixels - mean) / std`` gives back the uint8 pixels themselves.

        Then a caller may feed the resized uint8 image directly and skip the
        float round trip (a full-INT8 model calibrated on 0..1 inputs).
        """
        return self.pixel_encoding(mean, std) == PixelEncoding("uint8", 0)

    def pixel_encoding(self, mean: float, std: float) -> PixelEncoding:
        """How uint8 pixels normalised by ``mean``/``std`` become this model's input (:func:`pixel_encoding`).

        A quantised input whose quantisation is a pure shift of the pixels takes
        the shifted pixels (no float arithmetic, the same integers); any other
        input takes the float ``(pixels - mean) / std``.
        """
        return pixel_encoding(mean, std, np.dtype(self._input["dtype"]), self._input["quantization"])

    @property
    def input_details(self) -> dict[str, Any]:
        """The input tensor's details (name, shape, dtype, quantization)."""
        return dict(self._input)

    @property
    def output_details(self) -> dict[str, dict[str, Any]]:
        """Output name -> tensor details."""
        return {k: dict(v) for k, v in self._outputs.items()}

    def quantize_input(self, x: np.ndarray) -> np.ndarray:
        """``x`` in the input tensor's dtype, quantized with its parameters (float models: unchanged)."""
        dtype = np.dtype(self._input["dtype"])
        if dtype == np.float32:
            return x.astype(np.float32, copy=False)
        scale, zero = self._input["quantization"]
        if x.dtype == dtype:
            return x  # already quantized by the caller
        if scale == 0:
            raise ModelError(f"{self.path}: quantized input without quantization parameters")
        return quantize(x, dtype, scale, zero)

    def invoke(self, x: np.ndarray, names: Collection[str] | None = None) -> dict[str, np.ndarray]:
        """Run once. ``x`` is the preprocessed float input (or already-quantized ints).

        ``names`` limits which outputs are copied out and dequantized (default: all).

        Returns:
            Output name -> float32 array (dequantized when the tensor is quantized).

        Raises:
            ModelError: the input has the wrong shape or the runtime fails.
        """
        shape = tuple(int(v) for v in self._input["shape"])
        if tuple(x.shape) != shape:
            raise ModelError(f"{self.path}: input of shape {tuple(x.shape)} given, model expects {shape}")
        interpreter = self.interpreter
        try:
            # Direct tensor access: the signature runner costs as much again as this small model's invoke.
            interpreter.set_tensor(self._input["index"], self.quantize_input(x))
            interpreter.invoke()
            raw = {
                name: interpreter.get_tensor(d["index"])
                for name, d in self._outputs.items()
                if names is None or name in names
            }
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"{self.path}: invoke failed: {exc}") from exc
        out: dict[str, np.ndarray] = {}
        for name, arr in raw.items():
            scale, zero = self._outputs[name]["quantization"]
            if np.issubdtype(arr.dtype, np.integer) and scale != 0:
                values = arr.astype(np.float32)  # a fresh array: dequantized in place
                values -= np.float32(zero)
                values *= np.float32(scale)
                out[name] = values
            else:
                out[name] = np.asarray(arr, dtype=np.float32)
        return out


def _shape(details: Mapping[str, Any]) -> tuple[int, ...]:
    return tuple(int(v) for v in details["shape"])


def _map_plain_outputs(
    path: Path, details: list[dict[str, Any]], expected: Mapping[str, tuple[int, ...]] | None
) -> tuple[dict[str, dict[str, Any]], bool]:
    """Name the outputs of a model without a SignatureDef (see :class:`Model`).

    Returns:
        Output name -> tensor details, and whether the names were assigned by position.

    Raises:
        ModelError: the model has a different number of outputs than the manifest lists.
    """
    by_tensor_name = {d["name"]: d for d in details}
    if expected is None:
        return by_tensor_name, False
    if len(details) != len(expected):
        raise ModelError(
            f"{path}: the model has {len(details)} output tensor(s) {sorted(by_tensor_name)}, "
            f"the manifest lists {len(expected)} {list(expected)}"
        )
    if all(name in by_tensor_name for name in expected):
        return {name: by_tensor_name[name] for name in expected}, False
    log.info("%s has no SignatureDef and its tensor names differ from the manifest's; outputs taken in order", path)
    return dict(zip(expected, details, strict=True)), True


def _check_outputs(
    path: Path, got: Mapping[str, Mapping[str, Any]], want: Mapping[str, tuple[int, ...]], *, by_order: bool
) -> None:
    """Compare the model's outputs with the manifest's, naming each difference.

    Raises:
        ModelError: a missing or extra output, or a shape that differs.
    """
    problems = [f"output {name!r} is missing from the model" for name in want if name not in got]
    problems += [f"the model has output {name!r}, which the manifest does not list" for name in got if name not in want]
    for name, shape in want.items():
        if name in got and _shape(got[name]) != tuple(shape):
            taken = f" (tensor {got[name]['name']!r}, taken by position)" if by_order else ""
            problems.append(f"output {name!r}{taken} has shape {_shape(got[name])}, the manifest says {tuple(shape)}")
    if problems:
        raise ModelError(f"{path}: outputs disagree with the manifest: " + "; ".join(problems))

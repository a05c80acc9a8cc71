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
        raise ModelError(f"not a TFLite file (no TFL3 identifier): {path}")
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

    Args:
        model_path: the ``.tflite`` file.
        input_shape: the shape the manifest promises (checked), or None.
        outputs: expected output name -> shape (checked), or None.
        num_threads, delegate: as for :func:`load_interpreter`.

    Raises:
        ModelError: see :func:`load_interpreter`; also when the input shape or the
            output names/shapes do not match the manifest.
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
        if len(sigs) != 1:
            raise ModelError(f"{self.path}: expected exactly one signature, found {sorted(sigs)}")
        self._sig_key = next(iter(sigs))
        runner = self.interpreter.get_signature_runner(self._sig_key)  # only for the tensors' names
        in_details = runner.get_input_details()
        if len(in_details) != 1:
            raise ModelError(f"{self.path}: expected one input tensor, found {len(in_details)}")
        self._input_name, self._input = next(iter(in_details.items()))
        self._outputs = runner.get_output_details()
        del runner  # it keeps views into the interpreter, which would block invoke()
        self.interpreter.allocate_tensors()
        got_shape = tuple(int(v) for v in self._input["shape"])
        if input_shape is not None and got_shape != tuple(input_shape):
            raise ModelError(f"{self.path}: input shape {got_shape} does not match the manifest's {tuple(input_shape)}")
        if outputs is not None:
            got = {k: tuple(int(v) for v in d["shape"]) for k, d in self._outputs.items()}
            want = {k: tuple(v) for k, v in outputs.items()}
            if got != want:
                raise ModelError(f"{self.path}: outputs {got} do not match the manifest's {want}")

    def takes_raw_pixels(self, mean: float, std: float) -> bool:
        """True when quantizing ``(pixels - mean) / std`` gives back the uint8 pixels themselves.

        Then a caller may feed the resized uint8 image directly and skip the
        float round trip (a full-INT8 model calibrated on 0..1 inputs).
        """
        if np.dtype(self._input["dtype"]) != np.uint8:
            return False
        scale, zero = self._input["quantization"]
        return bool(scale) and abs(std * scale - 1.0) < 1e-6 and abs(zero + mean / std / scale) < 1e-6

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
        info = np.iinfo(dtype)
        q = np.round(x.astype(np.float32) / np.float32(scale) + zero)
        return np.clip(q, info.min, info.max).astype(dtype)

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
                out[name] = ((arr.astype(np.float32) - np.float32(zero)) * np.float32(scale)).astype(np.float32)
            else:
                out[name] = np.asarray(arr, dtype=np.float32)
        return out

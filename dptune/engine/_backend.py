"""The array back-end of the optional device engine: which array library, on which device.

Why: the parts of a sweep that grow with the catalogue (BPR-MF training, scoring every user
against every item, top-N selection, the per-user metrics of a block of users) are plain
array arithmetic, so they are written once against the Python array API standard and run on
whatever namespace an :class:`Engine` carries: NumPy on the host (the default test run, no
extra package), PyTorch or CuPy on a CUDA device (through ``array-api-compat``).

The standard leaves out a few things the engine needs; each is one method here, written per
library: copying a host array to the device (:meth:`Engine.put`) and back
(:meth:`Engine.host`) and the n-th largest value of every row (:meth:`Engine.kth_largest`, a
partial selection). Everything else uses standard functions plus the integer-array indexing
that NumPy, CuPy and PyTorch share (``a[rows, cols] = v``). The work that is a long chain of
tiny steps (a BPR-MF epoch, the KNN score sums) is not array code but numba.cuda kernels that
read and write the engine's arrays in place (:mod:`dptune.engine._cuda`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dptune.errors import input_error
from dptune.vocab import DEVICES

__all__ = ["DEVICES", "Engine", "engine_for", "numpy_engine"]


@dataclass(frozen=True)
class Engine:
    """An array namespace ``xp`` on a ``device``; ``kind`` is ``numpy``, ``torch`` or ``cupy``."""

    xp: Any
    device: Any
    kind: str

    @property
    def name(self) -> str:
        """Human-readable ``library:device`` (e.g. ``torch:cuda``)."""
        return f"{self.kind}:{self.device}"

    def put(self, a: Any, dtype: Any = None) -> Any:
        """A fresh device array with the values of ``a`` (always a copy: callers mutate it)."""
        a = np.asarray(a)
        if self.kind == "numpy":
            return np.array(a, dtype=dtype, copy=True)
        if self.kind == "cupy":  # CuPy allocates on its current device
            return self.xp.asarray(np.ascontiguousarray(a), dtype=dtype)
        return self.xp.asarray(np.ascontiguousarray(a), dtype=dtype, device=self.device)

    def zeros(self, shape: tuple[int, ...], dtype: Any) -> Any:
        """A zero-filled array of ``shape`` created on the device (no host copy)."""
        if self.kind == "torch":
            return self.xp.zeros(shape, dtype=dtype, device=self.device)
        return self.xp.zeros(shape, dtype=dtype)

    def host(self, x: Any) -> np.ndarray:
        """``x`` as a NumPy array in host memory."""
        if self.kind == "torch":
            return x.detach().cpu().numpy()
        if self.kind == "cupy":
            return x.get()
        return np.asarray(x)

    def kth_largest(self, scores: Any, n: int) -> Any:
        """The ``n``-th largest value of every row, shape ``(rows, 1)`` (``1 <= n <= cols``).

        A partial selection (``O(cols)`` per row) where the library has one, else a sort.
        """
        cols = scores.shape[1]
        if self.kind == "torch":
            import torch

            return torch.topk(scores, n, dim=1, largest=True, sorted=False).values.amin(
                dim=1, keepdim=True)
        if self.kind in ("numpy", "cupy"):
            mod = np if self.kind == "numpy" else _cupy()
            return mod.partition(scores, cols - n, axis=1)[:, cols - n: cols - n + 1]
        return self.xp.sort(scores, axis=1)[:, cols - n: cols - n + 1]  # pragma: no cover


def _cupy() -> Any:
    import cupy

    return cupy


def numpy_engine() -> Engine:
    """The engine on the host with NumPy (what the default test run exercises).

    NumPy 2.1 and later implement the array API themselves; ``array-api-compat``'s wrapper is
    used where it is installed (it also covers older NumPy).
    """
    try:
        from array_api_compat import numpy as xp
    except ImportError:
        xp = np
    return Engine(xp=xp, device="cpu", kind="numpy")


def engine_for(device: str, source: object = "experiment",
               field: str | None = "sweep.device") -> Engine | None:
    """The engine for a ``[sweep] device`` value: ``None`` for ``cpu`` (the compiled host
    engine), a PyTorch engine (else CuPy) on the first CUDA device for ``cuda``.

    Every failure is one :func:`~dptune.errors.input_error` naming ``source`` and ``field``
    (the experiment file and ``sweep.device``, or ``--device`` alone; exit 2); callers check
    before any work: an unknown value, ``array-api-compat`` missing, neither PyTorch nor CuPy
    importable, no CUDA device visible to them, or numba.cuda unable to run the kernels on it
    (:func:`dptune.engine._cuda.device_problem`).
    """
    if device == "cpu":
        return None
    if device not in DEVICES:
        raise input_error(source, field, f"must be one of {', '.join(DEVICES)}, got {device!r}")
    hint = "install the engine with: pip install -e '.[gpu]'"
    try:
        import array_api_compat  # noqa: F401
    except ImportError:
        raise input_error(source, field, f"cuda needs the package array-api-compat; {hint}") from None
    found = []
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        if torch.cuda.is_available():
            from array_api_compat import torch as xp

            return _with_kernels(Engine(xp=xp, device=torch.device("cuda"), kind="torch"),
                                 source, field)
        found.append("PyTorch sees no CUDA device")
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        try:
            n = cupy.cuda.runtime.getDeviceCount()
        except Exception:  # noqa: BLE001 - a missing driver raises CUDARuntimeError
            n = 0
        if n > 0:
            from array_api_compat import cupy as xp

            return _with_kernels(Engine(xp=xp, device=cupy.cuda.Device(0), kind="cupy"),
                                 source, field)
        found.append("CuPy sees no CUDA device")
    why = "; ".join(found) if found else f"neither PyTorch nor CuPy is installed; {hint}"
    raise input_error(source, field, f"cuda is not available: {why}")


def _with_kernels(eng: Engine, source: object, field: str | None) -> Engine:
    """``eng``, once numba.cuda is known to run the engine's kernels on the device."""
    from dptune.engine._cuda import device_problem

    why = device_problem()
    if why is not None:
        raise input_error(source, field, f"cuda is not available: {why}")
    return eng

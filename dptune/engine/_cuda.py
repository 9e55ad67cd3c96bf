"""numba.cuda for the device engine's kernels: the simulator switch, kernel views of engine
arrays, and the one dispatch point through which every kernel is launched (and counted).

Why numba.cuda: the kernels (the BPR-MF epoch, the KNN score bands) are Python functions
compiled for the device, in the same language as the host kernels (:mod:`dptune.models`);
numba ships a CUDA *simulator* that runs the very same kernel source on the CPU, one Python
thread per device thread, so the default test run checks the kernels without a device
(``NUMBA_ENABLE_CUDASIM=1``, see :func:`use_simulator`). The kernels read and write the
engine's own arrays in place (PyTorch tensors and CuPy arrays expose
``__cuda_array_interface__``); no copy is made on a device.

numba reads the simulator switch when ``numba.cuda`` is first imported, so this module imports
it only on first use (:func:`cuda`), and nothing else in dptune imports ``numba.cuda``.

**Launch counting.** :func:`launch` is the only place where dptune starts a kernel; it adds one
to :data:`LAUNCHES` per launch, keyed by the kernel's name. A launch is one ``kernel[grid,
block](...)`` call, i.e. one kernel launch on the device; the array-library operations of the
engine (PyTorch / CuPy) are not kernels of ours and are not counted here (the BPR-MF epoch has
none; the tests check that independently).
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from typing import Any

__all__ = ["LAUNCHES", "compile_problem", "cuda", "device_name", "device_problem", "launch",
           "simulated", "use_simulator", "view"]

#: Kernel launches since the last ``LAUNCHES.clear()``, by kernel name.
LAUNCHES: Counter[str] = Counter()


def use_simulator() -> None:
    """Switch numba's CUDA target to its CPU simulator for this process.

    Must run before ``numba.cuda`` is first imported (numba picks the target then); an explicit
    ``NUMBA_ENABLE_CUDASIM=0`` in the environment is respected (a process that wants the real
    device). Raises ``RuntimeError`` when ``numba.cuda`` was already imported for a real device.
    """
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    if os.environ["NUMBA_ENABLE_CUDASIM"] == "0":
        return
    if "numba.cuda" in sys.modules:
        if not simulated():
            raise RuntimeError("numba.cuda was imported for a real device before the simulator "
                               "was switched on")
        return
    from numba.core import config

    config.reload_config()


def simulated() -> bool:
    """Whether numba's CUDA target is the CPU simulator (``NUMBA_ENABLE_CUDASIM=1``)."""
    from numba.core import config

    return bool(config.ENABLE_CUDASIM)


def cuda() -> Any:
    """The ``numba.cuda`` module (imported on first use; see :func:`use_simulator`)."""
    from numba import cuda as mod

    return mod


def device_problem() -> str | None:
    """Why the kernels cannot run on a real CUDA device here (``None``: they can): numba's
    simulator is on, numba sees no CUDA driver or device, numba finds no libNVVM (the CUDA
    compiler it needs, from a CUDA toolkit in the system's CUDA directory or ``CUDA_HOME``),
    or a one-line kernel does not compile and run (:func:`compile_problem`)."""
    if simulated():
        return "numba's CUDA simulator is on (NUMBA_ENABLE_CUDASIM=1), not a device"
    mod = cuda()
    if not mod.is_available():
        return "numba.cuda sees no CUDA driver or device"
    from numba.cuda.cudadrv import nvvm

    if not nvvm.is_available():
        return ("numba.cuda finds no libNVVM (install a CUDA toolkit, or set CUDA_HOME to one, "
                "e.g. the nvidia/cuda_nvcc directory of the nvidia-cuda-nvcc-cu12 wheel)")
    return compile_problem(mod)


def compile_problem(mod: Any) -> str | None:
    """Whether numba module ``mod`` compiles and runs a one-line kernel (``None``: it does),
    checked before any work because a broken tool chain otherwise fails only at the first
    kernel, deep in a sweep. Seen on a lent H100 machine: numba-cuda 0.30.4 beside NumPy 2.5
    fails while typing any kernel (``np.row_stack`` is gone from NumPy 2.5); NumPy 2.4 works."""
    import numpy as np

    try:
        @mod.jit
        def one(out):  # pragma: no cover - device code
            out[0] = 1

        out = np.zeros(1, dtype=np.int64)
        one[1, 1](out)
        if out[0] != 1:
            return "numba.cuda compiled a one-line kernel but it did not run"
    except Exception as err:  # noqa: BLE001 - any failure of the tool chain, said in one line
        first = str(err).strip().splitlines()[-1] if str(err).strip() else ""
        return (f"numba.cuda cannot compile a kernel here ({type(err).__name__}: {first}); "
                "numba-cuda and NumPy may not match (numba-cuda 0.30 needs NumPy < 2.5)")
    return None


def device_name() -> str:
    """The CUDA device the kernels run on, or a line saying that none is visible."""
    mod = cuda()
    if simulated():
        return "numba CUDA simulator (CPU; not a device)"
    if not mod.is_available():
        return "no CUDA device visible to numba"
    dev = mod.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    cc = ".".join(str(x) for x in dev.compute_capability)
    return f"{name} (compute capability {cc}, {dev.MULTIPROCESSOR_COUNT} SMs)"


def view(eng: Any, x: Any) -> Any:
    """``x`` (an array of engine ``eng``) as a kernel argument that shares its memory.

    CUDA tensors / CuPy arrays: a numba device-array view (``__cuda_array_interface__``);
    NumPy arrays and PyTorch CPU tensors: the host array itself (the simulator runs on it; on
    a real device numba copies it in and back around the launch, which only the tests do).
    """
    if eng.kind == "numpy":
        return x
    if eng.kind == "torch" and x.device.type == "cpu":
        return x.numpy()
    return cuda().as_cuda_array(x)


def launch(kernel: Any, grid: int | tuple[int, ...], block: int | tuple[int, ...],
           *args: Any) -> None:
    """Launch ``kernel`` once on ``grid`` x ``block`` threads and count it in :data:`LAUNCHES`."""
    LAUNCHES[getattr(kernel, "py_func", kernel).__name__] += 1
    kernel[grid, block](*args)

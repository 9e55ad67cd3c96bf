"""Timing helpers of the benchmark (CPU time of single-threaded work), the BLAS thread limit,
the grid values of Table 2 and the machine description."""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from dptune.bench._plans import REPO


def log(msg: str) -> None:
    """Print a timestamped progress line on stderr."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


#: The clock of every single-threaded measurement: CPU time of this process, which other
#: processes competing for the cores do not inflate (unlike wall time); with one thread it is
#: the wall time the same work takes on an idle core.
clock = time.process_time


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(CPU seconds of this process, result) of ``fn()``."""
    t0 = clock()
    out = fn()
    return clock() - t0, out


def wall_timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(wall seconds, result) of ``fn()``: for parallel work and the synthetic store build."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def best_of(fn: Callable[[], Any], repeats: int) -> float:
    """Smallest CPU time of ``repeats`` calls."""
    return min(timed(fn)[0] for _ in range(max(1, repeats)))


def reset_peak_memory() -> bool:
    """Reset this process's peak resident memory (``VmHWM``) to the current one (Linux: write 5
    to ``/proc/self/clear_refs``); False where the system does not allow it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_memory_gib() -> float:
    """Peak resident memory of this process (``VmHWM``) in GiB since the last reset; NaN where
    ``/proc`` is unavailable."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return float("nan")


def single_thread() -> Any:
    """Context manager limiting BLAS/OpenMP pools to one thread (a sweep worker's setting)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def grid_values() -> dict[str, list]:
    """Factors, iterations, learning rates and k of the paper's grids (``grids/*.toml``)."""
    from dptune.grids import load_grid

    bpr = load_grid(REPO / "grids" / "bpr-mf.toml")
    knn = load_grid(REPO / "grids" / "knn.toml")
    return {
        "factors": [int(v) for v in bpr.values["factors"]],
        "iterations": [int(v) for v in bpr.values["iterations"]],
        "learning_rate": [float(v) for v in bpr.values["learning_rate"]],
        "k": [int(v) for v in knn.values["k"]],
    }


def machine_info() -> dict[str, str]:
    """CPU model, cores, memory, load, library versions and the date of the run."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 2**20:.1f} GiB"
                break
    except OSError:
        pass
    info = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "memory": mem,
        "load average (1/5/15 min) at start": " / ".join(f"{x:.2f}" for x in os.getloadavg()),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    for pkg in ("numpy", "scipy", "numba", "pyarrow", "pandas", "joblib", "threadpoolctl"):
        try:
            info[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            info[pkg] = "not installed"
    try:
        from threadpoolctl import threadpool_info

        blas = [f"{p.get('internal_api')} {p.get('version')} ({p.get('num_threads')} threads)"
                for p in threadpool_info()]
        info["BLAS/OpenMP pools"] = "; ".join(blas) or "none"
    except Exception:  # noqa: BLE001 - informative only
        pass
    return info

"""The block of the one-launch BPR-MF kernel: how many threads and workers one CUDA block may
hold. The kernel sizes its shared buffers from these at compile time
(:mod:`dptune.engine._bpr_kernel`); the layout of a launch is checked against them
(:class:`dptune.engine._bpr.Layout`), without importing the kernel (and numba's CUDA target)."""

from __future__ import annotations

__all__ = ["MAX_BLOCK", "MAX_PER_BLOCK"]

#: Threads of one block at most (the kernel's shared reduction buffer holds two blocks' worth).
MAX_BLOCK = 512
#: Workers of one block at most (the kernel's shared bias buffer holds two blocks' worth).
MAX_PER_BLOCK = 32

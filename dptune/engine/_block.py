"""The block of the one-launch BPR-MF kernel: how many threads and workers one CUDA block may
hold, and how many factors one thread may own. The kernel sizes its shared buffers and its
local arrays from these at compile time
(:mod:`dptune.engine._bpr_kernel`); the layout of a launch is checked against them
(:class:`dptune.engine._bpr.Layout`), without importing the kernel (and numba's CUDA target)."""

from __future__ import annotations

__all__ = ["MAX_BLOCK", "MAX_PER_BLOCK", "MAX_FACTORS_PER_LANE"]

#: Threads of one block at most (the kernel's shared reduction buffer holds two blocks' worth).
MAX_BLOCK = 512
#: Workers of one block at most (the kernel's shared bias buffer holds two blocks' worth).
MAX_PER_BLOCK = 32
#: Factors one lane owns at most (the kernel keeps a step's values of them in a thread's local
#: arrays of this compile-time size): 64 x 32 lanes = 2,048 factors with the default layout,
#: above the 1,809 of the paper's largest BPR-MF.
MAX_FACTORS_PER_LANE = 64

"""A training process (a site rank, a simulator, a cartel site) keeps the memory it frees
for its next clock instead of handing it back to the OS.

glibc's malloc returns freed memory to the kernel past two thresholds: a chunk above the
mmap threshold gets a mapping of its own, unmapped on free; free space above the trim
threshold at the top of the heap is released. Both move as a process frees its first
large chunks (the trim threshold follows at twice the mmap one), so where they settle
depends on the order of those first allocations. A site rank whose thresholds settled
low released its activations every clock and faulted them back in on the next: 1,800 to
7,500 page faults a clock on the Fashion-MNIST CNN at batch 64, its forward and backward
passes up to 50% slower than a plain loop's whole step, and different from run to run.
Fixed thresholds make every run the fast one, at the cost of holding up to
`TRIM_THRESHOLD` of freed memory.
"""

import ctypes
import ctypes.util
import sys

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameter numbers (malloc.h)
MMAP_THRESHOLD = 32 << 20  # glibc's largest on 64-bit: larger tensors still get mappings
TRIM_THRESHOLD = 256 << 20


def keep_freed_memory() -> bool:
    """Set this process's malloc thresholds; False where the C library is not glibc."""
    if not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c") or "libc.so.6"
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # musl and others have no mallopt
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    # mallopt returns 1 on success; setting either turns off glibc's moving thresholds.
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )

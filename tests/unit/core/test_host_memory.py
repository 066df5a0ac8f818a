"""A rank's malloc keeps freed memory: clocks that free and allocate the same sizes stop
faulting pages in (each case in a fresh process: malloc's state is process-wide)."""

import subprocess
import sys

import pytest

# One 1 MiB chunk freed first: glibc's moving thresholds settle at 1 MiB (mmap) and 2 MiB
# (trim). Then 40 "clocks" of 20 x 512 KiB allocated and freed: 10 MiB freed at the top
# of the heap each time, past the trim threshold unless it is fixed higher.
_CLOCKS = """
import ctypes, resource, sys
from atoll.platform.core.host_memory import keep_freed_memory
fixed = sys.argv[1] == "fixed" and keep_freed_memory()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
libc.free(libc.malloc(1 << 20))
def clock():
    chunks = [libc.malloc(512 << 10) for _ in range(20)]
    for c in chunks:
        libc.memset(c, 1, 512 << 10)
    for c in reversed(chunks):
        libc.free(c)
clock()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(40):
    clock()
print(fixed, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> tuple[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", _CLOCKS, mode], capture_output=True, text=True, check=True
    ).stdout.split()
    return out[0], int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_memory_is_kept_for_the_next_clock() -> None:
    fixed, kept = _faults("fixed")
    assert fixed == "True"
    assert kept < 100  # 40 clocks of 10 MiB: no page comes back from the kernel


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_without_it_the_same_clocks_fault_their_memory_back_in() -> None:
    # What the rank avoids: 2,560 pages of 4 KiB per clock, every clock.
    _, released = _faults("default")
    assert released > 40 * 1000

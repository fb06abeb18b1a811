"""Reed-Solomon parity straight from ISA-L, the library under pyeclib's `isa_l_rs_vand` backend,
called through ctypes: the same Vandermonde matrix (`gf_gen_rs_matrix`), tables (`ec_init_tables`)
and coding (`ec_encode_data`) as liberasurecode's backend, so the parity is byte for byte the one
pyeclib returns (checked when a code is made; `parity_for` returns None otherwise).

Why not pyeclib's `encode`: it holds the GIL for the whole call and copies every data fragment into
a buffer with a header first, which made coding a 4 MiB stripe 3.9 ms of a gateway's GIL time. A
ctypes call releases the GIL, and only the m parity chunks are written.
"""

from __future__ import annotations

import ctypes
import glob
import os
from collections.abc import Callable

import pyeclib

Parity = Callable[[bytes, int], list[bytes]]   # (k chunks laid end to end, chunk bytes) -> m parity chunks


def _library() -> ctypes.CDLL | None:
    """The ISA-L pyeclib's wheel carries (auditwheel puts it beside the package)."""
    libs = os.path.join(os.path.dirname(os.path.dirname(pyeclib.__file__)), "pyeclib.libs")
    for path in sorted(glob.glob(os.path.join(libs, "libisal*.so*"))):
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


_LIB = _library()


def _coder(k: int, m: int) -> Parity | None:
    lib = _LIB
    if lib is None:
        return None
    matrix = (ctypes.c_ubyte * ((k + m) * k))()
    lib.gf_gen_rs_matrix(matrix, k + m, k)
    tables = (ctypes.c_ubyte * (32 * k * m))()
    lib.ec_init_tables(k, m, ctypes.byref(matrix, k * k), tables)

    def parity(joined: bytes, n: int) -> list[bytes]:
        base = ctypes.cast(ctypes.c_char_p(joined), ctypes.c_void_p).value or 0
        data = (ctypes.c_void_p * k)(*[base + j * n for j in range(k)])
        out = [ctypes.create_string_buffer(n) for _ in range(m)]
        coding = (ctypes.c_void_p * m)(*[ctypes.addressof(b) for b in out])
        lib.ec_encode_data(n, k, m, tables, data, coding)   # (ctypes lets go of the GIL here)
        return [b.raw for b in out]

    return parity


def parity_for(k: int, m: int, reference: Callable[[bytes], list[bytes]]) -> Parity | None:
    """ISA-L's parity for a k+m code, if it matches `reference` (pyeclib's encode: k+m chunks)."""
    parity = _coder(k, m)
    if parity is None:
        return None
    n = 4096
    sample = bytes((i * 131 + i // 7) % 251 for i in range(k * n))
    return parity if parity(sample, n) == reference(sample)[k:] else None

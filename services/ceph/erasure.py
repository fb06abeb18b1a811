"""Real erasure coding of object data into k data + m coding chunks (pyeclib over ISA-L).

Layout is Ceph's: the object is cut into stripes of `k × stripe_unit` bytes (the last one padded
with zeros); stripe unit j of every stripe goes to data chunk j, so chunk j is the concatenation
of its stripe units and every chunk of an object has the same length,
`ceil(size / stripe_width) × stripe_unit`. Ceph's default `osd_pool_erasure_code_stripe_unit` is
4 KiB; either way a 4 MiB RGW tail object becomes 8 × 512 KiB data + 3 × 512 KiB coding chunks.

Reed–Solomon works byte-column by byte-column, so coding the concatenated chunks in one pyeclib
call gives exactly the per-stripe parity Ceph computes stripe by stripe, at one call's cost.

Chunks are raw bytes, as an OSD stores them: pyeclib's 80-byte fragment header is stripped on
encode and rebuilt for decode (its fields are index, payload size, original size, backend, and a
CRC-32 over them; no data checksum is used). Reading needs no decoding while all k data chunks
are there; otherwise any k of the k+m chunks rebuild the object.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Mapping

from pyeclib.ec_iface import ECDriver, ECDriverError

from services.ceph.errors import CephError, InsufficientChunks
from services.ceph.isal import parity_for

PREFERRED_BACKENDS = ("isa_l_rs_vand", "liberasurecode_rs_vand")
DEFAULT_STRIPE_UNIT = 4096  # Ceph's osd_pool_erasure_code_stripe_unit
_HEADER = 80  # sizeof(fragment_header_t) in liberasurecode
_META = 59  # sizeof(fragment_metadata_t): the part the header CRC covers
_META_CRC_AT = 67  # after the metadata, magic (4) and libec version (4)


def _driver(k: int, m: int, backends: Iterable[str]) -> tuple[ECDriver, str]:
    errors = []
    for name in backends:
        try:
            driver = ECDriver(k=k, m=m, ec_type=name)
            driver.encode(bytes(k * 16))  # a backend can load yet fail on first use
            return driver, name
        except (ECDriverError, ValueError) as e:
            errors.append(f"{name}: {e}")
    raise CephError("FAILED_PRECONDITION", "no erasure-code backend available: " + "; ".join(errors))


class ErasureCode:
    """A k+m Reed–Solomon code (Ceph's `jerasure`/`isa` plugins, `technique=reed_sol_van`)."""

    def __init__(
        self, k: int = 8, m: int = 3, stripe_unit: int = DEFAULT_STRIPE_UNIT,
        backends: Iterable[str] = PREFERRED_BACKENDS,
    ) -> None:
        if k < 1 or m < 1:
            raise CephError("INVALID_ARGUMENT", f"erasure code needs k ≥ 1 and m ≥ 1, got k={k} m={m}")
        if stripe_unit < 16 or stripe_unit % 16:
            raise CephError("INVALID_ARGUMENT", f"stripe_unit must be a positive multiple of 16, got {stripe_unit}")
        self.k, self.m, self.stripe_unit = k, m, stripe_unit
        self._driver, self.backend = _driver(k, m, backends)
        # Header templates by chunk index, patched per chunk length on decode.
        self._templates = [f[:_HEADER] for f in self._driver.encode(bytes(k * 16))]
        # Parity from ISA-L itself where it is pyeclib's (isal.py): the GIL let go while it codes.
        self._parity = parity_for(k, m, lambda b: [f[_HEADER:] for f in self._driver.encode(b)]) \
            if self.backend == "isa_l_rs_vand" else None

    # -- sizes -------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        return self.k + self.m

    @property
    def stripe_width(self) -> int:
        return self.k * self.stripe_unit

    @property
    def overhead(self) -> float:
        """Raw bytes per stored byte for stripe-aligned objects: (k+m)/k = 1.375 for 8+3."""
        return (self.k + self.m) / self.k

    def chunk_size(self, size: int) -> int:
        """Bytes of every chunk of an object of `size` bytes (whole stripes, as Ceph pads)."""
        return -(-size // self.stripe_width) * self.stripe_unit

    def raw_size(self, size: int) -> int:
        return self.chunk_size(size) * self.size

    def describe(self) -> str:
        return (f"k={self.k} m={self.m} stripe_unit={self.stripe_unit} plugin=pyeclib "
                f"technique={self.backend}")

    # -- coding ------------------------------------------------------------------------------

    def encode(self, data: bytes | memoryview, views: bool = False) -> list[bytes]:
        """The k data chunks then the m coding chunks of `data` (any bytes-like object). `views`: the
        data chunks as views of one buffer, not copies (for a sender, which only reads them)."""
        size = len(data)
        n = self.chunk_size(size)
        if n == 0:
            return [b""] * self.size
        su, sw, k = self.stripe_unit, self.stripe_width, self.k
        view = memoryview(data).cast("B")
        if size < n * k:  # the last stripe is padded with zeros, as Ceph does
            view = memoryview(b"".join((view, bytes(n * k - size))))
        stripes = n // su
        # One pass lays the data chunks end to end (chunk j = stripe unit j of every stripe), which is
        # the buffer pyeclib codes: k equal fragments, cut where the chunks meet.
        if stripes == 1:
            joined = data if type(data) is bytes and size == n * k else view.tobytes()
        else:
            joined = b"".join([view[s * sw + j * su: s * sw + (j + 1) * su] for j in range(k) for s in range(stripes)])
        if self._parity is not None:
            coding = self._parity(joined, n)
        else:
            coding = [f[_HEADER:] for f in self._driver.encode(joined)[k:]]
        if any(len(c) != n for c in coding):  # pragma: no cover - a backend with other alignment
            raise CephError("FAILED_PRECONDITION", f"{self.backend} padded chunks of {n} bytes")
        whole = memoryview(joined) if views else joined
        return [whole[j * n: (j + 1) * n] for j in range(k)] + coding  # type: ignore[misc]

    def decode(self, chunks: Mapping[int, bytes], size: int) -> bytes:
        """The object of `size` bytes from any k of its chunks (index → bytes)."""
        data = self._data_chunks(chunks, size)
        return self._interleave(data, size)

    def decode_pieces(self, chunks: Mapping[int, bytes], size: int) -> list[memoryview]:
        """`decode` without joining: the object as views of the chunks' stripe units, in order (for a
        sender that gathers them in one writev, where the join would be one more copy of the object)."""
        return self._pieces(self._data_chunks(chunks, size), size)

    def rebuild(self, chunks: Mapping[int, bytes], size: int, want: Iterable[int]) -> dict[int, bytes]:
        """Chunks `want` (lost or corrupt) recomputed from any k good ones: what recovery writes."""
        wanted = sorted(set(want))
        for i in wanted:
            self._check_index(i)
        have = {i: c for i, c in chunks.items() if i not in wanted}
        if all(i in have for i in wanted):
            return {i: have[i] for i in wanted}
        full = self.encode(self._interleave(self._data_chunks(have, size), size))
        return {i: full[i] for i in wanted}

    # -- internals ---------------------------------------------------------------------------

    def _check_index(self, i: int) -> None:
        if not 0 <= i < self.size:
            raise CephError("INVALID_ARGUMENT", f"chunk index {i} out of range 0..{self.size - 1}")

    def _data_chunks(self, chunks: Mapping[int, bytes], size: int) -> list[bytes]:
        n = self.chunk_size(size)
        for i, c in chunks.items():
            self._check_index(i)
            if len(c) != n:
                raise CephError("INVALID_ARGUMENT",
                                f"chunk {i} has {len(c)} bytes; an object of {size} bytes has {n}-byte chunks")
        if len(chunks) < self.k:
            raise InsufficientChunks(len(chunks), self.k, self.size, f"object of {size} bytes")
        if all(j in chunks for j in range(self.k)):
            return [chunks[j] for j in range(self.k)]
        if n == 0:
            return [b""] * self.k
        fragments = [self._header(i, n) + bytes(c) for i, c in sorted(chunks.items())]
        try:
            joined = self._driver.decode(fragments[: self.k])
        except ECDriverError as e:  # pragma: no cover - counts and sizes are checked above
            raise CephError("DATA_LOSS", f"decoding failed: {e}") from e
        return [joined[j * n : (j + 1) * n] for j in range(self.k)]

    def _interleave(self, data: list[bytes], size: int) -> bytes:
        return b"".join(self._pieces(data, size))   # (a list joins faster)

    def _pieces(self, data: list[bytes], size: int) -> list[memoryview]:
        """The object's bytes in order: stripe unit s of every data chunk, then s + 1, up to `size`."""
        n = len(data[0]) if data else 0
        if n == 0 or size == 0:
            return []
        su = min(n, self.stripe_unit)   # (chunks are whole stripe units)
        views = [memoryview(c) for c in data]
        pieces = [v[s: s + su] for s in range(0, n, su) for v in views]
        keep = -(-size // su)
        del pieces[keep:]
        pieces[-1] = pieces[-1][: size - (keep - 1) * su]
        return pieces

    def _header(self, index: int, n: int) -> bytes:
        h = bytearray(self._templates[index])
        struct.pack_into("<I", h, 4, n)  # payload size
        struct.pack_into("<Q", h, 12, n * self.k)  # original data size
        struct.pack_into("<I", h, _META_CRC_AT, zlib.crc32(bytes(h[:_META])))
        return bytes(h)

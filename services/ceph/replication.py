"""Size-n replication behind the erasure-code interface, so pools treat both alike.

A replicated pool's "chunks" are n whole copies: k = 1 (any one copy reads the object) and
m = n − 1. Raw overhead is n (3× for the index, metadata and RBD pools).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from services.ceph.errors import CephError, InsufficientChunks


class Replication:
    def __init__(self, size: int = 3) -> None:
        if size < 1:
            raise CephError("INVALID_ARGUMENT", f"replica count must be ≥ 1, got {size}")
        self.k, self.m = 1, size - 1
        self.backend = "replicated"

    @property
    def size(self) -> int:
        return self.k + self.m

    @property
    def overhead(self) -> float:
        return float(self.size)

    def chunk_size(self, size: int) -> int:
        return size

    def raw_size(self, size: int) -> int:
        return size * self.size

    def describe(self) -> str:
        return f"replicated size={self.size}"

    def encode(self, data: bytes, views: bool = False) -> list[bytes]:
        """Every replica: the object's bytes (one copy, or none with `views`: the sender only reads)."""
        return [data if views else bytes(data)] * self.size

    def decode(self, chunks: Mapping[int, bytes], size: int) -> bytes:
        for i in sorted(chunks):
            if len(chunks[i]) == size:
                return bytes(chunks[i])
        raise InsufficientChunks(0, 1, self.size, f"object of {size} bytes")

    def rebuild(self, chunks: Mapping[int, bytes], size: int, want: Iterable[int]) -> dict[int, bytes]:
        wanted = [i for i in want]
        data = self.decode({i: c for i, c in chunks.items() if i not in wanted}, size)
        return {i: data for i in wanted}

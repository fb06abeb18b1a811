"""Where chunk bytes live: per OSD, keyed by (PG, object, shard), as BlueStore keys them.

The models talk to this protocol; an OSD daemon will implement it over its own data directory
(one file per chunk, or SQLite) and the unit tests use `MemoryChunkStore`. Nothing here checks
checksums: that is scrub's job (pg.py), so a corrupt chunk stays silent until it is read or scrubbed.
"""

from __future__ import annotations

from typing import Protocol

ChunkKey = tuple[str, str, int]  # (pg id, object name, shard index)


class ChunkStore(Protocol):
    def put(self, osd: int, key: ChunkKey, data: bytes) -> None: ...
    def get(self, osd: int, key: ChunkKey) -> bytes | None: ...
    def delete(self, osd: int, key: ChunkKey) -> None: ...
    def used_bytes(self, osd: int) -> int: ...


class MemoryChunkStore:
    def __init__(self) -> None:
        self._osds: dict[int, dict[ChunkKey, bytes]] = {}

    def put(self, osd: int, key: ChunkKey, data: bytes) -> None:
        self._osds.setdefault(osd, {})[key] = bytes(data)

    def get(self, osd: int, key: ChunkKey) -> bytes | None:
        return self._osds.get(osd, {}).get(key)

    def delete(self, osd: int, key: ChunkKey) -> None:
        self._osds.get(osd, {}).pop(key, None)

    def used_bytes(self, osd: int) -> int:
        return sum(len(d) for d in self._osds.get(osd, {}).values())

    def keys(self, osd: int) -> list[ChunkKey]:
        return sorted(self._osds.get(osd, {}))

    def corrupt(self, osd: int, key: ChunkKey, offset: int = 0) -> None:
        """Flip one byte of a stored chunk: the bit rot a deep scrub must find."""
        data = bytearray(self._osds[osd][key])
        data[offset % len(data)] ^= 0xFF
        self._osds[osd][key] = bytes(data)

    def wipe(self, osd: int) -> None:
        """Lose an OSD's disk (a replaced drive)."""
        self._osds.pop(osd, None)

"""An OSD's chunks on disk as a log, as BlueStore keeps objects on a raw device with their metadata
in a key-value store: records appended to segment files, an index in memory.

    current/seg.<n>      records, appended: a put (the chunk's key and bytes) or a removal (its key)

A record is one `write()` (header, key, data), so a kill -9 leaves either all of it or, at the tail of
the last segment, part of it, which the start-up scan cuts off; the scan replays every segment in
order to rebuild the index (key -> segment, offset, length). A file per chunk cost a file creation
per chunk write, which the kernel charged 50-250 us of system time each on this machine, more than
everything else an OSD does for a 4 KiB object's shard; an append costs about 1 us.

The header carries a CRC-32C over itself and the key, not over the data: the data's integrity is
Ceph's chunk CRCs, checked by reads and deep scrub, and `corrupt` flips a byte of the data in place,
as bit rot would, which must survive a restart.

Segments roll over at `SEGMENT_BYTES`. Space is reclaimed by compaction: while the dead bytes (removed
or overwritten chunks, removal records) outweigh the live ones, the oldest segment's live chunks are
appended to the newest and the oldest is deleted. Only the oldest is compacted, so a removal record
dropped with it can never uncover an older put. Chunks are not fsynced: a killed process loses
nothing the kernel has (the twin emulates process crashes, not power loss).
"""

from __future__ import annotations

import logging
import os
import struct
import threading
from dataclasses import dataclass
from pathlib import Path

import crc32c

from services.ceph.chunkstore import ChunkKey
from services.ceph.errors import CephError
from services.ceph.extent import FileExtent

log = logging.getLogger("ceph_osd")

MAGIC = b"CTC1"
PUT, REMOVE = 1, 2
# magic, CRC-32C of the rest of the header and the key, kind, shard, PG length, name length, data length
HEADER = struct.Struct("<4sIBiHII")
SEGMENT_BYTES = 64 << 20


@dataclass
class Extent:
    seg: int
    offset: int      # of the data in the segment
    length: int
    record: int      # the whole record's bytes (what it frees when it dies)


def _key_bytes(key: ChunkKey) -> tuple[bytes, bytes]:
    return key[0].encode(), key[1].encode("utf-8", "surrogatepass")


def _record(kind: int, key: ChunkKey, data: bytes | memoryview = b"") -> list[bytes | memoryview]:
    """The record's parts, written with one `pwritev` (the chunk is not copied into a joined record)."""
    pg, name = _key_bytes(key)
    fields = HEADER.pack(MAGIC, 0, kind, key[2], len(pg), len(name), len(data))
    crc = crc32c.crc32c(fields[8:] + pg + name)
    return [b"".join((HEADER.pack(MAGIC, crc, kind, key[2], len(pg), len(name), len(data)), pg, name)), data]


class LogChunkStore:
    """One OSD's chunks (the OSD id is implied). Thread-safe: small chunks are written on the event
    loop, big ones from threads."""

    def __init__(self, data_dir: Path, segment_bytes: int = SEGMENT_BYTES) -> None:
        self.root = Path(data_dir)
        self.current = self.root / "current"
        self.current.mkdir(parents=True, exist_ok=True)
        self.segment_bytes = segment_bytes
        self._index: dict[ChunkKey, Extent] = {}
        self._fds: dict[int, int] = {}
        self._ends: dict[int, int] = {}       # each segment's length
        self._live: dict[int, int] = {}       # each segment's bytes of live records
        self._used = 0                        # live chunk bytes
        self._lock = threading.Lock()
        for n in sorted(int(p.name.split(".", 1)[1]) for p in self.current.glob("seg.*")):
            self._replay(n)
        self._active = max(self._fds, default=-1)
        if self._active < 0:
            self._open(0)

    # -- segments ------------------------------------------------------------------------------

    def _path(self, seg: int) -> str:
        return f"{self.current}/seg.{seg:08d}"

    def _open(self, seg: int) -> None:
        self._fds[seg] = os.open(self._path(seg), os.O_RDWR | os.O_CREAT, 0o644)
        self._ends.setdefault(seg, 0)
        self._live.setdefault(seg, 0)
        self._active = seg

    def _replay(self, seg: int) -> None:
        """Rebuild the index from one segment; a torn record at its end is cut off."""
        self._open(seg)
        with open(self._path(seg), "rb") as fh:
            buf = fh.read()
        pos = 0
        while pos + HEADER.size <= len(buf):
            magic, crc, kind, shard, lpg, lname, ldata = HEADER.unpack_from(buf, pos)
            keyend = pos + HEADER.size + lpg + lname
            if (magic != MAGIC or keyend + ldata > len(buf)
                    or crc32c.crc32c(buf[pos + 8: keyend]) != crc or kind not in (PUT, REMOVE)):
                break
            key = (buf[pos + HEADER.size: pos + HEADER.size + lpg].decode(),
                   buf[pos + HEADER.size + lpg: keyend].decode("utf-8", "surrogatepass"), shard)
            end = keyend + ldata
            self._ends[seg] = pos
            self._apply(key, Extent(seg, keyend, ldata, end - pos) if kind == PUT else None, end - pos)
            pos = end
        if pos < len(buf):
            log.warning("%s: %d bytes after offset %d are not a whole record (a write cut short): removed",
                        self._path(seg), len(buf) - pos, pos)
            os.truncate(self._path(seg), pos)
        self._ends[seg] = pos

    def _apply(self, key: ChunkKey, ext: Extent | None, nbytes: int) -> bool:
        """Index a record of `nbytes` (a put's extent, or None for a removal); True if the key was there."""
        old = self._index.pop(key, None)
        if old is not None:
            self._live[old.seg] -= old.record
            self._used -= old.length
        if ext is not None:
            self._index[key] = ext
            self._live[ext.seg] += ext.record
            self._used += ext.length
        return old is not None

    def _append(self, rec: list[bytes | memoryview]) -> tuple[int, int]:
        """Append a record to the active segment (rolling over first if it is full): (segment, offset)."""
        seg, size = self._active, sum(len(p) for p in rec)
        if self._ends[seg] and self._ends[seg] + size > self.segment_bytes:
            self._open(seg + 1)
            seg = self._active
        at = self._ends[seg]
        views, off = [memoryview(p) for p in rec if len(p)], at
        while views:
            n = os.pwritev(self._fds[seg], views, off)
            off += n
            while views and n >= len(views[0]):
                n -= len(views.pop(0))
            if n:
                views[0] = views[0][n:]
        self._ends[seg] = off
        return seg, at

    def _compact(self) -> None:
        """While dead bytes outweigh live ones, move the oldest segment's live chunks to the newest."""
        while len(self._fds) > 1:
            total = sum(self._ends.values())
            live = sum(self._live.values())
            if total - live <= live + self.segment_bytes:
                return
            oldest = min(self._fds)
            for key, ext in [(k, e) for k, e in self._index.items() if e.seg == oldest]:
                self._write(key, os.pread(self._fds[oldest], ext.length, ext.offset))
            os.close(self._fds.pop(oldest))
            os.unlink(self._path(oldest))
            del self._ends[oldest], self._live[oldest]

    def _write(self, key: ChunkKey, data: bytes | memoryview) -> None:
        rec = _record(PUT, key, data)
        seg, at = self._append(rec)
        size = len(rec[0]) + len(data)
        self._apply(key, Extent(seg, at + len(rec[0]), len(data), size), size)

    # -- the chunk store -------------------------------------------------------------------------

    def put(self, key: ChunkKey, data: bytes) -> None:
        if not key[0] or "/" in key[0] or key[0].startswith("."):
            raise CephError("INVALID_ARGUMENT", f"bad PG id {key[0]!r}")
        if key[2] < 0:
            raise CephError("INVALID_ARGUMENT", f"bad shard {key[2]}")
        with self._lock:
            active = self._active
            self._write(key, data)
            if self._active != active:
                self._compact()

    def size(self, key: ChunkKey) -> int:
        """The chunk's bytes, 0 if there is none."""
        ext = self._index.get(key)
        return ext.length if ext is not None else 0

    def get(self, key: ChunkKey) -> bytes | None:
        with self._lock:
            ext = self._index.get(key)
            if ext is None:
                return None
            return os.pread(self._fds[ext.seg], ext.length, ext.offset)

    def extent(self, key: ChunkKey) -> FileExtent | None:
        """Where the chunk lies, to be sent from the file (sendfile); None if there is none."""
        with self._lock:
            ext = self._index.get(key)
            if ext is None:
                return None
            return FileExtent(os.dup(self._fds[ext.seg]), ext.offset, ext.length)

    def delete(self, key: ChunkKey) -> bool:
        with self._lock:
            if key not in self._index:
                return False
            rec = _record(REMOVE, key)
            self._append(rec)
            return self._apply(key, None, len(rec[0]))

    def corrupt(self, key: ChunkKey, offset: int) -> int:
        """Flip one byte of the chunk where it lies (bit rot: its record is otherwise intact)."""
        with self._lock:
            ext = self._index.get(key)
            if ext is None:
                raise CephError("NOT_FOUND", f"no chunk {key[0]}/{key[1]!r} shard {key[2]} on this OSD")
            if not ext.length:
                raise CephError("FAILED_PRECONDITION", "the chunk is empty: there is no byte to flip")
            at = ext.offset + offset % ext.length
            byte = os.pread(self._fds[ext.seg], 1, at)
            os.pwrite(self._fds[ext.seg], bytes([byte[0] ^ 0xFF]), at)
            return ext.length

    def keys(self, pg: str = "") -> list[tuple[ChunkKey, int]]:
        with self._lock:
            return sorted((k, e.length) for k, e in self._index.items() if not pg or k[0] == pg)

    def used_bytes(self) -> int:
        return self._used

    def __len__(self) -> int:
        return len(self._index)

    def close(self) -> None:
        with self._lock:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()

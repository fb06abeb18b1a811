"""An OSD's chunks on disk: one file per chunk, keyed as `chunkstore.ChunkKey` (PG, object, shard).

Layout under the data directory:

    current/<pg id>/<shard>.<sha256(object name)[:40]>    a chunk: header line (the object name as
                                                           JSON) then the chunk's bytes

Object names can be any string (RGW's contain '/', ':' and NUL), hence hashed file names with the
name kept in the file. Writes are atomic: a temporary file in the same directory, then a rename; so
a kill -9 at any point (the crash the twin emulates) leaves either the old chunk or the new one,
never half of one, and leftover temporaries are removed at start-up. Chunks are not fsynced: a
killed process loses nothing the kernel has, the device model charges the disk's time, and 15 OSDs
sharing one real disk would otherwise queue on its journal (a third of the small-PUT rate).
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path

from services.ceph.chunkstore import ChunkKey
from services.ceph.errors import CephError

TMP_PREFIX = ".tmp-"


class FileChunkStore:
    """One OSD's chunks (this is not the multi-OSD `ChunkStore` protocol: the OSD id is implied)."""

    def __init__(self, data_dir: Path) -> None:
        self.root = Path(data_dir)
        self.current = self.root / "current"
        self.current.mkdir(parents=True, exist_ok=True)
        self._sizes: dict[ChunkKey, int] = {}
        self._dirs: set[str] = set()   # PG directories known to exist (a mkdir per chunk is a syscall)
        self._scan()

    def _scan(self) -> None:
        for pg_dir in self.current.iterdir():
            if not pg_dir.is_dir():
                continue
            for f in pg_dir.iterdir():
                if f.name.startswith(TMP_PREFIX):
                    f.unlink(missing_ok=True)   # a write a kill -9 interrupted: never visible
                    continue
                try:
                    with f.open("rb") as fh:
                        header = fh.readline()
                        name = json.loads(header)
                    shard = int(f.name.split(".", 1)[0])
                except (OSError, ValueError):
                    continue
                self._sizes[(pg_dir.name, name, shard)] = f.stat().st_size - len(header)

    def _path(self, key: ChunkKey) -> Path:
        pg, name, shard = key
        if not pg or "/" in pg or pg.startswith("."):
            raise CephError("INVALID_ARGUMENT", f"bad PG id {pg!r}")
        if shard < 0:
            raise CephError("INVALID_ARGUMENT", f"bad shard {shard}")
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:40]
        return self.current / pg / f"{shard}.{digest}"

    def put(self, key: ChunkKey, data: bytes) -> None:
        path = self._path(key)
        if key[0] not in self._dirs:
            path.parent.mkdir(exist_ok=True)
            self._dirs.add(key[0])
        tmp = path.parent / f"{TMP_PREFIX}{uuid.uuid4().hex}"
        header = (json.dumps(key[1]) + "\n").encode()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, header)
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
        finally:
            os.close(fd)
        os.replace(tmp, path)
        self._sizes[key] = len(data)

    def size(self, key: ChunkKey) -> int:
        """The chunk's bytes, 0 if there is none."""
        return self._sizes.get(key, 0)

    def get(self, key: ChunkKey) -> bytes | None:
        if key not in self._sizes:
            return None
        try:
            with self._path(key).open("rb") as fh:
                fh.readline()
                return fh.read()
        except FileNotFoundError:
            self._sizes.pop(key, None)
            return None

    def delete(self, key: ChunkKey) -> bool:
        existed = self._sizes.pop(key, None) is not None
        self._path(key).unlink(missing_ok=True)
        return existed

    def corrupt(self, key: ChunkKey, offset: int) -> int:
        data = self.get(key)
        if data is None:
            raise CephError("NOT_FOUND", f"no chunk {key[0]}/{key[1]!r} shard {key[2]} on this OSD")
        if not data:
            raise CephError("FAILED_PRECONDITION", "the chunk is empty: there is no byte to flip")
        buf = bytearray(data)
        buf[offset % len(buf)] ^= 0xFF
        self.put(key, bytes(buf))
        return len(buf)

    def keys(self, pg: str = "") -> list[tuple[ChunkKey, int]]:
        return sorted((k, n) for k, n in self._sizes.items() if not pg or k[0] == pg)

    def used_bytes(self) -> int:
        return sum(self._sizes.values())

    def __len__(self) -> int:
        return len(self._sizes)

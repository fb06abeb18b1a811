"""One OST's object store: each object a file under the OST's data directory, written in place.

Layout on disk, as ldiskfs lays objects out: `<OST dir>/O/<seq hex>/d<objid % 32>/<objid>`. Writes
are `pwrite`s at the object offset (holes stay sparse), reads are `pread`s (a hole reads as zeros,
a read past the object's end is short), a punch is `ftruncate`, fsync happens when the client asks.

Space: `capacity_bytes` is the target's nominal size (from the topology, or set through the admin
RPC to fill an OST on purpose); `used_bytes` is the sum of object sizes. A write that would take
the target past its capacity (less the reserve Lustre keeps) fails with ENOSPC.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from services.lustre.errors import LustreError
from services.lustre.ost import NvmeModel, OstState


def object_path(ost_dir: Path | str, seq: int, objid: int) -> Path:
    return Path(ost_dir) / "O" / f"{seq:x}" / f"d{objid % 32}" / str(objid)


class ObjectStore:
    def __init__(self, index: int, root: Path, capacity_bytes: int, oss: str, nvme: NvmeModel | None = None) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.lock = threading.Lock()
        self.state = OstState(index, oss, capacity_bytes, nvme=nvme or NvmeModel())
        self.sizes: dict[tuple[int, int], int] = {}
        self.inflight = {"read": 0, "write": 0}
        self.served = True    # False once the OSS let the OST go (failback): calls get ENODEV
        for p in (self.root / "O").glob("*/d*/*"):
            try:
                self.sizes[(int(p.parent.parent.name, 16), int(p.name))] = p.stat().st_size
            except (ValueError, OSError):
                continue
        self.state.used_bytes = min(capacity_bytes, sum(self.sizes.values()))
        self.state.inodes_used = len(self.sizes)

    @property
    def index(self) -> int:
        return self.state.index

    def path(self, seq: int, objid: int) -> Path:
        return object_path(self.root, seq, objid)

    def _grow(self, key: tuple[int, int], new_size: int) -> None:
        """Account an object's new size (under the lock); ENOSPC if the target cannot hold it."""
        old = self.sizes.get(key)
        delta = new_size - (old or 0)
        s = self.state
        if delta > 0 and (not s.active or s.readonly):
            raise LustreError("EIO" if not s.active else "EPERM", f"OST{s.index:04x} is "
                              f"{'inactive' if not s.active else 'read-only'}")
        if delta > 0 and s.used_bytes + delta > s.capacity_bytes - int(s.capacity_bytes * s.full_reserve_fraction):
            raise LustreError("ENOSPC", f"OST{s.index:04x}: no space for {delta} more bytes "
                              f"({s.avail_bytes} available)")
        if old is None:
            s.inodes_used += 1
        s.used_bytes = max(0, s.used_bytes + delta)
        self.sizes[key] = new_size

    def write(self, seq: int, objid: int, offset: int, data: bytes, sync: bool = False) -> int:
        key = (seq, objid)
        end = offset + len(data)
        with self.lock:
            size = self.sizes.get(key, 0)
            if end > size:
                self._grow(key, end)
            elif key not in self.sizes:
                self._grow(key, 0)
        path = self.path(seq, objid)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            view = memoryview(data)
            done = 0
            while done < len(view):
                done += os.pwrite(fd, view[done:], offset + done)
            if sync:
                os.fdatasync(fd)
        finally:
            os.close(fd)
        return len(data)

    def read(self, seq: int, objid: int, offset: int, length: int) -> tuple[bytes, int]:
        size = self.sizes.get((seq, objid), 0)
        if offset >= size or length == 0:
            return b"", size
        try:
            fd = os.open(self.path(seq, objid), os.O_RDONLY)
        except FileNotFoundError:
            return b"", 0
        try:
            return os.pread(fd, min(length, size - offset), offset), size
        finally:
            os.close(fd)

    def punch(self, seq: int, objid: int, size: int) -> int:
        key = (seq, objid)
        with self.lock:
            self._grow(key, size)
        path = self.path(seq, objid)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab") as f:
            f.truncate(size)
        return size

    def destroy(self, seq: int, objid: int) -> bool:
        key = (seq, objid)
        with self.lock:
            old = self.sizes.pop(key, None)
            if old is not None:
                self.state.used_bytes = max(0, self.state.used_bytes - old)
                self.state.inodes_used = max(0, self.state.inodes_used - 1)
        self.path(seq, objid).unlink(missing_ok=True)
        return old is not None

    def sync(self, seq: int, objid: int) -> None:
        try:
            fd = os.open(self.path(seq, objid), os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def size(self, seq: int, objid: int) -> int | None:
        return self.sizes.get((seq, objid))

"""The gateway reading EC objects straight from the OSDs, as librados does: no hop through the monitor.

The monitor answers every write (and a read it served) with the object's placement: the OSD of each
shard and each chunk's CRC-32C. The gateway keeps the placements of the data pool's objects it has
seen (the most recent `capacity`), and a read fetches the k data chunks from their OSDs over the
messenger (msgr.py), checks each against its CRC and joins them (no decoding: all data chunks are
there). Anything else (a placement not known, an OSD down or stopped, a chunk missing or failing its
CRC, the object moved by backfill) returns None, and the read goes through the monitor, which reads
the other shards, decodes, and reports failed OSDs as before. A chunk that passes its CRC is the one
written: RGW's RADOS object names are unique per upload, and a name written again (a re-sent part)
updates its placement here.
"""

from __future__ import annotations

import collections
import threading

from clustertwin.v1 import ceph_pb2 as pb
from services.ceph.erasure import ErasureCode
from services.ceph.pg import chunk_crc
from services.ceph.remote_chunkstore import RemoteChunkStore

CAPACITY = 1 << 16   # placements kept (an LRU): 11 OSD ids and CRCs each
TIMEOUT_S = 3.0      # a direct read waits this long for an OSD before asking the monitor


class DirectReader:
    def __init__(self, osds: dict[int, str], k: int, m: int, capacity: int = CAPACITY) -> None:
        """`osds`: each OSD's messenger address."""
        self.chunks = RemoteChunkStore({}, timeout=TIMEOUT_S, msgr=osds)
        self.codec = ErasureCode(k, m)
        self.capacity = capacity
        self._where: collections.OrderedDict[str, tuple[str, list[int], list[int], int]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def learn(self, name: str, pg: str, placement: pb.CephObjectPlacement) -> None:
        if len(placement.acting) != self.codec.k + self.codec.m:
            return self.forget(name)
        with self._lock:
            self._where[name] = (pg, list(placement.acting), list(placement.crcs), placement.size)
            self._where.move_to_end(name)
            while len(self._where) > self.capacity:
                self._where.popitem(last=False)
        return None

    def forget(self, name: str) -> None:
        with self._lock:
            self._where.pop(name, None)

    def read(self, name: str) -> bytes | None:
        """The object from its k data chunks, or None (then ask the monitor)."""
        with self._lock:
            where = self._where.get(name)
        if where is None:
            return None
        pg, acting, crcs, size = where
        k = self.codec.k
        if any(o < 0 for o in acting[:k]) or not all(o in self.chunks.msgr for o in acting[:k]):
            return None
        got = self.chunks.fetch([(acting[p], (pg, name, p)) for p in range(k)])
        if not all(isinstance(c, bytes) and chunk_crc(c) == crcs[p] for p, c in enumerate(got)):
            return None
        return self.codec.decode(dict(enumerate(got)), size)   # type: ignore[arg-type]

    def close(self) -> None:
        self.chunks.close()

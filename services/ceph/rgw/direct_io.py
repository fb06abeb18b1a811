"""The gateway's own RADOS I/O, as librados does it: chunks go straight between the gateway and the
OSDs (over the messenger, msgr.py), and the monitor only keeps the objects' metadata.

A write encodes the object (the pool's code: EC k+m for the data pool, replicas for the bucket index),
puts each shard on the OSD the PG's write plan names (the acting OSD, and a backfill target too), then
commits the object's size and chunk CRCs to the monitor with the plan it followed
(`CephMon.CommitObjects`, the commits of concurrent writes grouped in one call, group_call.py). If the
PG's plan changed meanwhile (an OSD down, out or back, backfill done), the monitor records nothing and
answers with the plan now: the chunks are written again by it, and those left on OSDs outside it are
deleted. A chunk write that fails (the OSD's connection refused or reset, the OSD refusing I/O, no
answer in `WRITE_TIMEOUT_S`, as long as the monitor's own chunk calls wait) is reported in the commit,
and the monitor treats it as its own failure: the shard missing, the OSD marked down. (A chunk that
lands after it was given up on is found again by recovery and reads: its CRC is the one recorded,
pg.py.) Writes of one object are ordered here, as its primary OSD orders them in Ceph. The plans are
kept per PG; the first write to a PG asks for its plan (`WritePlan`), which also gives the pool's code.

A removal (RGW's garbage collector) has the monitor drop the objects' metadata (`ForgetObjects`) and
deletes their chunks from here, without waiting for the OSDs.

A read of the EC data pool fetches the k data chunks from the OSDs of the placement learned at write
(or from the monitor's answer to a read), checks each against its CRC and joins them (no decoding: all
data chunks are there). Anything else (a placement not known, an OSD down, a chunk missing or failing
its CRC, the object moved by backfill) returns None, and the read goes through the monitor, which reads
the other shards, decodes, and reports failed OSDs. A chunk that passes its CRC is the one written:
RGW's data objects are named uniquely per upload, and a name written again (a re-sent part) updates
its placement.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from clustertwin.v1 import ceph_pb2 as pb
from services.ceph.erasure import ErasureCode
from services.ceph.errors import CephError
from services.ceph.hashing import pg_num_mask, stable_mod, str_hash_rjenkins
from services.ceph.pg import chunk_crc
from services.ceph.pool import Codec, PgId
from services.ceph.remote_chunkstore import RemoteChunkStore
from services.ceph.replication import Replication
from services.ceph.rgw.group_call import GroupCall

CAPACITY = 1 << 16   # placements kept (an LRU): 11 OSD ids and CRCs each
WRITE_TIMEOUT_S = 10.0   # an OSD's answer to a chunk write (the monitor's own chunk calls wait as long)
READ_TIMEOUT_S = 3.0     # a direct read waits this long for an OSD before asking the monitor
ATTEMPTS = 4         # writes again after a stale plan (each a map change under the write)

Plan = tuple[tuple[int, int], ...]          # (shard, OSD)
MonCall = Callable[[str, Any], Any]         # MonCluster._call: (method, request) -> reply


def _plan(msg: Any) -> Plan:
    return tuple((t.shard, t.osd) for t in msg)


class DirectIo:
    def __init__(self, osds: dict[int, str], k: int, m: int, capacity: int = CAPACITY) -> None:
        """`osds`: each OSD's messenger address."""
        self.chunks = RemoteChunkStore({}, timeout=WRITE_TIMEOUT_S, msgr=osds)
        self.codec = ErasureCode(k, m)
        self.capacity = capacity
        self._where: collections.OrderedDict[str, tuple[str, list[int], list[int], int]] = collections.OrderedDict()
        self._plans: dict[str, Plan] = {}            # PG -> its write plan, as last heard
        self._pools: dict[str, tuple[int, int, Codec]] = {}   # pool -> (id, pg_num, its code)
        self._lock = threading.Lock()
        self._writing: dict[str, tuple[threading.Lock, int]] = {}   # object -> (its lock, writers)
        self._mon: MonCall | None = None
        self._commits: GroupCall[pb.CephMonCommitObjectRequest, pb.CephMonCommitObjectResult] = GroupCall(
            self._commit_many)

    def bind(self, mon: MonCall) -> None:
        """The monitor's calls (MonCluster._call): plans and commits go there."""
        self._mon = mon

    def _commit_many(self, objs: list[pb.CephMonCommitObjectRequest]) -> list[pb.CephMonCommitObjectResult]:
        assert self._mon is not None
        return list(self._mon("CommitObjects", pb.CephMonCommitObjectsRequest(objects=objs)).results)

    # -- placements, for reads -------------------------------------------------------------------

    def learn(self, name: str, pg: str, placement: pb.CephObjectPlacement) -> None:
        if len(placement.acting) != self.codec.k + self.codec.m:
            return self.forget(name)
        self._remember(name, pg, list(placement.acting), list(placement.crcs), placement.size)
        return None

    def _remember(self, name: str, pg: str, acting: list[int], crcs: list[int], size: int) -> None:
        with self._lock:
            self._where[name] = (pg, acting, crcs, size)
            self._where.move_to_end(name)
            while len(self._where) > self.capacity:
                self._where.popitem(last=False)

    def forget(self, name: str) -> None:
        with self._lock:
            self._where.pop(name, None)

    # -- writes ------------------------------------------------------------------------------------

    def _pg_of(self, pool: str, name: str) -> tuple[str, Plan, Codec]:
        """The PG of `name`, its plan and the pool's code: from what is kept, else asked of the monitor."""
        known = self._pools.get(pool)
        if known is not None:
            pool_id, pg_num, codec = known
            pg = str(PgId(pool_id, stable_mod(str_hash_rjenkins(name), pg_num, pg_num_mask(pg_num))))
            plan = self._plans.get(pg)
            if plan is not None:
                return pg, plan, codec
        assert self._mon is not None
        r = self._mon("WritePlan", pb.CephMonWritePlanRequest(pool=pool, name=name))
        codec = known[2] if known else (ErasureCode(r.k, r.m, r.stripe_unit) if r.erasure else Replication(r.size))
        self._pools[pool] = (r.pool_id, r.pg_num, codec)
        self._plans[r.pg] = _plan(r.plan)
        return r.pg, self._plans[r.pg], codec

    @contextlib.contextmanager
    def _one_writer(self, name: str) -> Iterator[None]:
        """Writes of one object in the order they came, as its primary OSD orders them in Ceph (the
        bucket index rewrites an entry in place; its chunks and its commit must be of one write)."""
        with self._lock:
            lock, n = self._writing.get(name, (threading.Lock(), 0))
            self._writing[name] = (lock, n + 1)
        try:
            with lock:
                yield
        finally:
            with self._lock:
                lock, n = self._writing[name]
                if n == 1:
                    del self._writing[name]
                else:
                    self._writing[name] = (lock, n - 1)

    def write(self, pool: str, name: str, data: bytes | memoryview) -> str:
        """Write the object's chunks to their OSDs and commit it; returns its PG."""
        with self._one_writer(name):
            return self._write(pool, name, data)

    def _write(self, pool: str, name: str, data: bytes | memoryview) -> str:
        self.forget(name)   # until the commit, what the OSDs hold is not known
        pg, plan, codec = self._pg_of(pool, name)
        chunks = codec.encode(data, views=True)   # (sent from these buffers: no copy per chunk)
        crcs = [chunk_crc(c) for c in chunks]
        for _ in range(ATTEMPTS):
            for shard, osd in plan:
                self.chunks.put(osd, (pg, name, shard), chunks[shard])
            failed = {(f.key[2], f.osd): f.why for f in self.chunks.flush() if f.op == "put"}
            (r,) = self._commits.call([pb.CephMonCommitObjectRequest(
                pool=pool, name=name, pg=pg, size=len(data), crcs=crcs, plan=[pb.CephShardTarget(shard=s, osd=o)
                                                                              for s, o in plan],
                failures=[pb.CephChunkFailure(shard=s, osd=o, why=why) for (s, o), why in failed.items()])])
            if failed:
                self._plans.clear()   # OSDs marked down: every PG's plan may have changed
            if r.code:
                self._plans.pop(pg, None)
                raise CephError(r.code, r.error)   # type: ignore[arg-type]
            if not r.stale:
                if isinstance(codec, ErasureCode):   # (only EC objects are read straight from the OSDs)
                    self._remember(name, pg, self._acting(plan, failed), crcs, len(data))
                return r.pg
            self._drop_strays(pg, name, plan, _plan(r.plan))
            pg, plan = r.pg, _plan(r.plan)
            self._plans[pg] = plan
        raise CephError("UNAVAILABLE", f"object {name!r}: the PG's plan changed under {ATTEMPTS} writes")

    def _acting(self, plan: Plan, failed: dict[tuple[int, int], str]) -> list[int]:
        """Each shard's OSD for reads: the first the plan names (the acting one), -1 where it failed."""
        acting = [-1] * (self.codec.k + self.codec.m)
        for shard, osd in reversed(plan):
            acting[shard] = -1 if (shard, osd) in failed else osd
        return acting

    def _drop_strays(self, pg: str, name: str, old: Plan, new: Plan) -> None:
        """Chunks a stale plan put where the new one does not: removed (an OSD that fails is left)."""
        for shard, osd in set(old) - set(new):
            self.chunks.delete(osd, (pg, name, shard))
        self.chunks.flush()

    # -- removals ----------------------------------------------------------------------------------

    def remove(self, pool: str, names: list[str]) -> tuple[list[str], str]:
        """Remove objects as RGW's garbage collector does: the monitor drops their metadata (one call,
        one commit) and says where their chunks are; the deletes leave from here, one message per OSD,
        and are not waited for (nothing reads those chunks any more). A delete an OSD does not take
        (down, away) leaves its chunk behind, as the monitor's own did.
        Returns the names not removed (their PG not active) and why the first was not."""
        assert self._mon is not None
        for name in names:
            self.forget(name)
        r = self._mon("ForgetObjects", pb.CephMonForgetObjectsRequest(pool=pool, names=names))
        for obj in r.forgotten:
            for t in obj.chunks:
                self.chunks.post_delete(t.osd, (obj.pg, obj.name, t.shard))
        self.chunks.push_posted()   # not waited for: nothing reads these chunks any more
        return list(r.failed), r.error

    # -- reads -------------------------------------------------------------------------------------

    def read(self, name: str, pieces: bool = False) -> bytes | list[memoryview] | None:
        """The object from its k data chunks, or None (then ask the monitor). `pieces`: not joined, as
        `ErasureCode.decode_pieces` gives it."""
        with self._lock:
            where = self._where.get(name)
        if where is None:
            return None
        pg, acting, crcs, size = where
        k = self.codec.k
        if any(o < 0 for o in acting[:k]) or not all(o in self.chunks.msgr for o in acting[:k]):
            return None
        got = self.chunks.fetch([(acting[p], (pg, name, p)) for p in range(k)], timeout=READ_TIMEOUT_S)
        if not all(isinstance(c, bytes | memoryview) and chunk_crc(c) == crcs[p] for p, c in enumerate(got)):
            return None
        if pieces:
            return self.codec.decode_pieces(dict(enumerate(got)), size)   # type: ignore[arg-type]
        return self.codec.decode(dict(enumerate(got)), size)   # type: ignore[arg-type]

    def close(self) -> None:
        self.chunks.close()

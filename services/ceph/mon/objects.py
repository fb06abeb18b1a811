"""RADOS object I/O on the monitor (the gateway's Put/Get/Remove and RBD's extents), and the lock
that guards the model.

The model is not thread-safe: every call into it runs under one lock (`locked`). The gateway's puts
wait for their OSDs without the lock; reads, removes and scrubs of an object being written wait for
it (`inflight`), so nobody sees half of a write. An object's row is committed before its write is
acknowledged. OSDs that fail a chunk call go to `on_failures` (under the lock).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from clustertwin.v1 import ceph_pb2 as pb
from services.ceph.cluster import Cluster
from services.ceph.errors import CephError, PgUnavailable
from services.ceph.mon.store import MonStore
from services.ceph.pg import ObjectInfo, PgState, PlacementGroup, ScrubError, chunk_crc, state_string
from services.ceph.pool import PgId
from services.ceph.remote_chunkstore import Failure, RemoteChunkStore
from services.ceph.rgw import rados

T = TypeVar("T")


class ObjectIo:
    def __init__(self, cluster: Cluster, chunks: RemoteChunkStore, store: MonStore, clock: Any,
                 on_failures: Callable[[list[Failure]], None]) -> None:
        self.cluster, self.chunks, self.store, self.clock = cluster, chunks, store, clock
        self.on_failures = on_failures
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.inflight: set[tuple[str, str]] = set()

    def locked(self, fn: Callable[[], T]) -> T:
        with self.lock:
            try:
                return fn()
            finally:
                self._take_failures()

    def _take_failures(self) -> None:
        failures = self.chunks.take_failures()
        if failures:
            self.on_failures(failures)

    def wait_idle(self, key: tuple[str, str] | None = None) -> None:
        """Under the lock: until `key` (or every object) has no write in flight."""
        while (key in self.inflight) if key else self.inflight:
            self.cond.wait()

    # -- under the lock (RBD holds it for a whole image operation) -----------------------------

    def put_object(self, pool: str, name: str, data: bytes) -> str:
        self.cluster.put(pool, name, data)
        return self._finish_put(pool, name, self.chunks.flush())

    def put_objects(self, pool: str, items: list[tuple[str, bytes]]) -> None:
        """Several objects' chunk writes in flight at once (RBD's extent)."""
        for name, data in items:
            self.cluster.put(pool, name, data)
        failures = self.chunks.flush()
        first: CephError | None = None
        for name, _ in items:
            try:
                self._finish_put(pool, name, [f for f in failures if f.key[1] == name])
            except CephError as e:
                first = first or e
        if first is not None:
            raise first

    def put_each(self, objs: list[pb.CephMonPutObjectRequest]) -> list[pb.CephMonPutObjectResult]:
        """Several objects' writes with their chunk I/O in flight at once (a group of RGW's index
        writes); one refused (its PG not active) fails only itself."""
        out = [pb.CephMonPutObjectResult() for _ in objs]
        started = []
        for i, r in enumerate(objs):
            self.wait_idle((r.pool, r.name))
            try:
                self.cluster.put(r.pool, r.name, r.data)
                started.append(i)
            except CephError as e:
                out[i] = pb.CephMonPutObjectResult(code=e.code, error=e.message)
        failures = self.chunks.flush()
        saving: list[tuple[PlacementGroup, str]] = []
        for i in started:
            r = objs[i]
            try:
                out[i] = pb.CephMonPutObjectResult(pg=self._finish_put(
                    r.pool, r.name, [f for f in failures if f.key[1] == r.name], saving))
            except CephError as e:
                out[i] = pb.CephMonPutObjectResult(code=e.code, error=e.message)
        self.store.save_objects(saving)
        return out

    def _prefetch_pairs(self, pool: str, name: str) -> list[tuple[int | None, Any]]:
        c = self.cluster
        pg = c.locate(pool, name)
        info = pg.objects.get(name)
        if info is None or not pg.state(c.is_up) & PgState.ACTIVE:
            return []
        return [(pg.acting[p], info.chunk_key(pg.pgid, p)) for p in pg.readable_shards(name, c.is_up)[: pg.pool.k]]

    def get_objects(self, pool: str, names: list[str]) -> dict[str, bytes]:
        """Several existing objects, every chunk fetched at once."""
        self.chunks.prefetch([p for name in names for p in self._prefetch_pairs(pool, name)])
        return {name: self.cluster.get(pool, name) for name in names}

    def get_object(self, pool: str, name: str) -> tuple[bytes, str]:
        self.chunks.prefetch(self._prefetch_pairs(pool, name))
        return self.cluster.get(pool, name), str(self.cluster.locate(pool, name).pgid)

    def remove_object(self, pool: str, name: str) -> bool:
        self.wait_idle((pool, name))
        pg = self.cluster.locate(pool, name)
        existed = name in pg.objects
        rados.remove(self.cluster, pool, name)
        self.chunks.flush()
        self.store.save_object(pg, name)
        return existed

    def remove_objects(self, pool: str, names: list[str]) -> list[tuple[str, CephError]]:
        """Remove several objects: every chunk delete sent at once (one message per OSD), their rows in
        one commit. Returns those that could not be removed (an inactive PG), with why."""
        failed: list[tuple[str, CephError]] = []
        done = []
        for name in dict.fromkeys(names):
            self.wait_idle((pool, name))
            try:
                rados.remove(self.cluster, pool, name)
            except CephError as e:
                failed.append((name, e))
                continue
            done.append((self.cluster.locate(pool, name), name))
        self.chunks.flush()
        self.store.save_objects(done)
        return failed

    def forget_objects(self, pool: str, names: list[str]) -> pb.CephMonForgetObjectsResponse:
        """Under the lock: drop several objects' metadata in one commit, and say where their chunks
        are (the caller deletes them). One whose PG is not active is not dropped, and listed."""
        out = pb.CephMonForgetObjectsResponse()
        done = []
        for name in dict.fromkeys(names):
            self.wait_idle((pool, name))
            try:
                gone = rados.forget(self.cluster, pool, name)
            except CephError as e:
                out.failed.append(name)
                out.error = out.error or e.message
                continue
            done.append((self.cluster.locate(pool, name), name))
            if gone is not None:
                out.forgotten.append(pb.CephForgottenObject(name=name, pg=gone[0], chunks=_plan_pb(tuple(gone[1]))))
        self.store.save_objects(done)
        return out

    def placement(self, pool: str, name: str) -> pb.CephObjectPlacement:
        """Where the object's shards are now (empty if it is gone): what the gateway reads directly."""
        with self.lock:
            pg = self.cluster.locate(pool, name)
            info = pg.objects.get(name)
            if info is None:
                return pb.CephObjectPlacement()
            acting = [-1 if o is None or name in pg.missing.get(p, ()) else o for p, o in enumerate(pg.acting)]
            return pb.CephObjectPlacement(acting=acting, crcs=info.crcs, size=info.size)

    # -- writes whose chunks the client put on the OSDs itself (RGW, as librados writes) --------

    def write_plan(self, pool: str, name: str) -> pb.CephMonWritePlanResponse:
        """Under the lock: the PG of `name` and where a write puts each shard (the PG must be active)."""
        c = self.cluster
        pg = c.locate(pool, name)
        pg.require_active(c.is_up, "write")
        p = pg.pool
        return pb.CephMonWritePlanResponse(pg=str(pg.pgid), plan=_plan_pb(pg.write_plan(c.is_up)), pool_id=p.id,
                                           pg_num=p.pg_num, erasure=p.erasure, k=p.k, m=p.size - p.k,
                                           stripe_unit=p.stripe_unit or 0, size=p.size)

    def commit_objects(self, objs: list[pb.CephMonCommitObjectRequest]) -> list[pb.CephMonCommitObjectResult]:
        """Under the lock: `commit_object` of each; one refused (its PG not active) fails only itself."""
        out = []
        saving: list[tuple[PlacementGroup, str]] = []
        for r in objs:
            try:
                out.append(self.commit_object(r, saving))
            except CephError as e:
                out.append(pb.CephMonCommitObjectResult(code=e.code, error=e.message))
        self.store.save_objects(saving)
        return out

    def commit_object(self, r: pb.CephMonCommitObjectRequest,
                      saving: list[tuple[PlacementGroup, str]] | None = None) -> pb.CephMonCommitObjectResult:
        """Under the lock: record an object whose chunks the client wrote by `r.plan`, if that is still
        the PG's plan (else nothing changes and the reply is stale, with the plan now). Failed chunk
        writes are handled as the monitor's own: their shards missing, their OSDs marked down."""
        c = self.cluster
        pg = c.locate(r.pool, r.name)
        pg.require_active(c.is_up, "write")
        plan = pg.write_plan(c.is_up)
        used = tuple((t.shard, t.osd) for t in r.plan)
        if str(pg.pgid) != r.pg or used != plan:
            return pb.CephMonCommitObjectResult(stale=True, pg=str(pg.pgid), plan=_plan_pb(plan))
        if len(r.crcs) != pg.pool.size:
            raise CephError("INVALID_ARGUMENT", f"{len(r.crcs)} chunk CRCs for a pool of size {pg.pool.size}")
        info = ObjectInfo(r.name, r.size, tuple(r.crcs))
        pg.record_write(info, plan)
        failures = [Failure(f.osd, info.chunk_key(pg.pgid, f.shard), "put", f.why) for f in r.failures]
        return pb.CephMonCommitObjectResult(pg=self._finish_put(r.pool, r.name, failures, saving),
                                            plan=_plan_pb(plan))

    def _finish_put(self, pool: str, name: str, failures: list[Failure],
                    saving: list[tuple[PlacementGroup, str]] | None = None) -> str:
        """Account for the write's failed chunks and save its row (or add it to `saving`, which the
        caller saves in one commit before it answers)."""
        c = self.cluster
        pg = c.locate(pool, name)
        if failures:
            for f in failures:
                if f.op == "put" and f.osd in pg.acting:
                    pg.missing.setdefault(f.key[2], set()).add(name)
            self.on_failures(failures)
        if saving is None:
            self.store.save_object(pg, name)
        else:
            saving.append((pg, name))
        if failures and not pg.state(c.is_up) & PgState.ACTIVE:
            raise PgUnavailable(str(pg.pgid), state_string(pg.state(c.is_up)),
                                "OSDs failed during the write; it is retried when the PG is active")
        return str(pg.pgid)

    # -- the gateway's calls: they take the lock only while touching the model ----------------

    def put_concurrent(self, pool: str, name: str, data: bytes) -> str:
        """Encode and start the chunk writes under the lock, wait for the OSDs without it (other
        objects' I/O proceeds meanwhile), then account for failures under it."""
        key = (pool, name)
        with self.cond:
            self.wait_idle(key)
            try:
                self.cluster.put(pool, name, data)
            except BaseException:
                self.chunks.flush()
                self._take_failures()
                raise
            self.inflight.add(key)
        try:
            failures = self.chunks.flush()
        except BaseException:
            with self.cond:
                self._done(key)
            raise
        with self.cond:
            self._done(key)   # still under the lock: its row is saved before anyone else looks
            try:
                return self._finish_put(pool, name, failures)
            finally:
                self._take_failures()

    def _done(self, key: tuple[str, str]) -> None:
        """Under the lock: the write of `key` is no longer in flight."""
        self.inflight.discard(key)
        self.cond.notify_all()

    def get_concurrent(self, pool: str, name: str) -> tuple[bytes, str]:
        """k shards (data shards first, as Ceph reads) fetched without the lock and checked against
        their CRCs; anything less than k good ones falls back to the locked read, which reads every
        shard, decodes, and reports OSDs that failed."""
        with self.cond:
            self.wait_idle((pool, name))
            c = self.cluster
            pg = c.locate(pool, name)
            info = pg.objects.get(name)
            fast = info is not None and bool(pg.state(c.is_up) & PgState.ACTIVE)
            if fast:
                assert info is not None
                shards = pg.readable_shards(name, c.is_up)[: pg.pool.k]
                pairs = [(p, pg.acting[p], info.chunk_key(pg.pgid, p)) for p in shards]
                codec, k, pgid = c.codecs[pg.pool.id], pg.pool.k, str(pg.pgid)
        if fast and len(pairs) >= k:
            got = self.chunks.fetch([(osd, ck) for _, osd, ck in pairs])   # type: ignore[misc]
            good = {p: got[i] for i, (p, _, _) in enumerate(pairs)
                    if isinstance(got[i], bytes) and chunk_crc(got[i]) == info.crcs[p]}  # type: ignore[union-attr]
            if len(good) >= k:
                return codec.decode(good, info.size), pgid   # type: ignore[union-attr]
        return self.locked(lambda: self._get_waiting(pool, name))

    def _get_waiting(self, pool: str, name: str) -> tuple[bytes, str]:
        self.wait_idle((pool, name))
        return self.get_object(pool, name)

    # -- scrub and bit rot (under the lock) ----------------------------------------------------

    def scrub(self, pg: str, repair: bool) -> tuple[list[ScrubError], int, int]:
        """Deep-scrub (and repair) one PG or every PG with objects: (errors, repaired, PGs scrubbed)."""
        c = self.cluster
        pgids = [PgId.parse(pg)] if pg else sorted(p for p, x in c.pgs.items() if x.objects)
        errors: list[ScrubError] = []
        repaired = 0
        self.wait_idle()   # a write in flight would look like a CRC mismatch
        for pgid in pgids:
            found = c.deep_scrub(pgid)
            errors += found
            if repair and found:
                repaired += c.repair(pgid)
                self.chunks.flush()
        return errors, repaired, len(pgids)

    def corrupt(self, pool: str, obj: str, osd: int, offset: int) -> tuple[str, int, int]:
        """Flip a byte of the shard `osd` holds (-1: shard 0's): (pg, shard, osd)."""
        pg = self.cluster.locate(pool, obj)
        info = pg.objects.get(obj)
        if info is None:
            raise CephError("NOT_FOUND", f"object {obj!r} not in pool {pool}")
        if osd >= 0 and osd not in pg.acting:
            raise CephError("INVALID_ARGUMENT", f"osd.{osd} holds no shard of {obj!r} "
                                                f"(pg {pg.pgid} acting {pg.acting})")
        pos = pg.acting.index(osd) if osd >= 0 else 0
        holder = pg.acting[pos]
        if holder is None:
            raise CephError("FAILED_PRECONDITION", f"shard {pos} of {obj!r} has no OSD")
        self.chunks.corrupt(holder, info.chunk_key(pg.pgid, pos), offset)
        return str(pg.pgid), pos, holder


def _plan_pb(plan: tuple[tuple[int, int], ...]) -> list[pb.CephShardTarget]:
    return [pb.CephShardTarget(shard=pos, osd=osd) for pos, osd in plan]

"""A Ceph cluster as one pure model: CRUSH map, monitor, pools, PGs and the chunk store wired.

What the coming daemons drive: the monitor daemon calls `tick(now)` and the OSD events; the RGW
gateway calls `put`/`get`/`delete` on the data pool; OSD daemons' recovery loop calls `recover`
with a budget their bandwidth model grants; the admin API reads `pgs`, `health` and `status`.
Every OSD-map epoch re-peers every PG against the new CRUSH placement.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from services.ceph.chunkstore import ChunkStore
from services.ceph.crush import CrushMap
from services.ceph.errors import CephError
from services.ceph.monitor import MapChange, Monitor, MonTiming
from services.ceph.pg import PgState, PlacementGroup, ScrubError
from services.ceph.pool import Codec, PgId, Pool


@dataclass(frozen=True)
class PoolUsage:
    pool: Pool
    objects: int
    stored: int  # logical bytes clients wrote
    raw: int  # bytes of chunks on OSDs (what `ceph df` calls USED)


class Cluster:
    def __init__(
        self, crush: CrushMap, pools: Iterable[Pool], store: ChunkStore, name: str = "ceph",
        timing: MonTiming | None = None, now: float = 0.0,
    ) -> None:
        self.crush, self.store, self.name = crush, store, name
        self.fsid = str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{name}.ceph.clustertwin"))
        self.monitor = Monitor(crush, timing or MonTiming(), started_at=now)
        self.pools: dict[str, Pool] = {}
        self.codecs: dict[int, Codec] = {}
        self.pgs: dict[PgId, PlacementGroup] = {}
        self._peered_epoch = self.monitor.epoch
        for pool in pools:
            self.add_pool(pool)

    # -- pools -------------------------------------------------------------------------------

    def add_pool(self, pool: Pool) -> None:
        if pool.name in self.pools or any(p.id == pool.id for p in self.pools.values()):
            raise CephError("ALREADY_EXISTS", f"pool {pool.name} (id {pool.id}) already exists")
        placements = {pg: self._place(pool, pg) for pg in pool.pgs()}  # raises before any change
        self.pools[pool.name] = pool
        self.codecs[pool.id] = pool.codec()
        for pg, placement in placements.items():
            self.pgs[pg] = PlacementGroup.create(pool, pg, placement)
            self.pgs[pg].peer(placement, self.is_up)

    def pool(self, name: str) -> Pool:
        try:
            return self.pools[name]
        except KeyError:
            raise CephError("NOT_FOUND", f"pool {name!r} does not exist") from None

    def _place(self, pool: Pool, pg: PgId) -> list[int | None]:
        return self.crush.place(pool.crush_seed(pg), pool.size, pool.failure_domain, pool.device_class, indep=True)

    def is_up(self, osd: int) -> bool:
        return self.crush.osds[osd].up

    # -- map changes -------------------------------------------------------------------------

    def _repeer(self) -> None:
        if self.monitor.epoch == self._peered_epoch:
            return
        for pg in self.pgs.values():
            pool = pg.pool
            pg.peer(self._place(pool, pg.pgid), self.is_up)
        self._peered_epoch = self.monitor.epoch

    def _after(self, changes: list[MapChange]) -> list[MapChange]:
        self._repeer()
        return changes

    def tick(self, now: float) -> list[MapChange]:
        return self._after(self.monitor.tick(now))

    def osd_stopped(self, osd: int, now: float, clean: bool = False) -> list[MapChange]:
        return self._after(self.monitor.osd_stopped(osd, now, clean))

    def osd_started(self, osd: int, now: float) -> list[MapChange]:
        return self._after(self.monitor.osd_started(osd, now))

    def mark_out(self, osd: int, now: float) -> list[MapChange]:
        return self._after(self.monitor.mark_out(osd, now))

    def mark_in(self, osd: int, now: float) -> list[MapChange]:
        return self._after(self.monitor.mark_in(osd, now))

    def set_weight(self, osd: int, weight: float, now: float) -> list[MapChange]:
        return self._after(self.monitor.set_weight(osd, weight, now))

    # -- client I/O --------------------------------------------------------------------------

    def locate(self, pool: str, name: str) -> PlacementGroup:
        p = self.pool(pool)
        return self.pgs[p.object_pg(name)]

    def put(self, pool: str, name: str, data: bytes) -> PgId:
        pg = self.locate(pool, name)
        pg.write(name, data, self.codecs[pg.pool.id], self.store, self.is_up)
        return pg.pgid

    def get(self, pool: str, name: str) -> bytes:
        pg = self.locate(pool, name)
        return pg.read(name, self.codecs[pg.pool.id], self.store, self.is_up)

    # -- background work ---------------------------------------------------------------------

    def recover(self, max_objects: int | None = None) -> int:
        """Recovery and backfill across PGs, at most `max_objects` object shards; returns those done."""
        done = 0
        for pgid in sorted(self.pgs):
            left = None if max_objects is None else max_objects - done
            if left is not None and left <= 0:
                break
            pg = self.pgs[pgid]
            done += pg.recover(self.codecs[pg.pool.id], self.store, self.is_up, left)
        return done

    def deep_scrub(self, pgid: PgId) -> list[ScrubError]:
        return self._pg(pgid).deep_scrub(self.store, self.is_up)

    def repair(self, pgid: PgId) -> int:
        pg = self._pg(pgid)
        return pg.repair(self.codecs[pg.pool.id], self.store, self.is_up)

    def _pg(self, pgid: PgId) -> PlacementGroup:
        try:
            return self.pgs[pgid]
        except KeyError:
            raise CephError("NOT_FOUND", f"pg {pgid} does not exist") from None

    # -- views -------------------------------------------------------------------------------

    def pg_states(self) -> dict[PgId, PgState]:
        return {pgid: pg.state(self.is_up) for pgid, pg in self.pgs.items()}

    def usage(self) -> list[PoolUsage]:
        out = []
        for pool in self.pools.values():
            pgs = [pg for pg in self.pgs.values() if pg.pool.id == pool.id]
            codec = self.codecs[pool.id]
            objs = [o for pg in pgs for o in pg.objects.values()]
            out.append(PoolUsage(pool, len(objs), sum(o.size for o in objs), sum(codec.raw_size(o.size) for o in objs)))
        return out

    def raw_used(self) -> int:
        return sum(self.store.used_bytes(o) for o in self.crush.osds)

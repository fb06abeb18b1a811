"""The Ceph monitor daemon: one per twin, owning the `Cluster` model (CRUSH and OSD map, pools,
PGs, health) and serving `clustertwin.v1.CephMon`.

- OSD daemons heartbeat here. An OSD silent for 1.5 heartbeat intervals has stopped; the model
  marks it down when Ceph's grace runs out (`heartbeat_grace` after its last ping) and out after
  `down_out_interval` (monitor.py), all in twin time (`--clock-scale` makes 600 s a few seconds).
  A clean stop (`twin ceph osd stop`) is marked down at once. An OSD that answers no chunk call is
  marked down at once too (the failure report Ceph's peers would send). A heartbeat after it was
  marked down boots it: up, and in again if it was marked out automatically.
- Chunk bytes go to and from the OSDs through `RemoteChunkStore`; a background loop runs recovery
  and backfill (a batch of object shards per pass) whenever a PG has stale shards or backfill
  targets, e.g. after an OSD returns or is marked out.
- RADOS object I/O for the RGW gateway (Put/Get/Remove/ListObjects) runs here, in one place that
  holds every object's metadata: the gateway is a client, as librados makes RGW one.
- Everything acknowledged is persisted first (state.py), so a kill -9 loses nothing.
- RBD images (`clustertwin.v1.CephRbd`, rbd_service.py) on the replicated `rbd` pool, through the
  same Cluster, PGs and OSDs.
- The bus (emulator/bus.py): OSD up/down/in/out and PG state changes as events on
  `events/ceph/<kind>` (kinds osd_up, osd_down, osd_in, osd_out, pg_state), and the OSD faults the
  twin's fault API records (`twin fault inject osd.N ...`) on `events/ceph/fault` / `fault_clear` and,
  retained while active, `faults/ceph/<id>`.

    python -m services.ceph.mon.daemon CONFIG.json      # normally forked by the supervisor

DaemonConfig fields read: name, grpc, store_url, clock_epoch/clock_scale, and
    extra["osds"]     [{id, host, device_class, capacity_bytes, grpc}] of every OSD daemon
    extra["ec"]       {k, m, failure_domain} of the RGW data pool (default 8, 3, host)
    extra["replicated"]  {size, failure_domain} of the index and RBD pools (default 3, host)
    extra["pg_num"]   PGs of the data pool (default 32)
    extra["timing"]   {heartbeat_interval, heartbeat_grace, down_out_interval} (Ceph's 6, 20, 600)
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import signal
import string
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import grpc

from clustertwin.v1 import ceph_pb2 as pb
from clustertwin.v1 import ceph_pb2_grpc as pb_grpc
from emulator import bus
from emulator.daemon_config import DaemonConfig
from emulator.grpc_server import start_server
from services.ceph import status as ceph_status
from services.ceph.cluster import Cluster
from services.ceph.crush import CrushMap
from services.ceph.errors import CephError, PgUnavailable
from services.ceph.health import health
from services.ceph.mon.rbd_service import RbdServicer
from services.ceph.mon.state import MonState, load_docs, save_doc
from services.ceph.mon.views import osd_tree_text
from services.ceph.monitor import MonTiming
from services.ceph.pg import CRUSH_ITEM_NONE, PgState, chunk_crc, state_string
from services.ceph.pool import PgId, erasure_pool, replicated_pool
from services.ceph.remote_chunkstore import CHANNEL_OPTIONS, Failure, RemoteChunkStore
from services.ceph.rgw import rados

log = logging.getLogger("ceph_mon")
T = TypeVar("T")

SERVICE_NAME = "clustertwin.v1.CephMon"
DATA_POOL = "default.rgw.buckets.data"
INDEX_POOL = "default.rgw.buckets.index"
RBD_POOL = "rbd"
TICK_S = 0.1                 # wall seconds between passes of the map/recovery loop
RECOVERY_BATCH = 16          # object shards per recovery pass
MON_THREADS = 32             # concurrent RPCs in worker threads (asyncio's default is cpu + 4)
SILENT_AFTER = 1.5           # heartbeat intervals without a ping before an OSD counts as stopped


def build_cluster(cfg: DaemonConfig, store: RemoteChunkStore, now: float) -> Cluster:
    x = cfg.extra
    crush = CrushMap()
    for o in sorted(x["osds"], key=lambda o: o["id"]):
        crush.add_osd(o["id"], o["host"], o["device_class"], capacity_bytes=int(o["capacity_bytes"]))
    ec = {"k": 8, "m": 3, "failure_domain": "host"} | x.get("ec", {})
    rep = {"size": 3, "failure_domain": "host"} | x.get("replicated", {})
    has_ssd = any(o.device_class == "ssd" for o in crush.osds.values())
    ssd = "ssd" if has_ssd else None
    pools = [erasure_pool(1, DATA_POOL, k=ec["k"], m=ec["m"], pg_num=int(x.get("pg_num", 32)),
                          failure_domain=ec["failure_domain"]),
             replicated_pool(2, INDEX_POOL, size=rep["size"], pg_num=8, device_class=ssd,
                             failure_domain=rep["failure_domain"], application="rgw"),
             replicated_pool(3, RBD_POOL, size=rep["size"], pg_num=8, device_class=ssd,
                             failure_domain=rep["failure_domain"], application="rbd")]
    timing = MonTiming(**x.get("timing", {}))
    return Cluster(crush, pools, store, name=cfg.twin, timing=timing, now=now)


class MonDaemon:
    def __init__(self, cfg: DaemonConfig) -> None:
        self.cfg = cfg
        self.clock = cfg.clock
        now = self.clock.now()
        self.addresses = {int(o["id"]): o["grpc"] for o in cfg.extra["osds"]}
        self.store = RemoteChunkStore(self.addresses)
        self.cluster = build_cluster(cfg, self.store, now)
        self.state = MonState(cfg.store_url)
        restored = self.state.load(self.cluster)
        if not restored:
            self.state.save_map(self.cluster)
        self.users = {u["access_key"]: u for u in self.state.users()}
        self.lock = threading.Lock()              # the model is not thread-safe
        # RADOS puts from the gateway wait for their OSDs without the lock; reads, removes and scrubs
        # of an object being written wait for it (`inflight`), so nobody sees half of a write.
        self.cond = threading.Condition(self.lock)
        self.inflight: set[tuple[str, str]] = set()
        self.timing = self.cluster.monitor.timing
        # What the daemon told the model about each OSD's process (the model's own view is private).
        self.alive = {o: self.cluster.crush.osds[o].up for o in self.addresses}
        self.last_hb = dict.fromkeys(self.addresses, now)   # a restarted monitor gives everyone a grace
        self.started = now   # ... of heartbeat_grace: OSDs reconnect to a new monitor with a backoff
        self.dead_since = dict.fromkeys(self.addresses, 0.0)
        self.stopping: set[int] = set()
        self.boot_times: dict[int, float] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self.bus: bus.Publisher | None = None
        self._osd_view = {o.id: (o.up, o.in_) for o in self.cluster.crush.osds.values()}
        self._pg_view = {str(p): state_string(s) for p, s in self.cluster.pg_states().items()}
        self.faults = {f["id"]: f for f in load_docs(self.state, "fault:")}
        log.info("monitor: %d OSDs, %d pools, %d PGs (%s)", len(self.addresses), len(self.cluster.pools),
                 len(self.cluster.pgs), "restored from store" if restored else "new cluster")

    # -- running model work ------------------------------------------------------------------

    def locked(self, fn: Callable[[], T]) -> T:
        with self.lock:
            try:
                return fn()
            finally:
                failures = self.store.take_failures()
                if failures:
                    self._report_failures(failures)

    def _report_failures(self, failures: list[Failure]) -> None:
        now = self.clock.now()
        for osd in sorted({f.osd for f in failures}):
            if self.alive.get(osd) and self.cluster.crush.osds[osd].up:
                why = next(f.why for f in failures if f.osd == osd)
                log.warning("osd.%d failed a chunk call (%s): marking it down", osd, why)
                self.alive[osd] = False
                self.dead_since[osd] = now
                self.cluster.osd_stopped(osd, now, clean=True)
        self.state.save_map(self.cluster)

    # -- the map loop ------------------------------------------------------------------------

    def heartbeat(self, req: pb.HeartbeatRequest) -> pb.HeartbeatReply:
        """Called on the event loop: only notes the ping; the map loop acts on it."""
        now = self.clock.now()
        if req.osd not in self.addresses:
            raise CephError("NOT_FOUND", f"osd.{req.osd} is not in the map")
        self.store.note_used(req.osd, req.used_bytes)
        if req.stopping:
            self.stopping.add(req.osd)
        else:
            self.last_hb[req.osd] = now
            self.boot_times[req.osd] = req.boot_time
        o = self.cluster.crush.osds[req.osd]
        return pb.HeartbeatReply(up=o.up, epoch=self.cluster.monitor.epoch, **{"in": o.in_})

    def tick(self) -> None:
        now = self.clock.now()
        changed = []
        silent = self.timing.heartbeat_interval * SILENT_AFTER
        for osd in sorted(self.addresses):
            if osd in self.stopping:
                self.stopping.discard(osd)
                self.alive[osd], self.dead_since[osd] = False, now
                changed += self.cluster.osd_stopped(osd, now, clean=True)
            elif self.alive[osd] and now - self.last_hb[osd] > silent and \
                    now - self.started > self.timing.heartbeat_grace:
                self.alive[osd], self.dead_since[osd] = False, now
                log.info("osd.%d silent for %.1f s (twin)", osd, now - self.last_hb[osd])
                changed += self.cluster.osd_stopped(osd, self.last_hb[osd])
            elif not self.alive[osd] and self.last_hb[osd] > self.dead_since[osd]:
                self.alive[osd] = True
                changed += self.cluster.osd_started(osd, now)
        changed += self.cluster.tick(now)
        for c in changed:
            log.info("e%d: osd.%d %s (%s)", c.epoch, c.osd, c.what, c.reason)
        recovered = 0
        if any(pg.missing or pg.targets for pg in self.cluster.pgs.values()):
            try:
                recovered = self.cluster.recover(RECOVERY_BATCH)
            except CephError as e:
                log.warning("recovery: %s", e.message)
            failures = self.store.flush()
            if failures:
                self._report_failures(failures)
        if changed or recovered:
            self.state.save_map(self.cluster)
        self._publish_changes(now)

    # -- the bus -----------------------------------------------------------------------------

    def publish(self, kind: str, payload: dict[str, Any], topic: str | None = None, retain: bool = False) -> None:
        """Thread-safe: model work runs in worker threads, the publisher on the event loop."""
        if self.bus is None or self.loop is None:
            return
        topic = topic or bus.event_topic(self.cfg.twin, "ceph", kind)
        self.loop.call_soon_threadsafe(self.bus.publish, topic, payload, 1, retain)

    def _publish_changes(self, now: float) -> None:
        """OSD up/down/in/out and PG state changes since the last pass, as bus events."""
        c = self.cluster
        for o in c.crush.osds.values():
            was = self._osd_view.get(o.id)
            if was is None or was == (o.up, o.in_):
                continue
            self._osd_view[o.id] = (o.up, o.in_)
            if was[0] != o.up:
                kind = "osd_up" if o.up else "osd_down"
                self.publish(kind, {"time": now, "node": "ceph", "kind": kind, "osd": o.id, "host": o.host,
                                    "epoch": c.monitor.epoch, "message": f"osd.{o.id} marked {kind[4:]}"})
            if was[1] != o.in_:
                kind = "osd_in" if o.in_ else "osd_out"
                self.publish(kind, {"time": now, "node": "ceph", "kind": kind, "osd": o.id, "host": o.host,
                                    "epoch": c.monitor.epoch, "message": f"osd.{o.id} marked {kind[4:]}"})
        for pgid, st in c.pg_states().items():
            key, text_ = str(pgid), state_string(st)
            old = self._pg_view.get(key)
            if old != text_:
                self._pg_view[key] = text_
                self.publish("pg_state", {"time": now, "node": "ceph", "kind": "pg_state", "pg": key, "from": old,
                                          "to": text_, "epoch": c.monitor.epoch,
                                          "message": f"pg {key}: {old} -> {text_}"})

    # -- faults (the twin's fault API) -----------------------------------------------------

    def record_fault(self, f: pb.CephFault) -> pb.CephFault:
        if f.osd not in self.addresses:
            raise CephError("NOT_FOUND", f"osd.{f.osd} does not exist")
        if f.kind not in ("stop", "kill", "slow", "corrupt", "out"):
            raise CephError("INVALID_ARGUMENT", f"unknown OSD fault kind {f.kind!r}")
        now = self.clock.now()
        n = 1 + sum(1 for x in self.faults.values() if x["osd"] == f.osd)
        doc = {"id": f.id or f"osd.{f.osd}-{n}", "kind": f.kind, "osd": f.osd, "factor": f.factor, "pool": f.pool,
               "object": f.object, "injected_at": now, "active": f.kind != "kill",
               "cleared_at": now if f.kind == "kill" else 0.0, "effect": f.effect}
        save_doc(self.state, f"fault:{doc['id']}", doc)
        self.faults[doc["id"]] = doc
        self._publish_fault(doc, "fault")
        return pb.CephFault(**doc)

    def clear_fault(self, fault_id: str) -> pb.CephFault:
        doc = self.faults.get(fault_id)
        if doc is None:
            raise CephError("NOT_FOUND", f"no Ceph fault {fault_id!r} (see `twin fault list`)")
        if not doc["active"]:
            raise CephError("FAILED_PRECONDITION", f"fault {fault_id} is not active")
        doc["active"], doc["cleared_at"] = False, self.clock.now()
        save_doc(self.state, f"fault:{fault_id}", doc)
        self._publish_fault(doc, "fault_clear")
        return pb.CephFault(**doc)

    def _publish_fault(self, doc: dict[str, Any], kind: str) -> None:
        ev = {"time": self.clock.now(), "node": "ceph", "kind": kind, "osd": doc["osd"], "fault": doc,
              "message": f"osd.{doc['osd']} {doc['kind']}: {doc['effect']}" if kind == "fault"
              else f"osd.{doc['osd']} {doc['kind']} cleared"}
        self.publish(kind, ev)
        topic = bus.fault_topic(self.cfg.twin, "ceph", doc["id"])
        self.publish(kind, doc, topic=topic, retain=bool(doc["active"]))
        if not doc["active"]:
            self.publish(kind, b"", topic=topic, retain=True)   # type: ignore[arg-type]  # drop the retained copy

    async def map_loop(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            try:
                await asyncio.to_thread(self.locked, self.tick)
            except Exception:  # noqa: BLE001 - the loop must outlive one bad pass
                log.exception("map loop")

    # -- RADOS object I/O --------------------------------------------------------------------

    def put_object(self, pool: str, name: str, data: bytes) -> str:
        """A write under the lock (RBD, which holds it for a whole image operation)."""
        self.cluster.put(pool, name, data)
        return self._finish_put(pool, name, self.store.flush())

    def put_objects(self, pool: str, items: list[tuple[str, bytes]]) -> None:
        """Several objects' chunk writes in flight at once (RBD's extent), under the lock."""
        for name, data in items:
            self.cluster.put(pool, name, data)
        failures = self.store.flush()
        first: CephError | None = None
        for name, _ in items:
            try:
                self._finish_put(pool, name, [f for f in failures if f.key[1] == name])
            except CephError as e:
                first = first or e
        if first is not None:
            raise first

    def get_objects(self, pool: str, names: list[str]) -> dict[str, bytes]:
        """Several existing objects, every chunk fetched at once, under the lock."""
        c = self.cluster
        pairs = []
        for name in names:
            pg = c.locate(pool, name)
            info = pg.objects.get(name)
            if info is not None and pg.state(c.is_up) & PgState.ACTIVE:
                pairs += [(pg.acting[p], info.chunk_key(pg.pgid, p))
                          for p in pg.readable_shards(name, c.is_up)[: pg.pool.k]]
        self.store.prefetch(pairs)
        return {name: c.get(pool, name) for name in names}

    def put_object_concurrent(self, pool: str, name: str, data: bytes) -> str:
        """The gateway's write: encode and start the chunk writes under the lock, wait for the OSDs
        without it (other objects' I/O proceeds meanwhile), then account for failures under it."""
        key = (pool, name)
        with self.cond:
            while key in self.inflight:
                self.cond.wait()
            try:
                self.cluster.put(pool, name, data)
            except BaseException:
                self.store.flush()
                failures = self.store.take_failures()
                if failures:
                    self._report_failures(failures)
                raise
            self.inflight.add(key)
        try:
            failures = self.store.flush()
        except BaseException:
            with self.cond:
                self.inflight.discard(key)
                self.cond.notify_all()
            raise
        with self.cond:
            self.inflight.discard(key)
            self.cond.notify_all()
            try:
                return self._finish_put(pool, name, failures)
            finally:
                late = self.store.take_failures()
                if late:
                    self._report_failures(late)

    def get_object_concurrent(self, pool: str, name: str) -> tuple[bytes, str]:
        """The gateway's read: k shards (data shards first, as Ceph reads) fetched without the lock and
        checked against their CRCs; anything less than k good ones falls back to the locked read,
        which reads every shard, decodes, and reports OSDs that failed."""
        key = (pool, name)
        with self.cond:
            while key in self.inflight:
                self.cond.wait()
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
            got = self.store.fetch([(osd, ck) for _, osd, ck in pairs])   # type: ignore[misc]
            good = {p: got[i] for i, (p, _, _) in enumerate(pairs)
                    if isinstance(got[i], bytes) and chunk_crc(got[i]) == info.crcs[p]}  # type: ignore[union-attr]
            if len(good) >= k:
                return codec.decode(good, info.size), pgid   # type: ignore[union-attr]
        return self.locked(lambda: self._get_waiting(pool, name))

    def _get_waiting(self, pool: str, name: str) -> tuple[bytes, str]:
        while (pool, name) in self.inflight:
            self.cond.wait()
        return self.get_object(pool, name)

    def _finish_put(self, pool: str, name: str, failures: list[Failure]) -> str:
        c = self.cluster
        pg = c.locate(pool, name)
        pgid = pg.pgid
        if failures:
            for f in failures:
                if f.op == "put" and f.osd in pg.acting:
                    pg.missing.setdefault(f.key[2], set()).add(name)
            self._report_failures(failures)
        self.state.save_object(pg, name)
        if failures and not pg.state(c.is_up) & PgState.ACTIVE:
            raise PgUnavailable(str(pgid), state_string(pg.state(c.is_up)),
                                "OSDs failed during the write; it is retried when the PG is active")
        return str(pgid)

    def get_object(self, pool: str, name: str) -> tuple[bytes, str]:
        c = self.cluster
        pg = c.locate(pool, name)
        info = pg.objects.get(name)
        if info is not None and pg.state(c.is_up) & PgState.ACTIVE:
            self.store.prefetch([(pg.acting[p], info.chunk_key(pg.pgid, p))
                                 for p in pg.readable_shards(name, c.is_up)[: pg.pool.k]])
        return c.get(pool, name), str(pg.pgid)

    def remove_object(self, pool: str, name: str) -> bool:
        while (pool, name) in self.inflight:
            self.cond.wait()
        pg = self.cluster.locate(pool, name)
        existed = name in pg.objects
        rados.remove(self.cluster, pool, name)
        self.store.flush()
        self.state.save_object(pg, name)
        return existed

    def list_objects(self, pool: str, prefix: str) -> list[pb.ObjectStat]:
        p = self.cluster.pool(pool)
        out = []
        for pgid, pg in self.cluster.pgs.items():
            if pgid.pool != p.id:
                continue
            out += [pb.ObjectStat(name=n, pg=str(pgid), size=o.size) for n, o in pg.objects.items()
                    if n.startswith(prefix)]
        return sorted(out, key=lambda o: o.name)

    # -- admin -------------------------------------------------------------------------------

    def status(self) -> pb.StatusReply:
        c, now = self.cluster, self.clock.now()
        osds = list(c.crush.osds.values())
        counts: dict[str, int] = {}
        for s in c.pg_states().values():
            counts[state_string(s)] = counts.get(state_string(s), 0) + 1
        usage = c.usage()
        return pb.StatusReply(text=ceph_status.status_text(c, now), health=health(c).status, osds=len(osds),
                              osds_up=sum(o.up for o in osds), osds_in=sum(o.in_ for o in osds), pg_states=counts,
                              epoch=c.monitor.epoch, stored_bytes=sum(u.stored for u in usage),
                              raw_bytes=sum(u.raw for u in usage), objects=sum(u.objects for u in usage))

    def osd_tree(self) -> pb.OsdTreeReply:
        c = self.cluster
        rows = [pb.OsdInfo(id=o.id, name=o.name, host=o.host, device_class=o.device_class, weight=o.weight,
                           up=o.up, address=self.addresses[o.id], used_bytes=self.store.used_bytes(o.id),
                           capacity_bytes=o.capacity_bytes, **{"in": o.in_})
                for o in sorted(c.crush.osds.values(), key=lambda o: o.id)]
        return pb.OsdTreeReply(text=osd_tree_text(c.crush), osds=rows)

    def osd_command(self, osd: int, command: str) -> pb.OsdCommandReply:
        c, now = self.cluster, self.clock.now()
        o = c.crush.osd(osd)   # NOT_FOUND for an unknown id
        if command == "out":
            msg = f"marked out osd.{osd}. " if c.mark_out(osd, now) else f"osd.{osd} is already out. "
        elif command == "in":
            msg = f"marked in osd.{osd}. " if c.mark_in(osd, now) else f"osd.{osd} is already in. "
        elif command == "down":
            if not o.up:
                msg = f"osd.{osd} is already down. "
            else:
                self.alive[osd], self.dead_since[osd] = False, now
                c.osd_stopped(osd, now, clean=True)
                msg = f"marked down osd.{osd}. "
        else:
            raise CephError("INVALID_ARGUMENT", f"unknown osd command {command!r}; use out, in or down")
        self.state.save_map(c)
        return pb.OsdCommandReply(message=msg, epoch=c.monitor.epoch)

    def pools(self) -> pb.PoolsReply:
        out = []
        for u in self.cluster.usage():
            p = u.pool
            out.append(pb.PoolInfo(id=p.id, name=p.name, type=p.type, size=p.size, min_size=p.min_size,
                                   pg_num=p.pg_num, device_class=p.device_class or "", failure_domain=p.failure_domain,
                                   codec=self.cluster.codecs[p.id].describe(), objects=u.objects,
                                   stored_bytes=u.stored, raw_bytes=u.raw))
        return pb.PoolsReply(pools=out)

    def pgs(self, req: pb.PgsRequest) -> pb.PgsReply:
        c = self.cluster
        if req.object:
            if not req.pool:
                raise CephError("INVALID_ARGUMENT", "an object needs its pool")
            chosen = [c.locate(req.pool, req.object)]
        elif req.pg:
            chosen = [c._pg(PgId.parse(req.pg))]
        else:
            pid = c.pool(req.pool).id if req.pool else None
            chosen = [pg for pgid, pg in sorted(c.pgs.items()) if pid is None or pgid.pool == pid]

        def ids(xs: list[int | None], live: bool) -> list[int]:
            return [CRUSH_ITEM_NONE if o is None or (live and not c.is_up(o)) else o for o in xs]

        return pb.PgsReply(pgs=[pb.PgInfo(pgid=str(pg.pgid), state=state_string(pg.state(c.is_up)),
                                          up=ids(pg.up, False), acting=ids(pg.acting, True),
                                          objects=len(pg.objects), bytes=pg.stored_bytes(),
                                          unfound=pg.unfound(c.is_up)) for pg in chosen])

    def user_create(self, u: pb.RgwUser) -> pb.RgwUser:
        uid, tenant = u.uid.strip(), u.tenant.strip()
        if not uid or any(ch in uid for ch in "$:/ ") or len(uid) > 64:
            raise CephError("INVALID_ARGUMENT", f"bad uid {u.uid!r}: 1-64 characters, none of '$', ':', '/', ' '")
        if tenant and not all(ch.isalnum() or ch in "_-" for ch in tenant):
            raise CephError("INVALID_ARGUMENT", f"bad tenant {u.tenant!r}: letters, digits, '_' and '-' only")
        if not u.display_name.strip():
            raise CephError("INVALID_ARGUMENT", "no display name specified (--display-name)")
        if bool(u.access_key) != bool(u.secret_key):
            raise CephError("INVALID_ARGUMENT", "give both --access-key and --secret, or neither")
        if any(x["uid"] == uid and x["tenant"] == tenant for x in self.users.values()):
            full = f"{tenant}${uid}" if tenant else uid
            raise CephError("ALREADY_EXISTS", f"could not create user: unable to create user, user: {full} exists")
        access = u.access_key or "".join(secrets.choice(string.ascii_uppercase + string.digits) for _ in range(20))
        secret = u.secret_key or "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(40))
        if access in self.users:
            raise CephError("ALREADY_EXISTS", f"could not create user: access key {access} is already in use")
        row = {"uid": uid, "display_name": u.display_name.strip(), "email": u.email.strip(), "tenant": tenant,
               "access_key": access, "secret_key": secret}
        self.state.save_user(row)
        self.users[access] = row
        return pb.RgwUser(**row)

    def scrub(self, pg: str, repair: bool) -> pb.ScrubReply:
        c = self.cluster
        pgids = [PgId.parse(pg)] if pg else sorted(p for p, x in c.pgs.items() if x.objects)
        errors: list[Any] = []
        repaired = 0
        while self.inflight:   # a write in flight would look like a CRC mismatch
            self.cond.wait()
        for pgid in pgids:
            found = c.deep_scrub(pgid)
            errors += found
            if repair and found:
                repaired += c.repair(pgid)
                self.store.flush()
        return pb.ScrubReply(errors=[pb.ScrubError(pg=str(e.pgid), object=e.object, shard=e.shard, osd=e.osd,
                                                   problem=e.problem) for e in errors],
                             repaired=repaired, pgs=len(pgids))

    def corrupt_chunk(self, req: pb.CorruptChunkRequest) -> pb.CorruptChunkReply:
        pg = self.cluster.locate(req.pool, req.object)
        info = pg.objects.get(req.object)
        if info is None:
            raise CephError("NOT_FOUND", f"object {req.object!r} not in pool {req.pool}")
        if req.osd < 0:
            pos = 0
        elif req.osd in pg.acting:
            pos = pg.acting.index(req.osd)
        else:
            raise CephError("INVALID_ARGUMENT", f"osd.{req.osd} holds no shard of {req.object!r} "
                                                f"(pg {pg.pgid} acting {pg.acting})")
        osd = pg.acting[pos]
        if osd is None:
            raise CephError("FAILED_PRECONDITION", f"shard {pos} of {req.object!r} has no OSD")
        self.store.corrupt(osd, info.chunk_key(pg.pgid, pos), req.offset)
        return pb.CorruptChunkReply(pg=str(pg.pgid), shard=pos, osd=osd)


class MonServicer(pb_grpc.CephMonServicer):
    def __init__(self, d: MonDaemon) -> None:
        self.d = d

    async def _run(self, context: grpc.aio.ServicerContext, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(self.d.locked, fn)
        except CephError as e:
            await context.abort(getattr(grpc.StatusCode, e.code), e.message)
        except ValueError as e:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        raise AssertionError("unreachable")

    async def Heartbeat(self, request, context):  # noqa: ANN001, ANN201, N802
        try:
            return self.d.heartbeat(request)
        except CephError as e:
            await context.abort(getattr(grpc.StatusCode, e.code), e.message)

    async def _free(self, context: grpc.aio.ServicerContext, fn: Callable[[], T]) -> T:
        """Like `_run`, for the calls that take the lock themselves (only while touching the model)."""
        try:
            return await asyncio.to_thread(fn)
        except CephError as e:
            await context.abort(getattr(grpc.StatusCode, e.code), e.message)
        raise AssertionError("unreachable")

    async def PutObject(self, request, context):  # noqa: ANN001, ANN201, N802
        pgid = await self._free(context, lambda: self.d.put_object_concurrent(request.pool, request.name,
                                                                               request.data))
        return pb.PutObjectReply(pg=pgid)

    async def GetObject(self, request, context):  # noqa: ANN001, ANN201, N802
        data, pgid = await self._free(context, lambda: self.d.get_object_concurrent(request.pool, request.name))
        return pb.GetObjectReply(data=data, pg=pgid)

    async def RemoveObject(self, request, context):  # noqa: ANN001, ANN201, N802
        existed = await self._run(context, lambda: self.d.remove_object(request.pool, request.name))
        return pb.RemoveObjectReply(existed=existed)

    async def ListObjects(self, request, context):  # noqa: ANN001, ANN201, N802
        rows = await self._run(context, lambda: self.d.list_objects(request.pool, request.prefix))
        return pb.ListObjectsReply(objects=rows)

    async def Status(self, request, context):  # noqa: ANN001, ANN201, N802
        return await self._run(context, self.d.status)

    async def HealthDetail(self, request, context):  # noqa: ANN001, ANN201, N802
        return pb.TextReply(text=await self._run(context, lambda: ceph_status.health_detail_text(self.d.cluster)))

    async def Df(self, request, context):  # noqa: ANN001, ANN201, N802
        return pb.TextReply(text=await self._run(context, lambda: ceph_status.df_text(self.d.cluster)))

    async def OsdTree(self, request, context):  # noqa: ANN001, ANN201, N802
        return await self._run(context, self.d.osd_tree)

    async def OsdCommand(self, request, context):  # noqa: ANN001, ANN201, N802
        return await self._run(context, lambda: self.d.osd_command(request.osd, request.command))

    async def Pools(self, request, context):  # noqa: ANN001, ANN201, N802
        return await self._run(context, self.d.pools)

    async def Pgs(self, request, context):  # noqa: ANN001, ANN201, N802
        return await self._run(context, lambda: self.d.pgs(request))

    async def UserCreate(self, request, context):  # noqa: ANN001, ANN201, N802
        return await self._run(context, lambda: self.d.user_create(request.user))

    async def UserList(self, request, context):  # noqa: ANN001, ANN201, N802
        return pb.UserListReply(users=[pb.RgwUser(**u) for u in sorted(self.d.users.values(),
                                                                       key=lambda u: (u["tenant"], u["uid"]))])

    async def Scrub(self, request, context):  # noqa: ANN001, ANN201, N802
        return await self._run(context, lambda: self.d.scrub(request.pg, request.repair))

    async def CorruptChunk(self, request, context):  # noqa: ANN001, ANN201, N802
        return await self._run(context, lambda: self.d.corrupt_chunk(request))

    async def RecordFault(self, request, context):  # noqa: ANN001, ANN201, N802
        return await self._run(context, lambda: self.d.record_fault(request.fault))

    async def ClearFault(self, request, context):  # noqa: ANN001, ANN201, N802
        return await self._run(context, lambda: self.d.clear_fault(request.id))

    async def ListFaults(self, request, context):  # noqa: ANN001, ANN201, N802
        rows = sorted(self.d.faults.values(), key=lambda f: f["injected_at"])
        return pb.FaultListReply(faults=[pb.CephFault(**f) for f in rows if f["active"] or request.include_cleared])


async def _serve(cfg: DaemonConfig) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.set_default_executor(ThreadPoolExecutor(MON_THREADS, thread_name_prefix="mon"))
    d = MonDaemon(cfg)
    d.loop = loop
    d.bus = bus.Publisher(cfg.broker_host, cfg.broker_port, client_id=f"{cfg.twin}/{cfg.name}",
                          status_topic=bus.status_topic(cfg.twin, cfg.name))
    rbd = RbdServicer(d, op_timeout=float(cfg.extra.get("op_timeout", 30.0)))
    server, health_srv = await start_server(cfg.grpc, [(pb_grpc.add_CephMonServicer_to_server, MonServicer(d),
                                                        SERVICE_NAME),
                                                       (pb_grpc.add_CephRbdServicer_to_server, rbd,
                                                        "clustertwin.v1.CephRbd")], options=CHANNEL_OPTIONS)
    task = asyncio.create_task(d.map_loop(), name="map")
    bus_task = asyncio.create_task(d.bus.run(), name="bus")
    log.info("%s serving CephMon on %s (clock scale %g)", cfg.name, cfg.grpc, cfg.clock_scale)
    await stop.wait()
    task.cancel()
    await d.bus.close(timeout=0.5)
    bus_task.cancel()
    await health_srv.enter_graceful_shutdown()
    await server.stop(grace=1.0)
    with d.lock:
        d.state.save_map(d.cluster)
    d.store.close()


def run(cfg: DaemonConfig) -> None:
    asyncio.run(_serve(cfg))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m services.ceph.mon.daemon CONFIG.json")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    run(DaemonConfig.from_file(Path(sys.argv[1])))

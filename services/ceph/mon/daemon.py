"""The Ceph monitor daemon: one per twin, serving `clustertwin.v1.CephMon` and `CephRbd`.

Wires the pure model (model.py: the Cluster's maps, epochs, OSD up/in, PG states, the fault log,
RGW users) to the outside: the gRPC services (servicer.py, rbd_service.py), the store (store.py:
everything acknowledged is committed first, so a kill -9 loses nothing), the OSD daemons' chunk
I/O (RemoteChunkStore, through objects.py) and the bus. A background loop, every TICK_S wall
seconds, acts on heartbeats and silences, runs the map's timers (down → out, in twin time), and
recovery and backfill (a batch of object shards per pass) while a PG has stale shards or targets.

The bus (emulator/bus.py): OSD up/down/in/out and PG state changes on `events/ceph/<kind>` (osd_up,
osd_down, osd_in, osd_out, pg_state), and the OSD faults the twin's fault API records on
`events/ceph/fault` / `fault_clear` and, retained while active, `faults/ceph/<id>`.

    python -m services.ceph.mon.daemon CONFIG.json      # normally forked by the supervisor

DaemonConfig fields read: name, grpc, store_url, clock_epoch/clock_scale, and
    spec.osds     [{id, host, device_class, capacity_bytes, grpc}] of every OSD daemon
    spec.ec       {k, m, failure_domain} of the RGW data pool (default 8, 3, host)
    spec.replicated  {size, failure_domain} of the index and RBD pools (default 3, host)
    spec.pg_num   PGs of the data pool (default 32)
    spec.timing   {heartbeat_interval, heartbeat_grace, down_out_interval} (Ceph's 6, 20, 600)
"""

from __future__ import annotations

import asyncio
import logging

from clustertwin.v1 import ceph_pb2_grpc as pb_grpc
from emulator import bus
from emulator.daemon import TwinDaemon, main
from emulator.daemon_config import DaemonConfig
from emulator.frame_rpc_server import FramedServer
from services.ceph.cluster import Cluster
from services.ceph.crush import CrushMap
from services.ceph.daemon_spec import MonSpec
from services.ceph.errors import CephError
from services.ceph.events import EventLog
from services.ceph.mon.model import Event, MonModel
from services.ceph.mon.objects import ObjectIo
from services.ceph.mon.rbd_service import RbdServicer
from services.ceph.mon.servicer import MonServicer
from services.ceph.mon.store import MonStore
from services.ceph.monitor import MonTiming
from services.ceph.msgr import mon_framed_address
from services.ceph.pool import erasure_pool, replicated_pool
from services.ceph.remote_chunkstore import CHANNEL_OPTIONS, Failure, RemoteChunkStore

log = logging.getLogger("ceph_mon")

SERVICE_NAME = "clustertwin.v1.CephMon"
RBD_SERVICE_NAME = "clustertwin.v1.CephRbd"
DATA_POOL = "default.rgw.buckets.data"
INDEX_POOL = "default.rgw.buckets.index"
RBD_POOL = "rbd"
TICK_S = 0.1                 # wall seconds between passes of the map/recovery loop
RECOVERY_BATCH = 16          # object shards per recovery pass
MON_THREADS = 32             # concurrent RPCs in worker threads (asyncio's default is cpu + 4)


def build_cluster(cfg: DaemonConfig, store: RemoteChunkStore, now: float) -> Cluster:
    x = MonSpec.of(cfg)
    crush = CrushMap()
    for o in sorted(x.osds, key=lambda o: o.id):
        crush.add_osd(o.id, o.host, o.device_class, capacity_bytes=o.capacity_bytes)
    ec, rep = x.ec, x.replicated
    ssd = "ssd" if any(o.device_class == "ssd" for o in crush.osds.values()) else None
    pools = [erasure_pool(1, DATA_POOL, k=ec.k, m=ec.m, pg_num=x.pg_num, failure_domain=ec.failure_domain),
             replicated_pool(2, INDEX_POOL, size=rep.size, pg_num=8, device_class=ssd,
                             failure_domain=rep.failure_domain, application="rgw"),
             replicated_pool(3, RBD_POOL, size=rep.size, pg_num=8, device_class=ssd,
                             failure_domain=rep.failure_domain, application="rbd")]
    timing = MonTiming(**x.timing.model_dump())
    return Cluster(crush, pools, store, name=cfg.twin, timing=timing, now=now)


class MonDaemon(TwinDaemon):
    worker_threads = MON_THREADS
    thread_name = "mon"

    def __init__(self, cfg: DaemonConfig) -> None:
        super().__init__(cfg)
        self.framed = FramedServer()
        now = self.clock.now()
        self.addresses = {o.id: o.grpc for o in MonSpec.of(cfg).osds}
        # The monitor's own chunk I/O (the bucket index, removals, recovery) stays on the OSDs' gRPC
        # ChunkStream: with a messenger thread per OSD beside its event loop, its heartbeat answers came
        # late enough under load for OSDs to flap at --clock-scale 10 (the chaos run lost S3 reads).
        self.chunks = RemoteChunkStore(self.addresses)
        cluster = build_cluster(cfg, self.chunks, now)
        self.store = MonStore(cfg.store_url)
        restored = self.store.load(cluster)
        if not restored:
            self.store.save_map(cluster)
        self.model = MonModel(cluster, self.addresses, now, faults=self.store.faults(), users=self.store.users())
        self.io = ObjectIo(cluster, self.chunks, self.store, self.clock, self.osds_failed)
        self.bus = bus.Publisher(cfg.broker_host, cfg.broker_port, cfg.twin, cfg.name)
        self.events = EventLog()   # for CephMon.WatchEvents: what goes on the bus
        log.info("monitor: %d OSDs, %d pools, %d PGs (%s)", len(self.addresses), len(cluster.pools),
                 len(cluster.pgs), "restored from store" if restored else "new cluster")

    @property
    def cluster(self) -> Cluster:
        return self.model.cluster

    def osds_failed(self, failures: list[Failure]) -> None:
        """Under the lock: OSDs that failed a chunk call are marked down at once, and the map saved."""
        for osd in self.model.osds_failed([f.osd for f in failures], self.clock.now()):
            why = next(f.why for f in failures if f.osd == osd)
            log.warning("osd.%d failed a chunk call (%s): marking it down", osd, why)
        self.store.save_map(self.cluster)

    def tick(self) -> list[Event]:
        """One pass of the map loop, under the lock; returns the events to publish."""
        now = self.clock.now()
        changed = self.model.tick(now)
        for c in changed:
            log.info("e%d: osd.%d %s (%s)", c.epoch, c.osd, c.what, c.reason)
        recovered = 0
        if any(pg.missing or pg.targets for pg in self.cluster.pgs.values()):
            try:
                recovered = self.cluster.recover(RECOVERY_BATCH)
            except CephError as e:
                log.warning("recovery: %s", e.message)
            failures = self.chunks.flush()
            if failures:
                self.osds_failed(failures)
        if changed or recovered:
            self.store.save_map(self.cluster)
        self.model.map_events(now)
        return self.model.take_events()

    def publish(self, events: list[Event]) -> None:
        """On the event loop: each event, and the fault record a fault event carries."""
        for ev in events:
            self.bus.event("ceph", ev.kind, ev.payload, time=ev.time, message=ev.message)
            self.events.add(ev.kind, ev.time, ev.message, **ev.payload)
            if ev.fault is not None:
                self.bus.fault("ceph", ev.fault)

    async def map_loop(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            try:
                self.publish(await asyncio.to_thread(self.io.locked, self.tick))
            except Exception:  # noqa: BLE001 - the loop must outlive one bad pass
                log.exception("map loop")

    async def start(self) -> None:
        mon = MonServicer(self.model, self.io, self.store, self.chunks, self.addresses, self.clock.now, self.publish,
                          self.events)
        rbd = RbdServicer(self.io, op_timeout=MonSpec.of(self.cfg).op_timeout)
        await self.start_grpc([(pb_grpc.add_CephMonServicer_to_server, mon, SERVICE_NAME),
                               (pb_grpc.add_CephRbdServicer_to_server, rbd, RBD_SERVICE_NAME)], options=CHANNEL_OPTIONS)
        self.framed.add(pb_grpc.add_CephMonServicer_to_server, mon)   # the gateway's calls (frame_rpc.py)
        await self.framed.start(*mon_framed_address(self.cfg.grpc))
        self.background(self.map_loop(), "map")
        log.info("%s serving CephMon on %s (clock scale %g)", self.cfg.name, self.cfg.grpc, self.cfg.clock_scale)

    async def close(self) -> None:
        await self.framed.close()
        with self.io.lock:
            self.store.save_map(self.cluster)
        self.chunks.close()
        self.store.close()


run = MonDaemon.run


if __name__ == "__main__":
    main("services.ceph.mon.daemon", run)

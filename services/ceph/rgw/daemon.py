"""The RGW gateway as a twin daemon: the S3 endpoint (`http.py` + the pure `Gateway`) over the
monitor daemon's cluster.

Design (the simplest correct one): the gateway holds no Cluster of its own. `MonCluster` (mon_client.py) gives
`Gateway` the `put`/`get` it calls (and `remove_object`, which `rados.remove` uses) as calls to
the monitor's `CephMon` RADOS methods; the monitor is the one place that holds every object's
metadata. The data pool's chunks go straight between the gateway and the OSDs, as librados moves
them (direct_io.py): a write puts each shard on the OSD of the PG's write plan and then commits the
object to the monitor; a read fetches the data chunks where the placement is still good, through the
monitor otherwise. The other pools' objects (the bucket index) go through the monitor, which writes
them to the OSDs (RemoteChunkStore). A PG that is not active comes back as
UNAVAILABLE, so the gateway's own loop waits up to `op_timeout` (twin seconds) and answers 503, as
RGW does. An unreachable monitor is UNAVAILABLE too.

Users come from the monitor (`twin ceph user create`), fetched again whenever a request names an
access key not yet known. With `spec.users_file` (`twin up --ceph --ceph-users FILE`) the gateway
first creates that file's users through the monitor (services/ceph/users_file.py; a user already
there with the same access key is left as it is, so a restart is harmless).

The gateway's state is rebuilt at start-up from what it wrote to the index pool (restore.py:
bucket records with versioning, ACL and policy, one entry per object version, the `.meta` record of
each multipart upload in progress), so a kill -9 of the gateway loses no acknowledged object or
part and shows no half-written object: an object's index entry is written only after all its data
(RGW's order); unreferenced data left by an interrupted upload stays as orphans in the data pool
(RGW's gc would remove them).

    python -m services.ceph.rgw.daemon CONFIG.json      # normally forked by the supervisor

DaemonConfig fields read: name, grpc (gRPC health only), clock_epoch/clock_scale, and
    spec.mon          HOST:PORT of the monitor's CephMon service
    extra["s3"]           HOST:PORT of the S3 endpoint (RGW's default port is 7480)
    spec.op_timeout   twin seconds a RADOS op waits for an inactive PG before a 503 (default 30)
    spec.zone         RGW zone name (default "default")
    spec.users_file   JSON/YAML users to create at start-up (optional)
    spec.osds, spec.ec the OSDs' messenger addresses and the data pool's k+m: its chunk I/O goes
                      straight to the OSDs (direct_io.py)

Concurrency: the daemon's gateway makes its RADOS calls without the store's lock (the lock guards the
pure Cluster model, which this daemon does not have; the monitor orders concurrent object I/O
itself), and each S3 connection is served on a thread of its own (http.py).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time

from emulator.daemon import main, stop_event
from emulator.daemon_config import DaemonConfig, split_hostport
from emulator.grpc_server import start_server
from services.ceph.daemon_spec import RgwSpec
from services.ceph.errors import CephError
from services.ceph.memtune import tune_malloc
from services.ceph.rgw import lifecycle
from services.ceph.rgw.direct_io import DirectIo
from services.ceph.rgw.gateway import Gateway
from services.ceph.rgw.http import HttpServer
from services.ceph.rgw.mon_client import MonCluster, MonUsers, seed_users
from services.ceph.rgw.restore import restore

log = logging.getLogger("ceph_rgw")
# RGW sends an overwritten object's tails to its gc thread rather than removing them in the request:
# after `rgw_gc_obj_min_wait` (2 h), in passes every `rgw_gc_processor_period` (1 h). The twin names a
# head per upload, so its old head goes the same way; deletes still remove in the request. Its gc runs
# a pass every second, so space comes back as soon as a test looks, while an overwrite no longer waits
# for the removal (a quarter of a 4 KiB overwrite's CPU, batched here over a second of requests). What
# is queued at a kill -9 stays as orphans (RGW keeps its gc log in RADOS).
GC_PERIOD_S = 1.0

DATA_POOL = "default.rgw.buckets.data"
INDEX_POOL = "default.rgw.buckets.index"


async def _serve(cfg: DaemonConfig) -> None:
    stop = stop_event()
    x = RgwSpec.of(cfg)
    direct = DirectIo(x.osds, x.ec.k, x.ec.m) if x.osds else None
    cluster = MonCluster(x.mon, direct=direct, direct_pool=DATA_POOL)
    while True:   # the monitor may still be starting
        try:
            made = await asyncio.to_thread(seed_users, cluster, x.users_file)
            if made:
                log.info("created %d RGW users from %s", made, x.users_file)
            users = await asyncio.to_thread(MonUsers, cluster)
            # RADOS calls need no store lock: MonCluster is thread-safe and the monitor serialises what must be
            gw = Gateway(cluster, users, DATA_POOL, INDEX_POOL, zone=x.zone,  # type: ignore[arg-type]
                         op_timeout=x.op_timeout, clock=cfg.clock.now, rados_lock=False)
            restored, uploads = await asyncio.to_thread(restore, gw.store, cluster, users)
            break
        except CephError as e:
            log.info("waiting for the monitor at %s: %s", x.mon, e.message)
            try:
                await asyncio.wait_for(stop.wait(), 0.5)
                return
            except TimeoutError:
                continue
    host, port = split_hostport(x.s3)
    http = HttpServer(gw, host, port)
    threading.Thread(target=http.serve_forever, name="rgw-http", daemon=True).start()
    server, health = await start_server(cfg.grpc, [])
    log.info("%s: S3 on http://%s, %d buckets, %d object versions and %d multipart uploads restored from the "
             "index pool", cfg.name, x.s3, len(gw.buckets), restored, uploads)
    # Objects carry wall-clock times; a lifecycle day is a twin day (or the debug interval) in wall seconds.
    day = float(x.lc_debug_interval or lifecycle.DAY) / cfg.clock.scale
    passes = asyncio.create_task(_lifecycle_passes(gw, day, stop))
    gw.store.defer_gc = True
    gc = asyncio.create_task(_gc_passes(gw, stop))
    await stop.wait()
    await passes
    await gc
    await health.enter_graceful_shutdown()
    await server.stop(grace=1.0)
    await asyncio.to_thread(http.close)
    cluster.close()
    if direct is not None:
        direct.close()


async def _gc_passes(gw: Gateway, stop: asyncio.Event) -> None:
    """RGW's gc thread: a pass every `GC_PERIOD_S`, and a last one when the gateway stops."""
    while True:
        try:
            await asyncio.wait_for(stop.wait(), GC_PERIOD_S)
            stopping = True
        except TimeoutError:
            stopping = False
        try:
            await asyncio.to_thread(gw.store.gc_process)
        except Exception as e:  # noqa: BLE001 - the monitor away: what is queued stays for the next pass
            log.warning("gc pass failed: %s", e)
        if stopping:
            return


async def _lifecycle_passes(gw: Gateway, day: float, stop: asyncio.Event) -> None:
    """RGW's lifecycle worker: a pass every quarter day (at most hourly), until the gateway stops."""
    period = min(max(day / 4, 0.25), 3600.0)
    while True:
        try:
            await asyncio.wait_for(stop.wait(), period)
            return
        except TimeoutError:
            pass
        try:
            done = await asyncio.to_thread(lifecycle.run, gw.store, time.time(), day)
        except Exception as e:  # noqa: BLE001 - the monitor away, a PG inactive: the next pass tries again
            log.warning("lifecycle pass failed: %s", e)
            continue
        for bucket, r in done.items():
            if r.expired or r.noncurrent or r.markers or r.aborted:
                log.info("lifecycle %s: %d objects expired, %d noncurrent versions and %d delete markers removed, "
                         "%d uploads aborted", bucket, len(r.expired), len(r.noncurrent), len(r.markers),
                         len(r.aborted))


def run(cfg: DaemonConfig) -> None:
    tune_malloc()  # 4 MiB stripes and their EC chunks reuse heap memory (Ceph links tcmalloc)
    asyncio.run(_serve(cfg))


if __name__ == "__main__":
    main("services.ceph.rgw.daemon", run)

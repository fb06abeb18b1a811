"""The OSD daemon: one process per Ceph OSD, its chunks in its own data directory.

Serves `clustertwin.v1.CephOsd` (with health and reflection): chunk put/get/delete/list, stat,
and faults (corrupt a chunk, slow disk, stop/start). Every chunk call takes the time the device
model (`device.py`) gives it, one call at a time per device. It heartbeats to the monitor every
`heartbeat_interval` twin seconds (the twin's clock, so `--clock-scale` shortens it).

A *stopped* OSD (`twin ceph osd stop`) tells the monitor it is going down (marked down at once,
as a clean `systemctl stop ceph-osd@N` does), refuses chunk I/O with UNAVAILABLE and stops
heartbeating; the state is a marker file in the data directory, so it stays stopped across a
kill -9 and the supervisor's restart, until `twin ceph osd start`. (The supervisor has no way to
keep one daemon stopped; this is that way.)

    python -m services.ceph.osd.daemon CONFIG.json      # normally forked by the supervisor

DaemonConfig fields read: name ("osd.N"), grpc, clock_epoch/clock_scale, and
    extra["osd"]               the OSD id
    extra["host"]              its Ceph host ("ceph03")
    extra["device_class"]      "hdd" or "ssd" (device.py)
    extra["capacity_bytes"]    nominal capacity
    extra["data_dir"]          where its chunks live
    extra["mon"]               HOST:PORT of the monitor's CephMon service
    extra["heartbeat_interval"]  twin seconds between heartbeats (default 6, Ceph's osd_heartbeat_interval)
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import grpc

from clustertwin.v1 import ceph_pb2 as pb
from clustertwin.v1 import ceph_pb2_grpc as pb_grpc
from emulator.daemon import main, stop_event
from emulator.daemon_config import DaemonConfig
from emulator.grpc_server import start_server
from services.ceph.errors import CephError, abort, ceph_call
from services.ceph.memtune import tune_malloc
from services.ceph.osd.device import model_for
from services.ceph.osd.filestore import FileChunkStore

log = logging.getLogger("ceph_osd")

SERVICE_NAME = "clustertwin.v1.CephOsd"
DEFAULT_HEARTBEAT_S = 6.0
MAX_MESSAGE = 64 << 20


def _key(k: pb.ChunkKey) -> tuple[str, str, int]:
    return (k.pg, k.object, k.shard)


class OsdServicer(pb_grpc.CephOsdServicer):
    def __init__(self, daemon: OsdDaemon) -> None:
        self.d = daemon

    async def _io(self, context: grpc.aio.ServicerContext, nbytes: int, fn):  # noqa: ANN001, ANN202
        d = self.d
        if d.store.stopped:
            await abort(context, CephError("UNAVAILABLE", f"osd.{d.osd} is stopped"))
        async with d.device_lock:
            t0 = time.monotonic()
            result = await ceph_call(context, asyncio.to_thread(fn))
            nbytes = nbytes if nbytes >= 0 else (len(result) if isinstance(result, bytes) else 0)
            modelled = d.model.seconds(nbytes, d.slow_factor)
            left = modelled - (time.monotonic() - t0)
            if left > 0:
                await asyncio.sleep(left)
            d.ops += 1
        return result, modelled

    async def PutChunk(self, request, context):  # noqa: ANN001, ANN201, N802
        key = _key(request.key)
        _, secs = await self._io(context, len(request.data), lambda: self.d.store.put(key, request.data))
        return pb.PutChunkReply(bytes=len(request.data), device_seconds=secs)

    async def GetChunk(self, request, context):  # noqa: ANN001, ANN201, N802
        key = _key(request.key)
        data, secs = await self._io(context, -1, lambda: self.d.store.get(key))
        if data is None:
            return pb.GetChunkReply(found=False, device_seconds=secs)
        return pb.GetChunkReply(found=True, data=data, device_seconds=secs)

    async def DeleteChunk(self, request, context):  # noqa: ANN001, ANN201, N802
        key = _key(request.key)
        existed, _ = await self._io(context, 0, lambda: self.d.store.delete(key))
        return pb.DeleteChunkReply(existed=existed)

    async def ListChunks(self, request, context):  # noqa: ANN001, ANN201, N802
        rows = self.d.store.keys(request.pg)
        return pb.ListChunksReply(chunks=[pb.ChunkInfo(key=pb.ChunkKey(pg=k[0], object=k[1], shard=k[2]), bytes=n)
                                          for k, n in rows])

    async def Stat(self, request, context):  # noqa: ANN001, ANN201, N802
        return self.d.stat()

    async def Corrupt(self, request, context):  # noqa: ANN001, ANN201, N802
        key = _key(request.key)
        n, _ = await self._io(context, 0, lambda: self.d.store.corrupt(key, request.offset))
        log.warning("osd.%d: corrupted chunk %s/%r shard %d at byte %d (fault)", self.d.osd, *key,
                    request.offset % max(n, 1))
        return pb.CorruptReply(bytes=n)

    async def SetFault(self, request, context):  # noqa: ANN001, ANN201, N802
        d = self.d
        if request.HasField("slow_factor"):
            if not request.slow_factor >= 1.0:
                await abort(context, CephError(
                    "INVALID_ARGUMENT", f"slow factor must be >= 1 (1 = healthy disk), got {request.slow_factor:g}"))
            d.set_slow(request.slow_factor)
        if request.HasField("stopped") and request.stopped != d.store.stopped:
            if request.stopped:
                await d.stop_osd()
            else:
                d.store.set_stopped(False)
                log.info("osd.%d started again", d.osd)
                d.wake.set()
        return d.stat()


class OsdDaemon:
    def __init__(self, cfg: DaemonConfig) -> None:
        self.cfg = cfg
        x = cfg.extra
        self.osd = int(x["osd"])
        self.host = x.get("host", "")
        self.model = model_for(x.get("device_class", "hdd"))
        self.capacity = int(x.get("capacity_bytes", 0))
        self.store = FileChunkStore(Path(x["data_dir"]))
        self.mon = x.get("mon")
        self.interval = float(x.get("heartbeat_interval", DEFAULT_HEARTBEAT_S))
        self.clock = cfg.clock
        self.boot_time = self.clock.now()
        self.device_lock = asyncio.Lock()
        self.ops = 0
        self.wake = asyncio.Event()
        slow = self.store.root / "slow_factor"
        self.slow_factor = float(slow.read_text()) if slow.exists() else 1.0

    def set_slow(self, factor: float) -> None:
        self.slow_factor = factor
        path = self.store.root / "slow_factor"
        if factor == 1.0:
            path.unlink(missing_ok=True)
        else:
            path.write_text(f"{factor}\n")
        log.warning("osd.%d: slow disk factor %g", self.osd, factor)

    def stat(self) -> pb.OsdStat:
        m = self.model
        return pb.OsdStat(osd=self.osd, host=self.host, state="stopped" if self.store.stopped else "running",
                          used_bytes=self.store.used_bytes(), chunks=len(self.store), capacity_bytes=self.capacity,
                          slow_factor=self.slow_factor, ops=self.ops, data_dir=str(self.store.root),
                          model=pb.DeviceModel(device_class=m.device_class, latency_s=m.latency_s,
                                               bandwidth_bytes_s=m.bandwidth_bytes_s))

    async def _beat(self, stopping: bool = False) -> None:
        if not self.mon:
            return
        req = pb.HeartbeatRequest(osd=self.osd, boot_time=self.boot_time, used_bytes=self.store.used_bytes(),
                                  stopping=stopping)
        try:
            await self.mon_stub.Heartbeat(req, timeout=max(1.0, self.clock.wall_seconds(self.interval)))
        except grpc.aio.AioRpcError as e:
            log.debug("heartbeat to %s failed: %s", self.mon, e.code())

    async def stop_osd(self) -> None:
        self.store.set_stopped(True)
        log.warning("osd.%d stopped: refusing I/O, no heartbeats, until `twin ceph osd start %d`", self.osd, self.osd)
        await self._beat(stopping=True)

    async def heartbeat_loop(self) -> None:
        while True:
            if not self.store.stopped:
                await self._beat()
            self.wake.clear()
            try:
                await asyncio.wait_for(self.wake.wait(), self.clock.wall_seconds(self.interval))
            except TimeoutError:
                pass

    async def serve(self) -> None:
        stop = stop_event()
        opts = [("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.max_send_message_length", MAX_MESSAGE)]
        # Reconnect fast to a restarted monitor (gRPC's default backoff starts at 1 s, more than the
        # heartbeat grace at a high --clock-scale).
        mon_opts = [*opts, ("grpc.initial_reconnect_backoff_ms", 100), ("grpc.min_reconnect_backoff_ms", 100),
                    ("grpc.max_reconnect_backoff_ms", 1000)]
        self.channel = grpc.aio.insecure_channel(self.mon, options=mon_opts) if self.mon else None
        self.mon_stub = pb_grpc.CephMonStub(self.channel) if self.channel else None
        server, health = await start_server(self.cfg.grpc, [(pb_grpc.add_CephOsdServicer_to_server,
                                                             OsdServicer(self), SERVICE_NAME)],
                                            options=opts)
        hb = asyncio.create_task(self.heartbeat_loop(), name="heartbeat")
        log.info("osd.%d (%s, %s) serving on %s, %d chunks in %s%s", self.osd, self.host, self.model.device_class,
                 self.cfg.grpc, len(self.store), self.store.root, " (STOPPED)" if self.store.stopped else "")
        await stop.wait()
        hb.cancel()
        await health.enter_graceful_shutdown()
        await server.stop(grace=1.0)
        if self.channel is not None:
            await self.channel.close()


def run(cfg: DaemonConfig) -> None:
    tune_malloc()  # chunks of 512 KiB come and go: reuse heap memory (Ceph links tcmalloc)
    asyncio.run(OsdDaemon(cfg).serve())


if __name__ == "__main__":
    main("services.ceph.osd.daemon", run)

"""The OSD daemon: one process per Ceph OSD, its chunks in its own data directory.

Wires the OSD's parts: its chunks on disk (logstore.py, a log of segment files), its own state
(store.py: stopped, slow factor), the device model (device.py) and `clustertwin.v1.CephOsd`
(servicer.py, with health and reflection). It heartbeats to the monitor every `heartbeat_interval`
twin seconds (the twin's clock, so `--clock-scale` shortens it).

A *stopped* OSD (`twin ceph osd stop`) tells the monitor it is going down (marked down at once,
as a clean `systemctl stop ceph-osd@N` does), refuses chunk I/O with UNAVAILABLE and stops
heartbeating; that state is committed to its store, so it stays stopped across a kill -9 and the
supervisor's restart, until `twin ceph osd start`. (The supervisor has no way to
keep one daemon stopped; this is that way.)

    python -m services.ceph.osd.daemon CONFIG.json      # normally forked by the supervisor

DaemonConfig fields read: name ("osd.N"), grpc, store_url, clock_epoch/clock_scale, and
    spec.osd               the OSD id
    spec.host              its Ceph host ("ceph03")
    spec.device_class      "hdd" or "ssd" (device.py)
    spec.capacity_bytes    nominal capacity
    spec.data_dir          where its chunks live
    spec.mon               HOST:PORT of the monitor's CephMon service
    spec.heartbeat_interval  twin seconds between heartbeats (default 6, Ceph's osd_heartbeat_interval)
    spec.storage_timing    "model" (default: chunk I/O takes the device model's time) or "fast"
    spec.msgr              HOST:PORT of its messenger (chunk I/O over TCP, services/ceph/msgr_server.py), if any
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import grpc

from clustertwin.v1 import ceph_pb2 as pb
from clustertwin.v1 import ceph_pb2_grpc as pb_grpc
from emulator.daemon import main, stop_event
from emulator.daemon_config import DaemonConfig
from emulator.grpc_server import start_server
from services.ceph import msgr_server
from services.ceph.daemon_spec import OsdSpec
from services.ceph.events import EventLog
from services.ceph.memtune import tune_malloc
from services.ceph.osd.device import model_for
from services.ceph.osd.logstore import LogChunkStore
from services.ceph.osd.servicer import OsdServicer
from services.ceph.osd.store import OsdStore

log = logging.getLogger("ceph_osd")

SERVICE_NAME = "clustertwin.v1.CephOsd"
DEFAULT_HEARTBEAT_S = 6.0
MAX_MESSAGE = 64 << 20


class OsdDaemon:
    def __init__(self, cfg: DaemonConfig) -> None:
        self.cfg = cfg
        x = OsdSpec.of(cfg)
        self.osd = x.osd
        self.host = x.host
        self.model = model_for(x.device_class)
        self.timing = x.storage_timing
        self.device_wait = 0.0   # wall seconds slept for the device model (Stat's device_wait_seconds)
        self.capacity = x.capacity_bytes
        self.chunks = LogChunkStore(Path(x.data_dir))
        self.state = OsdStore(cfg.store_url, cfg.name)
        self.stopped, self.slow_factor = self.state.load()
        self.mon = x.mon
        self.msgr = x.msgr
        self.interval = x.heartbeat_interval
        self.clock = cfg.clock
        self.boot_time = self.clock.now()
        self.device_lock = asyncio.Lock()
        self.ops = 0
        self.wake = asyncio.Event()
        self.beating = asyncio.Lock()   # one heartbeat in flight: the monitor sees them in the order sent
        self.events = EventLog()

    def event(self, kind: str, message: str, **fields: object) -> None:
        self.events.add(kind, self.clock.now(), message, osd=self.osd, host=self.host, **fields)

    def set_slow(self, factor: float) -> None:
        self.state.save(self.stopped, factor)
        self.slow_factor = factor
        log.warning("osd.%d: slow disk factor %g", self.osd, factor)
        self.event("osd_slow", f"osd.{self.osd}: slow disk factor {factor:g}")

    def stat(self) -> pb.CephOsdStat:
        m = self.model
        return pb.CephOsdStat(osd=self.osd, host=self.host, state="stopped" if self.stopped else "running",
                          used_bytes=self.chunks.used_bytes(), chunks=len(self.chunks), capacity_bytes=self.capacity,
                          slow_factor=self.slow_factor, ops=self.ops, data_dir=str(self.chunks.root),
                          storage_timing=self.timing, device_wait_seconds=self.device_wait,
                          model=pb.CephDeviceModel(device_class=m.device_class, latency_s=m.latency_s,
                                               bandwidth_bytes_s=m.bandwidth_bytes_s))

    async def _beat(self, stopping: bool = False) -> None:
        """One heartbeat, after any still in flight. A beat sent before a stop and answered after the
        stopping one would mark the stopped OSD up again (the monitor takes a later ping as a boot), so
        the stopping beat waits for it, and a plain beat that waited past a stop is not sent."""
        if not self.mon:
            return
        async with self.beating:
            if self.stopped and not stopping:
                return
            req = pb.CephMonHeartbeatRequest(osd=self.osd, boot_time=self.boot_time,
                                             used_bytes=self.chunks.used_bytes(), stopping=stopping)
            try:
                await self.mon_stub.Heartbeat(req, timeout=max(1.0, self.clock.wall_seconds(self.interval)))
            except grpc.aio.AioRpcError as e:
                log.debug("heartbeat to %s failed: %s", self.mon, e.code())

    async def stop_osd(self) -> None:
        self.state.save(True, self.slow_factor)
        self.stopped = True
        log.warning("osd.%d stopped: refusing I/O, no heartbeats, until `twin ceph osd start %d`", self.osd, self.osd)
        self.event("osd_stop", f"osd.{self.osd} stopped")
        await self._beat(stopping=True)

    async def start_osd(self) -> None:
        self.state.save(False, self.slow_factor)
        self.stopped = False
        log.info("osd.%d started again", self.osd)
        self.event("osd_start", f"osd.{self.osd} started")
        self.wake.set()

    async def heartbeat_loop(self) -> None:
        while True:
            if not self.stopped:
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
        servicer = OsdServicer(self)
        server, health = await start_server(self.cfg.grpc, [(pb_grpc.add_CephOsdServicer_to_server,
                                                             servicer, SERVICE_NAME)],
                                            options=opts)
        messengers = await msgr_server.serve(self.msgr, servicer) if self.msgr else []
        hb = asyncio.create_task(self.heartbeat_loop(), name="heartbeat")
        log.info("osd.%d (%s, %s, %s timing) serving on %s (messenger %s), %d chunks in %s%s", self.osd, self.host,
                 self.model.device_class, self.timing, self.cfg.grpc, self.msgr, len(self.chunks), self.chunks.root,
                 " (STOPPED)" if self.stopped else "")
        await stop.wait()
        hb.cancel()
        for m in messengers:
            m.close()
        await health.enter_graceful_shutdown()
        await server.stop(grace=1.0)
        if self.channel is not None:
            await self.channel.close()
        self.state.close()


def run(cfg: DaemonConfig) -> None:
    tune_malloc()  # chunks of 512 KiB come and go: reuse heap memory (Ceph links tcmalloc)
    asyncio.run(OsdDaemon(cfg).serve())


if __name__ == "__main__":
    main("services.ceph.osd.daemon", run)

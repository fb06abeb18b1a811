"""The MDS daemon (MGS + MDS on MDT0000): gRPC `clustertwin.v1.LustreMds` on the twin's server skeleton
(emulator/daemon.py, through services/lustre/server.py: grpc.aio, health, reflection).

    python -m services.lustre.mds.daemon CONFIG.json      # normally forked by the supervisor

DaemonConfig fields read:
    name, grpc, store_url       the store holds the MDT (shared by an HA pair, as its disk is)
    spec.fsname              the filesystem name
    spec.mdt                 {"index", "capacity_bytes"}
    spec.osts                [{"index", "oss", "capacity_bytes"}]
    spec.ost_servers         {"<ost index>": ["HOST:PORT of its OSS", "HOST:PORT of the partner"?]}
    spec.lock_file           the MDT's multiple-mount protection: the MDS that holds this flock is
                                active, the other one (mds_ha) waits as standby and takes over when
                                the active one dies (the kernel drops a dead process's flock)
    spec.statfs_interval    seconds between OST statfs polls (default 1.0)
    spec.admin              a second address for the same server: the host's OOB (management) one,
                                `grpc` being its storage-network address

A standby's health says NOT_SERVING for `clustertwin.v1.LustreMds` (the process itself SERVING) until
it holds the MDT. Like the MDS's OSP devices, the active one polls every OSS for its OSTs' space (what
`lfs df` shows and what the allocator weighs), marks the OSTs of an unreachable OSS inactive, and
destroys the objects of removed files on their OSTs.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import threading
import time
from pathlib import Path

import grpc

from clustertwin.v1 import lustre_pb2 as pb
from clustertwin.v1 import lustre_pb2_grpc as pb_grpc
from emulator.daemon import main
from emulator.daemon_config import DaemonConfig
from services.lustre.daemon_spec import MdsSpec
from services.lustre.events import EventPublisher
from services.lustre.layout import StripeObject
from services.lustre.mds import ldlm
from services.lustre.mds.namespace import DurableNamespace
from services.lustre.mds.servicer import MdsServicer, inode_time
from services.lustre.ost import MdtState, OstState
from services.lustre.server import LustreDaemon
from services.lustre.wire import CHANNEL_OPTIONS, MDS_FRAMED_OFFSET

log = logging.getLogger("lustre.mds")

SERVICE_NAME = "clustertwin.v1.LustreMds"
OST_CONNECT_S = 10.0   # how long a new active MDS waits for its OSTs to answer before it serves


def ost_changes(fsname: str, idx: int, o: OstState, was_active: bool, was_full: bool) -> list[tuple[str, str, dict]]:
    """The events one OST's new state makes (kind, message, fields)."""
    name = f"{fsname}-OST{idx:04x}"
    out: list[tuple[str, str, dict]] = []
    if was_active and not o.active:
        out.append(("ost_inactive", f"{name}: no OSS serves it (its I/O blocks, then EIO)", {"ost": idx}))
    elif o.active and not was_active:
        out.append(("ost_active", f"{name} is served by {o.oss} again", {"ost": idx, "oss": o.oss}))
    if o.full and not was_full:
        out.append(("ost_full", f"{name} is full: new files avoid it", {"ost": idx}))
    elif was_full and not o.full:
        out.append(("ost_full_clear", f"{name} has room again", {"ost": idx}))
    return out


class MdsDaemon(LustreDaemon):
    def __init__(self, cfg: DaemonConfig) -> None:
        super().__init__(cfg)
        self.name = cfg.name
        spec = MdsSpec.of(cfg)
        self.fsname = spec.fsname
        self.ns: DurableNamespace | None = None
        self.destroy_queue: asyncio.Queue[list[StripeObject]] = asyncio.Queue()
        self.ost_servers: dict[int, list[str]] = dict(spec.ost_servers)
        self.stubs: dict[str, pb_grpc.LustreOssStub] = {}
        self.interval = spec.statfs_interval
        self.lock_fd: int | None = None
        self.events = EventPublisher(cfg.twin, cfg.name, cfg.broker_host, cfg.broker_port, cfg.clock.now)

    def stub(self, address: str) -> pb_grpc.LustreOssStub:
        if address not in self.stubs:
            self.stubs[address] = pb_grpc.LustreOssStub(grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS))
        return self.stubs[address]

    async def lock_mdt(self, lock_file: str) -> None:
        """Hold the MDT's lock, waiting while the other MDS of the pair holds it; a wait ends in a failover.

        The wait is a blocking flock in a thread of its own: the kernel hands the lock over the moment its
        holder dies, before the supervisor can restart that one (a polling standby lost that race)."""
        Path(lock_file).parent.mkdir(parents=True, exist_ok=True)
        fd = self.lock_fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = Path(lock_file).read_text().split()[0]
            except (OSError, IndexError):
                holder = "?"
            loop, locked = asyncio.get_running_loop(), asyncio.Event()

            def wait() -> None:   # a daemon thread: a standby that stops leaves it blocked, and exits
                fcntl.flock(fd, fcntl.LOCK_EX)
                with contextlib.suppress(RuntimeError):   # the loop closed meanwhile: the daemon stopped
                    loop.call_soon_threadsafe(locked.set)

            threading.Thread(target=wait, daemon=True, name="mdt-lock").start()
            await locked.wait()
            self.events.publish("mds_failover", f"{self.name} took over {self.fsname}-MDT0000 from {holder}",
                                mdt=0, to=self.name, **{"from": holder})
        os.ftruncate(fd, 0)
        os.write(fd, f"{self.name} {os.getpid()}\n".encode())

    async def take_over(self) -> None:
        """Become active: hold the MDT (blocks while the other MDS of the pair is active), then serve it."""
        spec = MdsSpec.of(self.cfg)
        if spec.lock_file:
            await self.lock_mdt(spec.lock_file)
        osts = [OstState(o.index, o.oss, o.capacity_bytes) for o in spec.osts]
        mdt = MdtState(spec.mdt.index, spec.mdt.capacity_bytes)
        ns = await asyncio.to_thread(DurableNamespace, self.cfg.store_url, self.fsname, osts, mdt, inode_time())
        await self.connect_osts(ns)
        self.ns = ns
        await self.set_serving(True)
        log.info("%s active for %s-MDT%04x (%d inodes)", self.name, self.fsname, mdt.index, ns.inode_count())

    async def _statfs(self, address: str) -> list[pb.LustreTargetState]:
        try:
            return list((await self.stub(address).Statfs(pb.LustreOssStatfsRequest(), timeout=1.0)).osts)
        except grpc.aio.AioRpcError:
            return []

    async def connect_osts(self, ns: DurableNamespace) -> None:
        """A new active MDS connects to its OSTs before it serves (as its OSP devices do at mount): it waits
        until every OST answers, OST_CONNECT_S at most (an OSS without a partner may stay away), so that
        its first creates do not find every OST inactive while the OSSs are still starting."""
        deadline = time.monotonic() + OST_CONNECT_S
        while len(seen := await self.statfs_all()) < len(self.ost_servers) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        await asyncio.to_thread(self._apply_statfs, ns, seen)

    async def statfs_all(self) -> dict[int, pb.LustreTargetState]:
        """Each OST's state from the OSS serving it (those that answer)."""
        addresses = sorted({a for addrs in self.ost_servers.values() for a in addrs})
        return {t.index: t for reply in await asyncio.gather(*map(self._statfs, addresses)) for t in reply}

    async def poll(self, ns: DurableNamespace) -> None:
        """statfs every OSS, as the MDS's OSP devices do; OSTs nobody serves become inactive."""
        seen = await self.statfs_all()
        for kind, message, fields in await asyncio.to_thread(self._apply_statfs, ns, seen):
            self.events.publish(kind, message, **fields)

    def _apply_statfs(self, ns: DurableNamespace, seen: dict[int, pb.LustreTargetState]) -> list:
        events = []
        with ns.lock:
            for idx, o in ns.ns.osts.items():
                t = seen.get(idx)
                was_active, was_full = o.active, o.full
                if t is None:
                    o.active = False
                else:
                    o.active, o.degraded, o.readonly = t.active, t.degraded, t.readonly
                    o.capacity_bytes, o.used_bytes, o.inodes_used = t.capacity_bytes, t.used_bytes, t.inodes_used
                    o.oss = t.server or o.oss
                if self.ns is not None:   # the first poll of a new active MDS: states, not changes
                    events += ost_changes(self.fsname, idx, o, was_active, was_full)
        return events

    def destroy(self, objects: list[StripeObject]) -> None:
        if objects:
            self.destroy_queue.put_nowait(objects)

    async def destroyer(self) -> None:
        while True:
            for o in await self.destroy_queue.get():
                for addr in self.ost_servers.get(o.ost, []):
                    try:
                        ref = pb.LustreObjectRef(ost=o.ost, objid=o.objid, seq=o.seq)
                        await self.stub(addr).Destroy(pb.LustreOssDestroyRequest(obj=ref), timeout=5.0)
                        break
                    except grpc.aio.AioRpcError as e:
                        log.warning("destroy of object %d on OST%04x via %s failed: %s", o.objid, o.ost, addr,
                                    e.code())

    async def poller(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            if self.ns is not None:
                await self.poll(self.ns)

    async def start(self) -> None:
        servicer = ldlm.attach(MdsServicer(self), ldlm.LockManager())   # the clients' cache locks
        await self.start_service(pb_grpc.add_LustreMdsServicer_to_server, servicer, SERVICE_NAME,
                                 serving=False, framed_offset=MDS_FRAMED_OFFSET)
        for work in (self.take_over(), self.poller(), self.destroyer()):
            self.background(work, work.__name__)
        log.info("%s serving %s on %s", self.name, SERVICE_NAME, self.cfg.grpc)

    async def close(self) -> None:
        await self.close_framed()
        if self.ns is not None:
            self.ns.close()
        self.events.close()


run = MdsDaemon.run


if __name__ == "__main__":
    main("services.lustre.mds.daemon", run)

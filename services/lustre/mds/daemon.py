"""The MDS daemon (MGS + MDS on MDT0000): gRPC `clustertwin.v1.LustreMds`, with health and reflection.

    python -m services.lustre.mds.daemon CONFIG.json      # normally forked by the supervisor

DaemonConfig fields read:
    name, grpc, store_url       the store holds the MDT (shared by an HA pair, as its disk is)
    spec["fsname"]              the filesystem name
    spec["mdt"]                 {"index", "capacity_bytes"}
    spec["osts"]                [{"index", "oss", "capacity_bytes"}]
    spec["ost_servers"]         {"<ost index>": ["HOST:PORT of its OSS", "HOST:PORT of the partner"?]}
    spec["lock_file"]           the MDT's multiple-mount protection: the MDS that holds this flock is
                                active, the other one (mds_ha) waits as standby and takes over when
                                the active one dies (the kernel drops a dead process's flock)
    extra["statfs_interval"]    seconds between OST statfs polls (default 1.0)
    extra["admin"]              a second address for the same server: the host's OOB (management) one,
                                `grpc` being its storage-network address

Like the MDS's OSP devices, it polls every OSS for its OSTs' space (what `lfs df` shows and what the
allocator weighs), marks the OSTs of an unreachable OSS inactive, and destroys the objects of
removed files on their OSTs.
"""

from __future__ import annotations

import fcntl
import logging
import os
import queue
import signal
import sys
import threading
import time
from concurrent import futures
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from clustertwin.v1 import lustre_pb2 as pb
from clustertwin.v1 import lustre_pb2_grpc as pb_grpc
from emulator.daemon_config import DaemonConfig
from services.lustre import find as lfind
from services.lustre.errors import LustreError
from services.lustre.events import EventPublisher
from services.lustre.layout import StripeObject
from services.lustre.mds.namespace import DurableNamespace
from services.lustre.namespace import Cred, Inode
from services.lustre.ost import MdtState, OstState, target_name
from services.lustre.wire import CHANNEL_OPTIONS, abort, layout_to_pb, spec_from_pb, spec_to_pb

log = logging.getLogger("lustre.mds")

SERVICE_NAME = "clustertwin.v1.LustreMds"

# Inode times (atime, mtime, ctime: what stat shows through the FUSE client) are the machine's real
# time, not the twin clock: under --clock-scale twin times lie in the future for every program that
# compares them with the time it reads itself (make, find -newer, rsync, tar's "time stamp in the
# future"), and utimens(UTIME_NOW) means the caller's now. What the twin reports of itself, its events,
# uses the twin clock (cfg.clock).
inode_time = time.time


def cred_of(msg: pb.LustreCred) -> Cred:
    return Cred(msg.uid, msg.gid, tuple(msg.groups))


def attr_of(n: Inode) -> pb.LustreAttr:
    a = pb.LustreAttr(fid=str(n.fid), ino=n.ino, mode=n.st_mode, nlink=n.nlink, uid=n.uid, gid=n.gid, size=n.size,
                      blocks=(n.size + 511) // 512, atime=n.atime, mtime=n.mtime, ctime=n.ctime)
    if n.layout is not None:
        a.layout.CopyFrom(layout_to_pb(n.layout))
        a.has_layout = True
    if n.default_spec is not None:
        a.default_spec.CopyFrom(spec_to_pb(n.default_spec))
        a.has_default = True
    return a


def target_pb(fsname: str, t: OstState | MdtState, kind: str, server: str) -> pb.LustreTargetState:
    return pb.LustreTargetState(uuid=target_name(fsname, kind, t.index), kind=kind, index=t.index, server=server,
                          capacity_bytes=t.capacity_bytes, used_bytes=t.used_bytes, avail_bytes=t.avail_bytes,
                          inodes_total=t.inodes_total, inodes_used=t.inodes_used, active=t.active,
                          degraded=getattr(t, "degraded", False), readonly=getattr(t, "readonly", False),
                          full=getattr(t, "full", False))


class MdsServicer(pb_grpc.LustreMdsServicer):
    def __init__(self, daemon: MdsDaemon) -> None:
        self.d = daemon

    def _ns(self, context: grpc.ServicerContext) -> DurableNamespace:
        ns = self.d.ns
        if ns is None:
            context.abort(grpc.StatusCode.UNAVAILABLE, f"EAGAIN: {self.d.cfg.name} is the standby MDS")
        return ns

    def _call(self, context, fn):  # noqa: ANN001 - servicer plumbing
        try:
            return fn(self._ns(context))
        except LustreError as e:
            abort(context, e)

    def Getattr(self, request, context):  # noqa: N802
        return self._call(context, lambda ns: attr_of(ns.lookup(request.path, cred_of(request.cred))))

    def Getstripe(self, request, context):  # noqa: N802
        return self.Getattr(request, context)

    def Create(self, request, context):  # noqa: N802
        spec = spec_from_pb(request.spec) if request.has_spec else None
        return self._call(context, lambda ns: attr_of(ns.create(
            request.path, inode_time(), request.mode or 0o644, cred_of(request.cred), spec, request.delay_layout,
            request.exclusive)))

    def Mkdir(self, request, context):  # noqa: N802
        spec = spec_from_pb(request.spec) if request.has_spec else None
        return self._call(context, lambda ns: attr_of(ns.mkdir(request.path, inode_time(), request.mode or 0o755,
                                                               cred_of(request.cred), spec)))

    def _removed(self, freed: list[StripeObject]) -> pb.LustreRemovedReply:
        self.d.destroy(freed)
        return pb.LustreRemovedReply(freed=[pb.LustreObject(ost=o.ost, objid=o.objid, seq=o.seq) for o in freed])

    def Unlink(self, request, context):  # noqa: N802
        return self._call(context, lambda ns: self._removed(ns.unlink(request.path, inode_time(),
                                                                      cred_of(request.cred))))

    def Rmdir(self, request, context):  # noqa: N802
        return self._call(context, lambda ns: (ns.rmdir(request.path, inode_time(), cred_of(request.cred)),
                                               pb.LustreRemovedReply())[1])

    def Rename(self, request, context):  # noqa: N802
        return self._call(context, lambda ns: self._removed(ns.rename(request.src, request.dst, inode_time(),
                                                                      cred_of(request.cred))))

    def Readdir(self, request, context):  # noqa: N802
        return self._call(context, lambda ns: pb.LustreReaddirReply(entries=[
            pb.LustreDirEntry(name=name, attr=attr_of(n))
            for name, n in ns.readdir(request.path, cred_of(request.cred))]))

    def Setattr(self, request, context):  # noqa: N802
        r = request
        kw = {k: getattr(r, k) for k in ("mode", "uid", "gid", "size", "atime", "mtime") if r.HasField(k)}
        return self._call(context, lambda ns: attr_of(ns.setattr(r.path, inode_time(), cred_of(r.cred),
                                                                 grow_only=r.grow_only, **kw)))

    def Setstripe(self, request, context):  # noqa: N802
        return self._call(context, lambda ns: attr_of(ns.setstripe(request.path, spec_from_pb(request.spec),
                                                                   inode_time(), cred_of(request.cred))))

    def Statfs(self, request, context):  # noqa: N802
        ns = self._ns(context)
        with ns.lock:
            fs = ns.fsname
            return pb.LustreStatfsReply(fsname=fs, mdts=[target_pb(fs, ns.ns.mdt, "MDT", self.d.cfg.name)],
                                  osts=[target_pb(fs, o, "OST", o.oss) for o in ns.ns.osts.values()])

    def Getxattr(self, request, context):  # noqa: N802
        def get(ns: DurableNamespace) -> pb.LustreXattrReply:
            xs = ns.get_xattrs(request.path, cred_of(request.cred))
            if request.name not in xs:
                raise LustreError("ENODATA", f"{request.path}: no xattr {request.name}")  # type: ignore[arg-type]
            return pb.LustreXattrReply(value=xs[request.name])
        return self._call(context, get)

    def Listxattr(self, request, context):  # noqa: N802
        return self._call(context, lambda ns: pb.LustreXattrReply(names=sorted(ns.get_xattrs(request.path,
                                                                                       cred_of(request.cred)))))

    def Setxattr(self, request, context):  # noqa: N802
        return self._call(context, lambda ns: (ns.set_xattr(request.path, request.name, request.value,
                                                            request.flags, inode_time(), cred_of(request.cred)),
                                               pb.LustreXattrReply())[1])

    def Removexattr(self, request, context):  # noqa: N802
        return self._call(context, lambda ns: (ns.remove_xattr(request.path, request.name, inode_time(),
                                                               cred_of(request.cred)), pb.LustreXattrReply())[1])

    def Find(self, request, context):  # noqa: N802
        def run(ns: DurableNamespace) -> pb.LustreFindReply:
            q = lfind.FindQuery(
                name=request.name or None,
                size=lfind.parse_size_filter(request.size) if request.size else None,
                stripe_count=lfind.parse_count_filter(request.stripe_count) if request.stripe_count else None,
                ost=request.ost if request.ost >= 0 else None, type=request.type or None)
            with ns.lock:
                return pb.LustreFindReply(paths=lfind.find(ns.ns, request.start or "/", q))
        return self._call(context, run)

    def Status(self, request, context):  # noqa: N802
        ns = self.d.ns
        return pb.LustreMdsStatusReply(name=self.d.cfg.name, role="active" if ns else "standby",
                                 fsname=self.d.fsname, inodes=ns.inode_count() if ns else 0)


class MdsDaemon:
    def __init__(self, cfg: DaemonConfig) -> None:
        self.cfg = cfg
        spec = cfg.spec
        self.fsname = spec["fsname"]
        self.ns: DurableNamespace | None = None
        self.stop = threading.Event()
        self.destroy_queue: queue.Queue[list[StripeObject]] = queue.Queue()
        self.ost_servers: dict[int, list[str]] = {int(k): v for k, v in spec["ost_servers"].items()}
        self.channels: dict[str, tuple[grpc.Channel, pb_grpc.LustreOssStub]] = {}
        self.interval = float(cfg.extra.get("statfs_interval", 1.0))
        self.lock_fd: int | None = None
        self.events = EventPublisher(cfg.twin, cfg.name, cfg.broker_host, cfg.broker_port, cfg.clock.now)

    def stub(self, address: str) -> pb_grpc.LustreOssStub:
        if address not in self.channels:
            ch = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
            self.channels[address] = (ch, pb_grpc.LustreOssStub(ch))
        return self.channels[address][1]

    def take_over(self) -> None:
        """Become active: hold the MDT's lock (blocks while the other MDS of the pair holds it)."""
        lock_file = self.cfg.spec.get("lock_file")
        if lock_file:
            Path(lock_file).parent.mkdir(parents=True, exist_ok=True)
            self.lock_fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
            waited, holder = False, "?"
            while not self.stop.is_set():
                try:
                    fcntl.flock(self.lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not waited:
                        try:
                            holder = Path(lock_file).read_text().split()[0]
                        except (OSError, IndexError):
                            pass
                    waited = True
                    time.sleep(0.1)
            if self.stop.is_set():
                return
            if waited:
                self.events.publish("mds_failover", f"{self.cfg.name} took over {self.fsname}-MDT0000 from {holder}",
                                    mdt=0, to=self.cfg.name, **{"from": holder})
            os.ftruncate(self.lock_fd, 0)
            os.write(self.lock_fd, f"{self.cfg.name} {os.getpid()}\n".encode())
        spec = self.cfg.spec
        osts = [OstState(o["index"], o["oss"], o["capacity_bytes"]) for o in spec["osts"]]
        mdt = MdtState(spec["mdt"].get("index", 0), spec["mdt"]["capacity_bytes"])
        ns = DurableNamespace(self.cfg.store_url, self.fsname, osts, mdt, inode_time())
        self.poll(ns)
        self.ns = ns
        log.info("%s active for %s-MDT%04x (%d inodes)", self.cfg.name, self.fsname, mdt.index, ns.inode_count())

    def poll(self, ns: DurableNamespace) -> None:
        """statfs every OSS, as the MDS's OSP devices do; OSTs nobody serves become inactive."""
        seen: dict[int, pb.LustreTargetState] = {}
        for addr in sorted({a for addrs in self.ost_servers.values() for a in addrs}):
            try:
                reply = self.stub(addr).Statfs(pb.LustreOssStatfsRequest(), timeout=1.0)
            except grpc.RpcError:
                continue
            for t in reply.osts:
                seen[t.index] = t
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
                if self.ns is None:
                    continue   # the first poll of a new active MDS: states, not changes
                name = f"{self.fsname}-OST{idx:04x}"
                if was_active and not o.active:
                    events.append(("ost_inactive", f"{name}: no OSS serves it (its I/O blocks, then EIO)",
                                   {"ost": idx}))
                elif o.active and not was_active:
                    events.append(("ost_active", f"{name} is served by {o.oss} again", {"ost": idx, "oss": o.oss}))
                if o.full and not was_full:
                    events.append(("ost_full", f"{name} is full: new files avoid it", {"ost": idx}))
                elif was_full and not o.full:
                    events.append(("ost_full_clear", f"{name} has room again", {"ost": idx}))
        for kind, message, fields in events:
            self.events.publish(kind, message, **fields)

    def destroy(self, objects: list[StripeObject]) -> None:
        if objects:
            self.destroy_queue.put(objects)

    def destroyer(self) -> None:
        while not self.stop.is_set():
            try:
                objects = self.destroy_queue.get(timeout=0.2)
            except queue.Empty:
                continue
            for o in objects:
                for addr in self.ost_servers.get(o.ost, []):
                    try:
                        self.stub(addr).Destroy(pb.LustreObjectRef(ost=o.ost, objid=o.objid, seq=o.seq), timeout=5.0)
                        break
                    except grpc.RpcError as e:
                        log.warning("destroy of object %d on OST%04x via %s failed: %s", o.objid, o.ost, addr,
                                    e.code())

    def poller(self) -> None:
        while not self.stop.wait(self.interval):
            if self.ns is not None:
                self.poll(self.ns)

    def serve(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stop.set())
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), options=CHANNEL_OPTIONS)
        pb_grpc.add_LustreMdsServicer_to_server(MdsServicer(self), server)
        hs = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(hs, server)
        reflection.enable_server_reflection(
            [SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME],
            server)
        server.add_insecure_port(self.cfg.grpc)   # the storage network: clients, the MDS's OSP polls
        admin = self.cfg.extra.get("admin")
        if admin and admin != self.cfg.grpc:
            server.add_insecure_port(admin)   # the management (OOB) interface: health checks, `twin`'s admin calls
        threads = [threading.Thread(target=f, daemon=True, name=f.__name__)
                   for f in (self.take_over, self.poller, self.destroyer)]
        for t in threads:
            t.start()
        server.start()
        hs.set("", health_pb2.HealthCheckResponse.SERVING)
        hs.set(SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)
        log.info("%s serving %s on %s", self.cfg.name, SERVICE_NAME, self.cfg.grpc)
        while not self.stop.wait(0.5):
            pass
        log.info("%s stopping", self.cfg.name)
        hs.enter_graceful_shutdown()
        server.stop(grace=1.0).wait()
        if self.ns is not None:
            self.ns.close()


def run(cfg: DaemonConfig) -> None:
    MdsDaemon(cfg).serve()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m services.lustre.mds.daemon CONFIG.json")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    run(DaemonConfig.from_file(Path(sys.argv[1])))

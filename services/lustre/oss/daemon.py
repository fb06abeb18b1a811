"""The OSS daemon: gRPC `clustertwin.v1.LustreOss`, serving the objects of its OSTs.

    python -m services.lustre.oss.daemon CONFIG.json      # normally forked by the supervisor

DaemonConfig fields read:
    name, grpc
    spec["fsname"]
    spec["osts"]            [{"index", "capacity_bytes", "dir"}]: the OSTs it serves and each one's data
                            directory (the OST's "disk"; its failover partner mounts the same one)
    spec["partner"]         the failover partner OSS (or None) and spec["partner_osts"] its OSTs
    extra["admin"]          a second address for the same server: the host's OOB (management) one, `grpc`
                            (and the bulk port, `grpc` + 1) being its storage-network address
    extra["nvme_scale"]     the NVMe time model (services.lustre.ost.NvmeModel) applied as call
                            duration x this factor: 1.0 as modelled, 0 off. The environment variable
                            TWIN_LUSTRE_NVME_SCALE overrides it (tests and the bench turn it off).

Failover (as Lustre's multiple-mount protection): an OST is served by whichever OSS of the pair
holds the flock on `<OST dir>.lock`. Each OSS takes its own OSTs; it also watches its partner's and
takes one over as soon as nobody holds its lock (the partner died: the kernel drops a dead process's
flock), publishing `oss_failover`. When the owner is back it asks for its OSTs (`<OST dir>.want`,
holding its pid) and the partner hands them back (`oss_failback`). A fault marker
`RUN/lustre/faults/<oss>.down` (`twin lustre fault oss-kill`) keeps a restarted OSS down: it serves
nothing until the marker goes (`oss-start`). Clients see ENODEV/UNAVAILABLE from an OSS that does
not serve an OST and try the other server of the pair (services.lustre.client.core.Target).

Each Read/Write takes at least the time the OST's NVMe model gives for its size and the number
of requests in flight on that OST; the real file I/O time counts towards it.
"""

from __future__ import annotations

import fcntl
import logging
import os
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
from emulator.procutil import pid_alive
from services.lustre.bulk import BulkServer
from services.lustre.errors import LustreError
from services.lustre.events import EventPublisher
from services.lustre.oss.objects import ObjectStore
from services.lustre.wire import CHANNEL_OPTIONS, abort

log = logging.getLogger("lustre.oss")

SERVICE_NAME = "clustertwin.v1.LustreOss"


def nvme_scale(cfg: DaemonConfig) -> float:
    env = os.environ.get("TWIN_LUSTRE_NVME_SCALE")
    return float(env) if env not in (None, "") else float(cfg.extra.get("nvme_scale", 1.0))


class OssServicer(pb_grpc.LustreOssServicer):
    def __init__(self, name: str, stores: dict[int, ObjectStore], scale: float) -> None:
        self.name = name
        self.stores = stores
        self.scale = scale

    def _store(self, ost: int, context: grpc.ServicerContext) -> ObjectStore:
        s = self.stores.get(ost)
        if s is None or not s.served:
            context.abort(grpc.StatusCode.UNAVAILABLE, f"ENODEV: {self.name} does not serve OST{ost:04x}")
        return s

    def _timed(self, store: ObjectStore, op: str, nbytes: int, fn):  # noqa: ANN001
        if self.scale <= 0:
            return fn()
        with store.lock:
            store.inflight[op] += 1
            conc = store.inflight[op]
        start = time.monotonic()
        try:
            return fn()
        finally:
            want = store.state.nvme.transfer_time(nbytes, op, conc) * self.scale
            rest = want - (time.monotonic() - start)
            if rest > 0:
                time.sleep(rest)
            with store.lock:
                store.inflight[op] -= 1

    def Read(self, request, context):  # noqa: N802
        o = request.obj
        s = self._store(o.ost, context)
        data, size = self._timed(s, "read", request.length, lambda: s.read(o.seq, o.objid, request.offset,
                                                                           request.length))
        return pb.LustreReadReply(data=data, object_size=size)

    def Write(self, request, context):  # noqa: N802
        o = request.obj
        s = self._store(o.ost, context)
        try:
            n = self._timed(s, "write", len(request.data),
                            lambda: s.write(o.seq, o.objid, request.offset, request.data, request.sync))
        except LustreError as e:
            abort(context, e)
        except OSError as e:
            context.abort(grpc.StatusCode.UNAVAILABLE, f"EIO: OST{o.ost:04x}: {e}")
        return pb.LustreWriteReply(written=n, object_size=s.size(o.seq, o.objid) or 0)

    def Punch(self, request, context):  # noqa: N802
        o = request.obj
        s = self._store(o.ost, context)
        try:
            s.punch(o.seq, o.objid, request.size)
        except LustreError as e:
            abort(context, e)
        return pb.LustreObjectReply(object_size=request.size, exists=True)

    def Destroy(self, request, context):  # noqa: N802
        s = self._store(request.ost, context)
        return pb.LustreObjectReply(exists=s.destroy(request.seq, request.objid))

    def Sync(self, request, context):  # noqa: N802
        s = self._store(request.ost, context)
        s.sync(request.seq, request.objid)
        size = s.size(request.seq, request.objid)
        return pb.LustreObjectReply(object_size=size or 0, exists=size is not None)

    def Getattr(self, request, context):  # noqa: N802
        s = self._store(request.ost, context)
        size = s.size(request.seq, request.objid)
        return pb.LustreObjectReply(object_size=size or 0, exists=size is not None)

    def Statfs(self, request, context):  # noqa: N802
        out = []
        for idx, s in sorted(list(self.stores.items())):
            t = s.state
            with s.lock:
                out.append(pb.LustreTargetState(
                    uuid=f"OST{idx:04x}", kind="OST", index=idx, server=self.name, capacity_bytes=t.capacity_bytes,
                    used_bytes=t.used_bytes, avail_bytes=t.avail_bytes, inodes_total=t.inodes_total,
                    inodes_used=t.inodes_used, active=t.active, degraded=t.degraded, readonly=t.readonly,
                    full=t.full))
        return pb.LustreOssStatfsReply(name=self.name, osts=out)

    def SetOstState(self, request, context):  # noqa: N802
        s = self._store(request.ost, context)
        with s.lock:
            for f in ("active", "degraded", "readonly", "capacity_bytes"):
                if request.HasField(f):
                    setattr(s.state, f, getattr(request, f))
        log.info("%s: OST%04x now active=%s degraded=%s readonly=%s capacity=%d", self.name, request.ost,
                 s.state.active, s.state.degraded, s.state.readonly, s.state.capacity_bytes)
        return self.Statfs(pb.LustreOssStatfsRequest(), context)


TAKEOVER_GRACE_S = 2.0   # at start-up each OSS first takes its own OSTs; only then a free one is a dead partner's


def fault_marker(data_dir: Path | str, oss: str) -> Path:
    """The file that keeps OSS `oss` down across restarts (`twin lustre fault oss-kill`)."""
    return Path(data_dir) / "faults" / f"{oss}.down"


class OstTarget:
    """One OST this OSS may serve: its lock (held while serving) and, while served, its store."""

    def __init__(self, spec: dict, own: bool) -> None:
        self.index = int(spec["index"])
        self.dir = Path(spec["dir"])
        self.capacity = int(spec["capacity_bytes"])
        self.own = own
        self.lock_path = self.dir.with_name(self.dir.name + ".lock")
        self.want_path = self.dir.with_name(self.dir.name + ".want")
        self.fd: int | None = None

    def try_lock(self) -> bool:
        if self.fd is None:
            self.lock_path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    def unlock(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    def owner_wants_it(self) -> bool:
        """The owner OSS is back and asked for this OST (its pid in the .want file is alive)."""
        try:
            pid = int(self.want_path.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return False
        return pid_alive(pid)


class OssDaemon:
    def __init__(self, cfg: DaemonConfig) -> None:
        self.cfg = cfg
        self.stop = threading.Event()
        spec = cfg.spec
        self.targets = [OstTarget(o, True) for o in spec["osts"]] + \
                       [OstTarget(o, False) for o in spec.get("partner_osts") or []]
        self.partner = spec.get("partner")
        first = self.targets[0].dir if self.targets else Path(".")
        self.data_dir = Path(spec.get("data_dir") or first.parent)
        self.stores: dict[int, ObjectStore] = {}
        self.scale = nvme_scale(cfg)
        self.events = EventPublisher(cfg.twin, cfg.name, cfg.broker_host, cfg.broker_port, cfg.clock.now)
        self.down = False
        self.started = time.monotonic()

    # ---- targets and failover ----------------------------------------------------------------
    def _served_store(self, ost: int) -> ObjectStore | None:
        s = self.stores.get(ost)
        return s if s is not None and s.served else None

    def _serve(self, t: OstTarget) -> None:
        st = ObjectStore(t.index, t.dir, t.capacity, self.cfg.name)
        st.served = True
        self.stores[t.index] = st

    def _drop(self, t: OstTarget) -> None:
        st = self.stores.pop(t.index, None)
        if st is not None:
            st.served = False
        t.unlock()

    def manage(self) -> None:
        """Take, keep, hand over and take back OSTs (every 0.1 s)."""
        while not self.stop.is_set():
            try:
                self._manage_once()
            except Exception:  # noqa: BLE001 - keep managing
                log.exception("%s: target manager", self.cfg.name)
            self.stop.wait(0.1)

    def _manage_once(self) -> None:
        name, partner = self.cfg.name, self.partner
        marked = fault_marker(self.data_dir, name).exists()
        if marked and not self.down:
            self.down = True
            for t in self.targets:
                self._drop(t)
                if t.own:
                    t.want_path.unlink(missing_ok=True)
            self.events.publish("oss_down", f"{name} is down (fault): it serves no OST", oss=name)
        elif not marked and self.down:
            self.down = False
            self.events.publish("oss_up", f"{name} is up again", oss=name)
        if self.down:
            return
        for t in self.targets:
            served = t.index in self.stores
            if t.own and not served:
                if t.try_lock():
                    self._serve(t)
                    t.want_path.unlink(missing_ok=True)
                    log.info("%s serving its OST%04x", name, t.index)
                else:   # the partner has it (it took over while we were down): ask for it back
                    if not t.want_path.exists():
                        t.want_path.write_text(f"{os.getpid()} {name}\n")
            elif not t.own and served and t.owner_wants_it():
                self._drop(t)
                self.events.publish("oss_failback", f"OST{t.index:04x} goes back from {name} to {partner}",
                                    ost=t.index, **{"from": name, "to": partner})
            elif not t.own and not served and not t.owner_wants_it() \
                    and time.monotonic() - self.started > TAKEOVER_GRACE_S:
                if t.try_lock():   # nobody holds it: its OSS died
                    self._serve(t)
                    self.events.publish("oss_failover", f"{name} took over OST{t.index:04x} from {partner}",
                                        ost=t.index, **{"from": partner, "to": name})

    def serve(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stop.set())
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), options=CHANNEL_OPTIONS)
        servicer = OssServicer(self.cfg.name, self.stores, self.scale)
        pb_grpc.add_LustreOssServicer_to_server(servicer, server)
        if fault_marker(self.data_dir, self.cfg.name).exists():
            self.down = True   # restarted while a fault keeps it down
            self.events.publish("oss_down", f"{self.cfg.name} is down (fault): it serves no OST", oss=self.cfg.name)
        else:
            self._manage_once()   # take our own OSTs before answering anyone
        threading.Thread(target=self.manage, daemon=True, name="targets").start()
        hs = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(hs, server)
        reflection.enable_server_reflection(
            [SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME],
            server)
        server.add_insecure_port(self.cfg.grpc)   # the storage network: clients, the MDS's OSP polls
        admin = self.cfg.extra.get("admin")
        if admin and admin != self.cfg.grpc:
            server.add_insecure_port(admin)   # the management (OOB) interface: health checks, `twin`'s admin calls
        server.start()
        bulk = None
        try:
            bulk = BulkServer(self.cfg.grpc, self._served_store, lambda st, n, fn: servicer._timed(st, "read", n, fn))
            bulk.start()
        except OSError as e:   # clients fall back to reads over gRPC
            log.warning("%s: no bulk port next to %s: %s", self.cfg.name, self.cfg.grpc, e)
        hs.set("", health_pb2.HealthCheckResponse.SERVING)
        hs.set(SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)
        log.info("%s serving OSTs %s on %s (NVMe model x%.3g; partner %s)", self.cfg.name,
                 ", ".join(f"OST{i:04x}" for i in self.stores), self.cfg.grpc, self.scale, self.partner)
        while not self.stop.wait(0.5):
            pass
        hs.enter_graceful_shutdown()
        if bulk is not None:
            bulk.close()
        server.stop(grace=1.0).wait()
        for t in self.targets:
            self._drop(t)
        self.events.close()


def run(cfg: DaemonConfig) -> None:
    OssDaemon(cfg).serve()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m services.lustre.oss.daemon CONFIG.json")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    run(DaemonConfig.from_file(Path(sys.argv[1])))

"""The OSS daemon: gRPC `clustertwin.v1.LustreOss`, serving the objects of its OSTs.

    python -m services.lustre.oss.daemon CONFIG.json      # normally forked by the supervisor

DaemonConfig fields read:
    name, grpc
    spec["fsname"]
    spec["osts"]            [{"index", "capacity_bytes", "dir"}]: the OSTs it serves and each one's data
                            directory (the OST's "disk"; a failover partner would mount the same one)
    extra["nvme_scale"]     the NVMe time model (services.lustre.ost.NvmeModel) applied as call
                            duration x this factor: 1.0 as modelled, 0 off. The environment variable
                            TWIN_LUSTRE_NVME_SCALE overrides it (tests and the bench turn it off).

Each Read/Write takes at least the time the OST's NVMe model gives for its size and the number
of requests in flight on that OST; the real file I/O time counts towards it.
"""

from __future__ import annotations

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
from services.lustre.errors import LustreError
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
        if s is None:
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
        for idx, s in sorted(self.stores.items()):
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


class OssDaemon:
    def __init__(self, cfg: DaemonConfig) -> None:
        self.cfg = cfg
        self.stop = threading.Event()
        self.stores = {o["index"]: ObjectStore(o["index"], Path(o["dir"]), int(o["capacity_bytes"]), cfg.name)
                       for o in cfg.spec["osts"]}
        self.scale = nvme_scale(cfg)

    def serve(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stop.set())
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), options=CHANNEL_OPTIONS)
        pb_grpc.add_LustreOssServicer_to_server(OssServicer(self.cfg.name, self.stores, self.scale), server)
        hs = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(hs, server)
        reflection.enable_server_reflection(
            [SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME],
            server)
        server.add_insecure_port(self.cfg.grpc)
        server.start()
        hs.set("", health_pb2.HealthCheckResponse.SERVING)
        hs.set(SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)
        log.info("%s serving OSTs %s on %s (NVMe model x%.3g)", self.cfg.name,
                 ", ".join(f"OST{i:04x}" for i in self.stores), self.cfg.grpc, self.scale)
        while not self.stop.wait(0.5):
            pass
        hs.enter_graceful_shutdown()
        server.stop(grace=1.0).wait()


def run(cfg: DaemonConfig) -> None:
    OssDaemon(cfg).serve()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m services.lustre.oss.daemon CONFIG.json")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    run(DaemonConfig.from_file(Path(sys.argv[1])))

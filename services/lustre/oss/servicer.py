"""`clustertwin.v1.LustreOss` on grpc.aio: object I/O on the OSTs this OSS serves now, their space, and
the OSS's faults. Each call runs its blocking part (object files, the NVMe model's wait, the store) in
a worker thread (services.lustre.wire.answer); refusals are LustreErrors, mapped in errors.py. An OST
this OSS does not serve (now) is ENODEV: the client tries the partner.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from clustertwin.v1 import lustre_pb2 as pb
from clustertwin.v1 import lustre_pb2_grpc as pb_grpc
from services.lustre.errors import LustreError
from services.lustre.oss.faults import OssFault
from services.lustre.oss.objects import ObjectStore
from services.lustre.wire import answer


class OssState(Protocol):
    """What the servicer needs of the OSS daemon."""

    name: str
    scale: float

    def served(self, ost: int) -> ObjectStore | None: ...
    def stores_now(self) -> list[ObjectStore]: ...
    def inject_fault(self, kind: str, ost: int | None) -> OssFault: ...
    def clear_fault(self, fault_id: str) -> OssFault: ...
    def list_faults(self, include_cleared: bool) -> list[OssFault]: ...


def fault_pb(f: OssFault) -> pb.LustreFault:
    return pb.LustreFault(id=f.id, kind=f.kind, oss=f.oss, ost=f.ost, injected_at=f.injected_at, active=f.active,
                          cleared_at=f.cleared_at, effect=f.effect)


def target_state(name: str, s: ObjectStore) -> pb.LustreTargetState:
    t = s.state
    with s.lock:
        return pb.LustreTargetState(
            uuid=f"OST{t.index:04x}", kind="OST", index=t.index, server=name, capacity_bytes=t.capacity_bytes,
            used_bytes=t.used_bytes, avail_bytes=t.avail_bytes, inodes_total=t.inodes_total,
            inodes_used=t.inodes_used, active=t.active, degraded=t.degraded, readonly=t.readonly, full=t.full)


def timed(store: ObjectStore, op: str, nbytes: int, scale: float, fn: Callable[[], Any]) -> Any:
    """fn(), taking at least the time the OST's NVMe model gives for `nbytes` with the requests in flight."""
    if scale <= 0:
        return fn()
    with store.lock:
        store.inflight[op] += 1
        conc = store.inflight[op]
    start = time.monotonic()
    try:
        return fn()
    finally:
        rest = store.state.nvme.transfer_time(nbytes, op, conc) * scale - (time.monotonic() - start)
        if rest > 0:
            time.sleep(rest)
        with store.lock:
            store.inflight[op] -= 1


class OssServicer(pb_grpc.LustreOssServicer):
    def __init__(self, oss: OssState) -> None:
        self.d = oss

    def _store(self, ost: int) -> ObjectStore:
        s = self.d.served(ost)
        if s is None:
            raise LustreError("ENODEV", f"{self.d.name} does not serve OST{ost:04x}")
        return s

    def _read(self, r: pb.LustreReadRequest) -> pb.LustreReadReply:
        s, o = self._store(r.obj.ost), r.obj
        data, size = timed(s, "read", r.length, self.d.scale, lambda: s.read(o.seq, o.objid, r.offset, r.length))
        return pb.LustreReadReply(data=data, object_size=size)

    def _write(self, r: pb.LustreWriteRequest) -> pb.LustreWriteReply:
        s, o = self._store(r.obj.ost), r.obj
        try:
            n = timed(s, "write", len(r.data), self.d.scale, lambda: s.write(o.seq, o.objid, r.offset, r.data, r.sync))
        except OSError as e:
            raise LustreError("EIO", f"OST{o.ost:04x}: {e}") from None
        return pb.LustreWriteReply(written=n, object_size=s.size(o.seq, o.objid) or 0)

    def _object(self, r: pb.LustreObjectRef, op: Callable[[ObjectStore], Any]) -> pb.LustreObjectReply:
        s = self._store(r.ost)
        op(s)
        size = s.size(r.seq, r.objid)
        return pb.LustreObjectReply(object_size=size or 0, exists=size is not None)

    async def Read(self, request, context):  # noqa: N802
        return await answer(context, self._read, request)

    async def Write(self, request, context):  # noqa: N802
        return await answer(context, self._write, request)

    async def Punch(self, request, context):  # noqa: N802
        o = request.obj
        await answer(context, lambda: self._store(o.ost).punch(o.seq, o.objid, request.size))
        return pb.LustreObjectReply(object_size=request.size, exists=True)

    async def Destroy(self, request, context):  # noqa: N802
        r = request
        return pb.LustreObjectReply(exists=await answer(context, lambda: self._store(r.ost).destroy(r.seq, r.objid)))

    async def Sync(self, request, context):  # noqa: N802
        r = request
        return await answer(context, self._object, r, lambda s: s.sync(r.seq, r.objid))

    async def Getattr(self, request, context):  # noqa: N802
        return await answer(context, self._object, request, lambda s: None)

    async def Statfs(self, request, context):  # noqa: N802
        return pb.LustreOssStatfsReply(name=self.d.name, osts=[target_state(self.d.name, s)
                                                               for s in self.d.stores_now()])

    async def SetOstState(self, request, context):  # noqa: N802
        def set_state() -> None:
            s = self._store(request.ost)
            with s.lock:
                for f in ("active", "degraded", "readonly", "capacity_bytes"):
                    if request.HasField(f):
                        setattr(s.state, f, getattr(request, f))
        await answer(context, set_state)
        return await self.Statfs(pb.LustreOssStatfsRequest(), context)

    async def InjectFault(self, request, context):  # noqa: N802
        ost = request.ost if request.HasField("ost") else None
        return pb.LustreInjectFaultResponse(fault=fault_pb(await answer(context, self.d.inject_fault, request.kind,
                                                                        ost)))

    async def ClearFault(self, request, context):  # noqa: N802
        return pb.LustreClearFaultResponse(fault=fault_pb(await answer(context, self.d.clear_fault, request.id)))

    def _faults_page(self, r: pb.LustreListFaultsRequest) -> pb.LustreListFaultsResponse:
        """One page: the token is the index of its first fault, in the order they were injected."""
        if r.page_token and not r.page_token.isdigit():
            raise LustreError("EINVAL", f"page_token {r.page_token!r} is not one ListFaults gave")
        faults = self.d.list_faults(r.include_cleared)
        start = int(r.page_token or 0)
        end = start + r.page_size if r.page_size > 0 else len(faults)
        return pb.LustreListFaultsResponse(faults=[fault_pb(f) for f in faults[start:end]],
                                           next_page_token=str(end) if end < len(faults) else "")

    async def ListFaults(self, request, context):  # noqa: N802
        return await answer(context, self._faults_page, request)

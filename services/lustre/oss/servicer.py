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
from services.lustre.events import EventPublisher
from services.lustre.oss.faults import OssFault
from services.lustre.oss.objects import ObjectStore
from services.lustre.wire import answer, page_of, watch


class OssState(Protocol):
    """What the servicer needs of the OSS daemon."""

    name: str
    scale: float
    events: EventPublisher

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

    def _read(self, r: pb.LustreOssReadRequest) -> pb.LustreOssReadResponse:
        s, o = self._store(r.obj.ost), r.obj
        data, size = timed(s, "read", r.length, self.d.scale, lambda: s.read(o.seq, o.objid, r.offset, r.length))
        return pb.LustreOssReadResponse(data=data, object_size=size)

    def _write(self, r: pb.LustreOssWriteRequest) -> pb.LustreOssWriteResponse:
        s, o = self._store(r.obj.ost), r.obj
        try:
            n = timed(s, "write", len(r.data), self.d.scale, lambda: s.write(o.seq, o.objid, r.offset, r.data, r.sync))
        except OSError as e:
            raise LustreError("EIO", f"OST{o.ost:04x}: {e}") from None
        return pb.LustreOssWriteResponse(written=n, object_size=s.size(o.seq, o.objid) or 0)

    def _object(self, r: pb.LustreObjectRef, op: Callable[[ObjectStore], Any]) -> int | None:
        """op on the object's OST, then the object's size (None: no such object)."""
        s = self._store(r.ost)
        op(s)
        return s.size(r.seq, r.objid)

    async def Read(self, request, context):  # noqa: N802
        return await answer(context, self._read, request)

    async def Write(self, request, context):  # noqa: N802
        return await answer(context, self._write, request)

    async def Punch(self, request, context):  # noqa: N802
        o = request.obj
        await answer(context, lambda: self._store(o.ost).punch(o.seq, o.objid, request.size))
        return pb.LustreOssPunchResponse(object_size=request.size, exists=True)

    async def Destroy(self, request, context):  # noqa: N802
        r = request.obj
        return pb.LustreOssDestroyResponse(exists=await answer(context,
                                                               lambda: self._store(r.ost).destroy(r.seq, r.objid)))

    async def Sync(self, request, context):  # noqa: N802
        r = request.obj
        size = await answer(context, self._object, r, lambda s: s.sync(r.seq, r.objid))
        return pb.LustreOssSyncResponse(object_size=size or 0, exists=size is not None)

    async def Getattr(self, request, context):  # noqa: N802
        size = await answer(context, self._object, request.obj, lambda s: None)
        return pb.LustreOssGetattrResponse(object_size=size or 0, exists=size is not None)

    def _targets(self) -> list[pb.LustreTargetState]:
        return [target_state(self.d.name, s) for s in self.d.stores_now()]

    async def Statfs(self, request, context):  # noqa: N802
        return pb.LustreOssStatfsResponse(name=self.d.name, osts=self._targets())

    async def SetOstState(self, request, context):  # noqa: N802
        def set_state() -> None:
            s = self._store(request.ost)
            with s.lock:
                for f in ("active", "degraded", "readonly", "capacity_bytes"):
                    if request.HasField(f):
                        setattr(s.state, f, getattr(request, f))
        await answer(context, set_state)
        return pb.LustreOssSetOstStateResponse(name=self.d.name, osts=self._targets())

    async def InjectFault(self, request, context):  # noqa: N802
        ost = request.ost if request.HasField("ost") else None
        return pb.LustreOssInjectFaultResponse(fault=fault_pb(await answer(context, self.d.inject_fault, request.kind,
                                                                        ost)))

    async def ClearFault(self, request, context):  # noqa: N802
        return pb.LustreOssClearFaultResponse(fault=fault_pb(await answer(context, self.d.clear_fault, request.id)))

    def _faults_page(self, r: pb.LustreOssListFaultsRequest) -> pb.LustreOssListFaultsResponse:
        """One page (emulator/paging.py), in the order the faults were injected: the key is the number
        that ends a fault's id, so a fault cleared between two pages moves no other across the boundary."""
        def number(f: OssFault) -> int:
            return int(f.id.rsplit("-", 1)[1])
        faults = sorted(self.d.list_faults(r.include_cleared), key=number)
        got, token = page_of("ListFaults", faults, r.page_size, r.page_token, key=number)
        return pb.LustreOssListFaultsResponse(faults=[fault_pb(f) for f in got], next_page_token=token)

    async def ListFaults(self, request, context):  # noqa: N802
        return await answer(context, self._faults_page, request)

    async def WatchEvents(self, request, context):  # noqa: N802
        async for ev in watch(self.d.events, request.since_seq):
            yield pb.LustreOssWatchEventsResponse(event=ev)

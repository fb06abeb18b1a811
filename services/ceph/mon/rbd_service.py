"""`clustertwin.v1.CephRbd` on the monitor: the RBD model (services/ceph/rbd) over the monitor's
own Cluster, so image objects go through the same PGs, OSD daemons and faults as RGW's.

Block I/O on a PG that is not active waits, as a librbd client blocks, up to `op_timeout` twin
seconds (the twin's clock), then fails UNAVAILABLE naming the PG and its state.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol, TypeVar

import grpc

from clustertwin.v1 import ceph_pb2 as pb
from clustertwin.v1 import ceph_pb2_grpc as pb_grpc
from emulator import paging
from emulator.errors import DaemonError
from services.ceph.errors import CephError, PgUnavailable
from services.ceph.events import EventLog
from services.ceph.rbd.cluster_io import ClusterObjectIo
from services.ceph.rbd.image import Rbd

T = TypeVar("T")
MAX_IO = 32 << 20
DEFAULT_POOL = "rbd"
RETRY_S = 0.05


class ObjectHost(Protocol):
    """What RBD needs of the monitor (services/ceph/mon/objects.py's ObjectIo): the cluster map, object
    I/O, its clock and its lock. Named here so that this module does not import what serves it."""

    cluster: Any
    clock: Any

    def put_object(self, pool: str, name: str, data: bytes) -> str: ...
    def get_object(self, pool: str, name: str) -> tuple[bytes, str]: ...
    def remove_object(self, pool: str, name: str) -> bool: ...
    def put_objects(self, pool: str, items: list[tuple[str, bytes]]) -> None: ...
    def get_objects(self, pool: str, names: list[str]) -> dict[str, bytes]: ...
    def locked(self, fn: Callable[[], T]) -> T: ...


def make_rbd(d: ObjectHost) -> Rbd:
    io = ClusterObjectIo(d.cluster, put=d.put_object, get=lambda pool, name: d.get_object(pool, name)[0],
                         remove=d.remove_object, put_many=d.put_objects, get_many=d.get_objects)
    return Rbd(io, now=d.clock.now)


def _at_most_max_io(n: int, call: str) -> None:
    if n > MAX_IO:
        raise CephError("INVALID_ARGUMENT", f"at most {MAX_IO} bytes per {call} call")


def image_msg(info: dict[str, Any]) -> pb.CephRbdImage:
    par = info["parent"]
    return pb.CephRbdImage(name=info["name"], id=info["id"], pool=info["pool"], size=info["size"], order=info["order"],
                       objects=info["objects"], snapshot_count=info["snapshot_count"], features=info["features"],
                       created=info["created"], modified=info["modified"],
                       parent=pb.CephRbdParent(pool=par["pool"], image=par["image"], snap=par["snap"],
                                           overlap=par["overlap"]) if par else None)


def snap_msg(s: dict[str, Any]) -> pb.CephRbdSnap:
    return pb.CephRbdSnap(id=s["id"], name=s["name"], size=s["size"], protected=s["protected"],
                          timestamp=s["timestamp"], children=[f"{p}/{i}" for p, i in s["children"]])


class RbdServicer(pb_grpc.CephRbdServicer):
    def __init__(self, d: ObjectHost, op_timeout: float = 30.0) -> None:
        self.d = d
        self.rbd = make_rbd(d)
        self.op_timeout = op_timeout
        self.events = EventLog()

    async def _run(self, context: grpc.aio.ServicerContext, fn: Callable[[], T], wait: bool = False) -> T:
        deadline = time.monotonic() + self.d.clock.wall_seconds(self.op_timeout)
        while True:
            try:
                return await asyncio.to_thread(self.d.locked, fn)
            except DaemonError as e:   # a CephError, or paging's bad page_token
                if isinstance(e, PgUnavailable) and wait and time.monotonic() < deadline:
                    await asyncio.sleep(RETRY_S)
                    continue
                await e.abort(context)
            raise AssertionError("unreachable")

    @staticmethod
    def _pool(p: str) -> str:
        return p or DEFAULT_POOL

    def _notify(self, pool: str, image: str, what: str) -> None:
        """A header change, as librbd notifies the image's watchers (`rbd watch`)."""
        self.events.add("header_update", self.d.clock.now(), f"{pool}/{image}: {what}", pool=pool, image=image)

    async def _change(self, context: grpc.aio.ServicerContext, pool: str, image: str, what: str,
                      fn: Callable[[], T]) -> T:
        out = await self._run(context, fn, wait=True)
        self._notify(pool, image, what)
        return out

    async def Create(self, request, context):  # noqa: ANN001, ANN201, N802
        r, pool = self.rbd, self._pool(request.pool)

        def go() -> dict[str, Any]:
            r.create(pool, request.name, request.size, request.order or 22)
            return r.info(pool, request.name)
        return pb.CephRbdCreateResponse(image=image_msg(await self._change(context, pool, request.name, "create", go)))

    async def List(self, request, context):  # noqa: ANN001, ANN201, N802
        names = await self._run(context, lambda: self.rbd.list(self._pool(request.pool)))
        page, token = await self._run(context, lambda: paging.page("List", names, request.page_size,
                                                                   request.page_token))   # by position
        return pb.CephRbdListResponse(names=page, next_page_token=token)

    async def Info(self, request, context):  # noqa: ANN001, ANN201, N802
        info = await self._run(context, lambda: self.rbd.info(self._pool(request.pool), request.name))
        return pb.CephRbdInfoResponse(image=image_msg(info))

    async def Resize(self, request, context):  # noqa: ANN001, ANN201, N802
        r, pool = self.rbd, self._pool(request.pool)

        def go() -> dict[str, Any]:
            r.resize(pool, request.name, request.size, request.allow_shrink)
            return r.info(pool, request.name)
        return pb.CephRbdResizeResponse(image=image_msg(await self._change(context, pool, request.name, "resize", go)))

    async def Remove(self, request, context):  # noqa: ANN001, ANN201, N802
        pool = self._pool(request.pool)
        await self._change(context, pool, request.name, "remove", lambda: self.rbd.remove(pool, request.name))
        return pb.CephRbdRemoveResponse()

    async def _snap(self, context: grpc.aio.ServicerContext, request: Any, verb: str,
                    fn: Callable[[str, str, str], dict[str, Any]]) -> pb.CephRbdSnap:
        """`rbd snap create|protect|unprotect` (request: pool, image, snap): the snapshot after it."""
        pool = self._pool(request.pool)
        s = await self._change(context, pool, request.image, f"snap {verb} {request.snap}",
                               lambda: fn(pool, request.image, request.snap))
        return snap_msg(s)

    async def SnapCreate(self, request, context):  # noqa: ANN001, ANN201, N802
        return pb.CephRbdSnapCreateResponse(snap=await self._snap(context, request, "create", self.rbd.snap_create))

    async def SnapList(self, request, context):  # noqa: ANN001, ANN201, N802
        snaps = await self._run(context, lambda: self.rbd.snap_list(self._pool(request.pool), request.name))
        return pb.CephRbdSnapListResponse(snaps=[snap_msg(s) for s in snaps])

    async def SnapRollback(self, request, context):  # noqa: ANN001, ANN201, N802
        r, pool = self.rbd, self._pool(request.pool)

        def go() -> dict[str, Any]:
            r.snap_rollback(pool, request.image, request.snap)
            return r.info(pool, request.image)
        info = await self._change(context, pool, request.image, f"snap rollback {request.snap}", go)
        return pb.CephRbdSnapRollbackResponse(image=image_msg(info))

    async def SnapRemove(self, request, context):  # noqa: ANN001, ANN201, N802
        r, pool = self.rbd, self._pool(request.pool)

        def go() -> list[dict[str, Any]]:
            r.snap_remove(pool, request.image, request.snap)
            return r.snap_list(pool, request.image)
        snaps = await self._change(context, pool, request.image, f"snap rm {request.snap}", go)
        return pb.CephRbdSnapRemoveResponse(snaps=[snap_msg(s) for s in snaps])

    async def SnapProtect(self, request, context):  # noqa: ANN001, ANN201, N802
        return pb.CephRbdSnapProtectResponse(snap=await self._snap(context, request, "protect", self.rbd.snap_protect))

    async def SnapUnprotect(self, request, context):  # noqa: ANN001, ANN201, N802
        snap = await self._snap(context, request, "unprotect", self.rbd.snap_unprotect)
        return pb.CephRbdSnapUnprotectResponse(snap=snap)

    async def Clone(self, request, context):  # noqa: ANN001, ANN201, N802
        r, pool = self.rbd, self._pool(request.pool)

        def go() -> dict[str, Any]:
            r.clone(self._pool(request.parent_pool), request.parent, request.snap, pool, request.name)
            return r.info(pool, request.name)
        return pb.CephRbdCloneResponse(image=image_msg(await self._change(context, pool, request.name, "clone", go)))

    async def Write(self, request, context):  # noqa: ANN001, ANN201, N802
        await self._run(context, lambda: _at_most_max_io(len(request.data), "Write"))
        n = await self._run(context, lambda: self.rbd.write(self._pool(request.pool), request.name, request.offset,
                                                            request.data), wait=True)
        return pb.CephRbdWriteResponse(bytes=n)

    async def Read(self, request, context):  # noqa: ANN001, ANN201, N802
        await self._run(context, lambda: _at_most_max_io(request.length, "Read"))
        data = await self._run(context, lambda: self.rbd.read(self._pool(request.pool), request.name, request.offset,
                                                              request.length, request.snap), wait=True)
        return pb.CephRbdReadResponse(data=data)

    async def WatchEvents(self, request: pb.CephRbdWatchEventsRequest,  # noqa: N802
                          context: grpc.aio.ServicerContext) -> AsyncIterator[pb.CephRbdWatchEventsResponse]:
        """`rbd watch`: header changes of one image (pool and image set), of a pool's, or of all."""
        pool = request.pool

        def wanted(ev: dict[str, Any]) -> bool:
            return (not pool or ev["pool"] == pool) and (not request.image or ev["image"] == request.image)
        async for ev in self.events.watch(request.since_seq, wanted):
            yield pb.CephRbdWatchEventsResponse(event=ev)

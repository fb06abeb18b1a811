"""The CephMon gRPC service (grpc.aio): a thin adapter over `MonModel` and the monitor's object I/O.

Each RPC runs its model work in a worker thread under the model's lock (`ObjectIo.locked`), commits
what it changed to the store before it replies, then has the daemon publish the events the model
queued. A `CephError` aborts the call with its own status (`CephError.grpc_status`), nothing else.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from clustertwin.v1 import ceph_pb2 as pb
from clustertwin.v1 import ceph_pb2_grpc as pb_grpc
from emulator import paging
from services.ceph.errors import CephError, ceph_call
from services.ceph.events import EventLog
from services.ceph.health import health
from services.ceph.mon import convert
from services.ceph.mon.model import Event, MonModel
from services.ceph.mon.objects import ObjectIo
from services.ceph.mon.store import MonStore
from services.ceph.pool import PgId
from services.ceph.remote_chunkstore import RemoteChunkStore

Handler = Callable[[Any, Any, grpc.aio.ServicerContext], Awaitable[Any]]


async def _inline(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


def _rpc(where: str) -> Callable[[Callable[..., Any]], Handler]:
    """`fn(self, request) -> reply` as a handler: in a thread under the lock ("locked"; the events the
    model queued are taken there and published after), in a thread that takes the lock itself while
    it touches the model ("thread"), or on the event loop ("loop")."""

    def wrap(fn: Callable[..., Any]) -> Handler:
        @functools.wraps(fn)
        async def handler(self: MonServicer, request: Any, context: grpc.aio.ServicerContext) -> Any:
            if where == "locked":
                reply, events = await ceph_call(context, asyncio.to_thread(
                    self.io.locked, lambda: (fn(self, request), self.model.take_events())))
                self.publish(events)
                return reply
            call = asyncio.to_thread(fn, self, request) if where == "thread" else _inline(fn, self, request)
            return await ceph_call(context, call)

        return handler

    return wrap


class MonServicer(pb_grpc.CephMonServicer):
    def __init__(self, model: MonModel, io: ObjectIo, store: MonStore, chunks: RemoteChunkStore,
                 addresses: dict[int, str], now: Callable[[], float], publish: Callable[[list[Event]], None],
                 events: EventLog) -> None:
        self.model, self.io, self.store, self.chunks = model, io, store, chunks
        self.addresses, self.now, self.publish, self.events = addresses, now, publish, events

    @property
    def cluster(self) -> Any:
        return self.model.cluster

    @_rpc("loop")
    def Heartbeat(self, request):  # noqa: ANN001, ANN201, N802
        up, in_, epoch = self.model.heartbeat(request.osd, request.stopping, self.now())
        self.chunks.note_used(request.osd, request.used_bytes)
        return pb.CephMonHeartbeatResponse(up=up, epoch=epoch, **{"in": in_})

    # -- RADOS object I/O ----------------------------------------------------------------------

    @_rpc("thread")
    def PutObject(self, request):  # noqa: ANN001, ANN201, N802
        pg = self.io.put_concurrent(request.pool, request.name, request.data)
        return pb.CephMonPutObjectResponse(pg=pg, placement=self.io.placement(request.pool, request.name))

    @_rpc("locked")
    def PutObjects(self, request):  # noqa: ANN001, ANN201, N802
        return pb.CephMonPutObjectsResponse(results=self.io.put_each(list(request.objects)))

    @_rpc("thread")
    def GetObject(self, request):  # noqa: ANN001, ANN201, N802
        data, pgid = self.io.get_concurrent(request.pool, request.name)
        return pb.CephMonGetObjectResponse(data=data, pg=pgid, placement=self.io.placement(request.pool, request.name))

    @_rpc("locked")
    def RemoveObject(self, request):  # noqa: ANN001, ANN201, N802
        return pb.CephMonRemoveObjectResponse(existed=self.io.remove_object(request.pool, request.name))

    @_rpc("locked")
    def WritePlan(self, request):  # noqa: ANN001, ANN201, N802
        return self.io.write_plan(request.pool, request.name)

    @_rpc("locked")
    def CommitObjects(self, request):  # noqa: ANN001, ANN201, N802
        return pb.CephMonCommitObjectsResponse(results=self.io.commit_objects(list(request.objects)))

    @_rpc("locked")
    def RemoveObjects(self, request):  # noqa: ANN001, ANN201, N802
        failed = self.io.remove_objects(request.pool, list(request.names))
        return pb.CephMonRemoveObjectsResponse(failed=[n for n, _ in failed],
                                               error=failed[0][1].message if failed else "")

    @_rpc("locked")
    def ForgetObjects(self, request):  # noqa: ANN001, ANN201, N802
        return self.io.forget_objects(request.pool, list(request.names))

    @_rpc("locked")
    def ListObjects(self, request):  # noqa: ANN001, ANN201, N802
        objects, token = paging.page("ListObjects", convert.objects(self.cluster, request.pool, request.prefix),
                                     request.page_size, request.page_token)   # by position in name order
        return pb.CephMonListObjectsResponse(objects=objects, next_page_token=token)

    # -- the cluster -----------------------------------------------------------------------------

    @_rpc("locked")
    def Status(self, request):  # noqa: ANN001, ANN201, N802
        return convert.status(self.cluster, self.now())

    @_rpc("locked")
    def HealthDetail(self, request):  # noqa: ANN001, ANN201, N802
        h = health(self.cluster)
        return pb.CephMonHealthDetailResponse(health=h.status, checks=convert.checks(h))

    @_rpc("locked")
    def Df(self, request):  # noqa: ANN001, ANN201, N802
        return pb.CephMonDfResponse(pools=convert.pools(self.cluster))

    @_rpc("locked")
    def OsdTree(self, request):  # noqa: ANN001, ANN201, N802
        used = {o: self.chunks.used_bytes(o) for o in self.addresses}
        return convert.osd_tree(self.cluster, self.addresses, used)

    @_rpc("locked")
    def OsdCommand(self, request):  # noqa: ANN001, ANN201, N802
        message = self.model.osd_command(request.osd, request.command, self.now())
        self.store.save_map(self.cluster)
        return pb.CephMonOsdCommandResponse(message=message, epoch=self.cluster.monitor.epoch)

    @_rpc("locked")
    def Pools(self, request):  # noqa: ANN001, ANN201, N802
        return pb.CephMonPoolsResponse(pools=convert.pools(self.cluster))

    @_rpc("locked")
    def Pgs(self, request):  # noqa: ANN001, ANN201, N802
        c = self.cluster
        if request.object:
            if not request.pool:
                raise CephError("INVALID_ARGUMENT", "an object needs its pool")
            chosen = [c.locate(request.pool, request.object)]
        elif request.pg:
            chosen = [c._pg(PgId.parse(request.pg))]
        else:
            pid = c.pool(request.pool).id if request.pool else None
            chosen = [pg for pgid, pg in sorted(c.pgs.items()) if pid is None or pgid.pool == pid]
        return pb.CephMonPgsResponse(pgs=convert.pgs(c, chosen))

    @_rpc("locked")
    def Scrub(self, request):  # noqa: ANN001, ANN201, N802
        errors, repaired, n = self.io.scrub(request.pg, request.repair)
        found = [pb.CephScrubError(pg=str(e.pgid), object=e.object, shard=e.shard, osd=e.osd, problem=e.problem)
                 for e in errors]
        return pb.CephMonScrubResponse(errors=found, repaired=repaired, pgs=n)

    @_rpc("locked")
    def CorruptChunk(self, request):  # noqa: ANN001, ANN201, N802
        osd = request.osd if request.HasField("osd") else -1   # unset: the OSD of shard 0
        pg, shard, osd = self.io.corrupt(request.pool, request.object, osd, request.offset)
        return pb.CephMonCorruptChunkResponse(pg=pg, shard=shard, osd=osd)

    # -- RGW users and the fault log -------------------------------------------------------------

    @_rpc("locked")
    def UserCreate(self, request):  # noqa: ANN001, ANN201, N802
        u = request.user
        user = self.model.user_create(u.uid, u.display_name, email=u.email, tenant=u.tenant,
                                      access_key=u.access_key, secret_key=u.secret_key)
        self.store.save_user(user)
        return pb.CephMonUserCreateResponse(user=convert.user(user))

    @_rpc("locked")
    def UserList(self, request):  # noqa: ANN001, ANN201, N802
        return pb.CephMonUserListResponse(users=[convert.user(u) for u in self.model.list_users()])

    @_rpc("locked")
    def RecordFault(self, request):  # noqa: ANN001, ANN201, N802
        f = self.model.record_fault(convert.fault_in(request.fault), self.now())
        self.store.save_fault(f)
        return pb.CephMonRecordFaultResponse(fault=convert.fault(f))

    @_rpc("locked")
    def ClearFault(self, request):  # noqa: ANN001, ANN201, N802
        f = self.model.clear_fault(request.id, self.now())
        self.store.save_fault(f)
        return pb.CephMonClearFaultResponse(fault=convert.fault(f))

    @_rpc("locked")
    def ListFaults(self, request):  # noqa: ANN001, ANN201, N802
        faults, token = paging.page("ListFaults", self.model.list_faults(request.include_cleared), request.page_size,
                                    request.page_token)   # by position in the log's order
        return pb.CephMonListFaultsResponse(faults=[convert.fault(f) for f in faults], next_page_token=token)

    async def WatchEvents(self, request: pb.CephMonWatchEventsRequest,  # noqa: N802
                          context: grpc.aio.ServicerContext) -> AsyncIterator[pb.CephMonWatchEventsResponse]:
        async for ev in self.events.watch(request.since_seq):
            yield pb.CephMonWatchEventsResponse(event=ev)
